"""The Dagster assets, checks and run configs of each domain, a module each.

They import downward only: ``wikipedia``, ``wikidata``, ``datasets``, ``indexes``, ``qa``,
``collection_indexes``, ``exports`` (assembled by :mod:`orchestration.definitions`); ``common`` is what they
share of Dagster.
"""
