"""A library of benchmark helpers and a script per figure.

The library: ``common``, ``scale_build``, ``dense_sets``, ``structure``'s measures, ``generator/``; the
scripts (``bench_*.py``) each print their ratio against a peer measured in the same run.
"""
