"""The domains as plain Python (no Dagster), over a base of settings and storage.

The base: ``params`` (one typed model of params.yaml), ``limits`` (every bound on outside input),
``storage/`` (a snapshot's paths, builds and their locks, DuckDB, the dump registry, reports),
``languages``, ``provenance_store`` (pages, passages and spans in DuckDB). The domains: ``wikipedia/``,
``datasets/``, ``indexes/``, ``exports/``, ``wikidata/`` and ``qa/``. Above them, ``reading/``: one door
to a built snapshot (its stores, retriever, KB and answerer) and the HTTP server. Their Dagster assets live
in :mod:`orchestration.assets`.
"""
