"""A built snapshot as a Hugging Face dataset repository or BEIR folders.

``huggingface``, ``beir``, and ``target`` (what an export may replace in its output folder).
"""

from assets.exports.beir import BEIR_COLLECTIONS, export_beir
from assets.exports.huggingface import DEFAULT_MAX_SHARD_BYTES, export_huggingface, push_to_hub

__all__ = [
    "BEIR_COLLECTIONS",
    "DEFAULT_MAX_SHARD_BYTES",
    "export_beir",
    "export_huggingface",
    "push_to_hub",
]
