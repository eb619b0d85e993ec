"""The domains as plain Python (no Dagster), over a base of settings and storage.

The pipeline's domains as plain Python (no Dagster): the base (settings, storage, build state) and a
package per domain.

``assets.params`` (one typed model of params.yaml), ``storage`` (a snapshot's paths, staging, the dump
registry), ``build_state`` (the build lock and record), ``provenance_store`` (pages, passages and spans in
DuckDB); ``wikipedia``, ``datasets``, ``indexes`` and ``exports`` are the domains. Their Dagster assets live
in :mod:`orchestration.assets`.
"""
