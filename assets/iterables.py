"""Small helpers over iterables, shared by every stage. Pure module."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TypeVar

T = TypeVar("T")


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of ``size`` consecutive items (the last shorter): ``itertools.batched`` of Python 3.12."""
    if size < 1:
        raise ValueError(f"batch size must be >= 1, got {size}")
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
