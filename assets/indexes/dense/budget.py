"""A FAISS factory chosen by a memory budget: ``budget:<size>`` (``budget:500MB``) in place of a factory.

The most exact index whose codes fit: ``Flat`` (4 bytes per dimension), else ``IVF<n>,SQ8`` (a byte per
dimension, and 8 for the id an inverted list stores), else ``PQ<m>`` (``m`` bytes per vector, no ids:
the codes are the whole index; ``m`` the largest divisor of the dimension that fits). The inverted lists
number about ``4 * sqrt(vectors)`` (a power of two), never fewer than 39 training vectors each. A budget
too small for 1-byte codes is an error naming it.

Pure module: no Dagster import.
"""

from __future__ import annotations

import math

__all__ = ["BUDGET_PREFIX", "budget_factory", "factory_bytes"]

BUDGET_PREFIX = "budget:"
IVF_ID_BYTES = 8
MIN_TRAIN_PER_LIST = 39


def _lists(vectors: int) -> int:
    wanted = 1 << max(round(math.log2(max(4 * math.sqrt(vectors), 1))), 0)
    return max(1, min(wanted, vectors // MIN_TRAIN_PER_LIST))


def factory_bytes(factory: str, vectors: int, dimension: int) -> int:
    """The bytes the codes, ids and centroids of ``factory`` take for ``vectors`` of ``dimension``."""
    if factory == "Flat":
        return 4 * dimension * vectors
    if factory.startswith("IVF") and factory.endswith(",SQ8"):
        lists = int(factory[3:].split(",")[0])
        return (dimension + IVF_ID_BYTES) * vectors + 4 * dimension * lists
    if factory.startswith("PQ"):
        m = int(factory[2:].split("x")[0])
        return m * vectors + 4 * dimension * 256
    raise ValueError(f"no size rule for the FAISS factory {factory!r}")


def budget_factory(factory: str, vectors: int, dimension: int) -> str:
    """``factory`` itself, or for ``budget:<size>`` the factory that fits (see the module's docstring)."""
    if not factory.startswith(BUDGET_PREFIX):
        return factory
    from assets.storage import memory_bytes

    budget = memory_bytes(factory[len(BUDGET_PREFIX) :])
    candidates = ["Flat"]
    if vectors >= MIN_TRAIN_PER_LIST:
        candidates.append(f"IVF{_lists(vectors)},SQ8")
    if vectors >= 256:  # PQ's 8-bit codebooks train on 256 vectors at least
        divisors = [m for m in range(dimension, 0, -1) if dimension % m == 0 and m <= 64]
        candidates += [f"PQ{m}" for m in divisors]
    for candidate in candidates:
        if factory_bytes(candidate, vectors, dimension) <= budget:
            return candidate
    raise ValueError(
        f"{factory!r}: {vectors:,} vectors of {dimension} dimensions fit in no FAISS index of that size "
        f"(PQ1 takes {factory_bytes('PQ1', vectors, dimension):,} bytes); raise the budget"
    )
