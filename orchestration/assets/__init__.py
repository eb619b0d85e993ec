"""The Dagster assets, checks and run configs of each domain, a module each.

They import downward only: ``wikipedia``, ``wikidata``, ``datasets``, ``indexes``, ``qa``,
``collection_indexes``, ``exports`` (assembled by :mod:`orchestration.definitions`); ``common`` is what they
share of Dagster.
"""

from orchestration.assets.collection_indexes import COLLECTION_INDEX_ASSETS, COLLECTION_INDEX_CHECKS
from orchestration.assets.datasets import DATASET_ASSETS, DATASET_CHECKS
from orchestration.assets.exports import EXPORT_ASSETS, OPTIONAL_ASSETS
from orchestration.assets.indexes import INDEX_ASSETS, INDEX_CHECKS
from orchestration.assets.qa import QA_ASSETS, QA_CHECKS
from orchestration.assets.wikidata import WIKIDATA_ASSETS, WIKIDATA_CHECKS
from orchestration.assets.wikipedia import WIKIPEDIA_ASSETS, WIKIPEDIA_CHECKS

__all__ = [
    "COLLECTION_INDEX_ASSETS",
    "COLLECTION_INDEX_CHECKS",
    "DATASET_ASSETS",
    "DATASET_CHECKS",
    "EXPORT_ASSETS",
    "INDEX_ASSETS",
    "INDEX_CHECKS",
    "OPTIONAL_ASSETS",
    "QA_ASSETS",
    "QA_CHECKS",
    "WIKIDATA_ASSETS",
    "WIKIDATA_CHECKS",
    "WIKIPEDIA_ASSETS",
    "WIKIPEDIA_CHECKS",
]
