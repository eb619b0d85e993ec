"""Dataset formats, one module each, collected in one registry.

Built in: :mod:`.kilt`, :mod:`.nq_open`, :mod:`.fever`, :mod:`.fever_qrels`, :mod:`.mkqa`, :mod:`.triviaqa`,
:mod:`.hotpotqa`. A new format is one module that calls :func:`register`, listed below.
"""

from assets.datasets.formats import fever, fever_qrels, hotpotqa, kilt, mkqa, nq_open, triviaqa
from assets.datasets.formats.registry import (
    DatasetFormat,
    ReadOptions,
    described,
    formats,
    get_format,
    register,
    unregister,
)

BUILT_IN = (kilt, nq_open, fever, fever_qrels, mkqa, triviaqa, hotpotqa)

__all__ = [
    "BUILT_IN",
    "DatasetFormat",
    "ReadOptions",
    "described",
    "formats",
    "get_format",
    "register",
    "unregister",
]
