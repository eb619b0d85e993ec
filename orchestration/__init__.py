"""Dagster: every domain's assets, the one Definitions, jobs, sensors, the CLI.

Dagster: the assets of every domain, the one ``Definitions``, the jobs, the sensors and the CLI.

``assets/`` (each domain's assets, checks and configs), ``resources`` (the settings resource, snapshot
partitions, IO managers), ``jobs``, ``sensors``, ``executors`` (Dask), ``build_guard``, ``definitions``
(assembles), ``cli/`` (``kiltpipe``), ``architecture`` (the layering contract and the generated pictures).
"""
