"""A built snapshot as a Hugging Face dataset repository or BEIR folders.

Exports: a built snapshot as a Hugging Face dataset repository or as BEIR folders.

``huggingface``, ``beir``, and ``target`` (what an export may replace in its output folder).
"""
