"""A library of benchmark helpers and a script per figure.

Benchmarks: a library (``common``, ``scale_build``, ``dense_sets``, ``generator/``) and a script per
figure (``bench_*.py``), each printing its ratio against a peer measured in the same run.
"""
