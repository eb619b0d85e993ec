"""The Dagster assets, checks and run configs of each domain, a module each.

The Dagster assets, asset checks and run configs of every domain, one module each, importing downward
only: ``wikipedia``, ``datasets``, ``indexes``, ``structured_indexes``, ``exports`` (assembled by
:mod:`orchestration.definitions`).
"""
