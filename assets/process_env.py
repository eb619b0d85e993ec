"""Environment variables set for a block of code and restored after it. Pure module: no project import."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping


def _apply(values: Mapping[str, str | None]) -> None:
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@contextlib.contextmanager
def environment(values: Mapping[str, str | None]) -> Iterator[None]:
    """Set each variable of ``values`` (``None``: unset it) for the block; restore every one after it."""
    saved = {key: os.environ.get(key) for key in values}
    _apply(values)
    try:
        yield
    finally:
        _apply(saved)
