"""Dagster: every domain's assets, the one Definitions, jobs, sensors, the CLI.

``assets/`` (each domain's assets, checks and configs), ``resources`` (the settings resource, snapshot
partitions, IO managers), ``run_config`` (run configs derived from params.yaml's sections), ``jobs``,
``sensors``, ``executors`` (Dask), ``build_guard``, ``launch`` and ``run_launcher`` (runs as the UI records
them; a dead worker fails its run), ``definitions`` (assembles), ``cli/`` (``kiltpipe``),
``architecture`` (the layering contract and the generated pictures), ``dvc_stages`` (dvc.yaml's index
stages from the registries).
"""

from orchestration.interrupts import keep_sigterm_deliverable

keep_sigterm_deliverable()  # before any Dagster code runs here: see orchestration/interrupts.py
