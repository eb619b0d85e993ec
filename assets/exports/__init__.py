"""A built snapshot as a Hugging Face dataset repository or BEIR folders.

``huggingface``, ``beir``, and ``target`` (what an export may replace in its output folder).
"""
