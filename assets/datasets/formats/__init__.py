"""Dataset formats, one module each, collected in one registry.

Built in: :mod:`.kilt`, :mod:`.nq_open`, :mod:`.fever`, :mod:`.fever_qrels`, :mod:`.mkqa`, :mod:`.triviaqa`,
:mod:`.hotpotqa`, :mod:`.mintaka`. A new format is one module that calls :func:`register`, listed below.
"""

from assets.datasets.formats import fever, fever_qrels, hotpotqa, kilt, mintaka, mkqa, nq_open, triviaqa
from assets.datasets.formats.fever import fever_title
from assets.datasets.formats.fever_qrels import read_fever_qrels
from assets.datasets.formats.kilt import KILT_DATASETS, KILT_SPLITS, TRIVIAQA_MISSING_INPUT
from assets.datasets.formats.nq_open import answer_field
from assets.datasets.formats.registry import (
    DEFAULT_READ,
    TRIVIAQA_EVIDENCE_CHARS,
    DatasetFormat,
    ReadOptions,
    described,
    formats,
    get_format,
    register,
    unregister,
)
from assets.datasets.formats.triviaqa import TriviaQAMergeResult, merge_triviaqa_ids

BUILT_IN = (kilt, nq_open, fever, fever_qrels, mkqa, triviaqa, hotpotqa, mintaka)

__all__ = [
    "BUILT_IN",
    "DEFAULT_READ",
    "KILT_DATASETS",
    "KILT_SPLITS",
    "TRIVIAQA_EVIDENCE_CHARS",
    "TRIVIAQA_MISSING_INPUT",
    "DatasetFormat",
    "ReadOptions",
    "TriviaQAMergeResult",
    "answer_field",
    "described",
    "fever_title",
    "formats",
    "get_format",
    "merge_triviaqa_ids",
    "read_fever_qrels",
    "register",
    "unregister",
]
