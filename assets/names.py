"""The one rule for every user string that becomes part of a path.

Snapshot ids, dataset and split names, index names and the names configured in ``params.yaml`` or a
Dagster run config all end up in file or folder names (``snapshots/<id>/``,
``datasets/<dataset>-<split>-kilt.jsonl``, ``reports/<id>/...``). Each must be a plain file name, so no
value can name a path outside its folder or another artifact's file: 1-100 letters, digits, ``_``, ``.``
or ``-``, starting with a letter or digit, without ``..``. Every entry point (the CLI, ``params.yaml``,
run config, the landing sensor, the writers themselves) checks with :func:`check_name`.

Pure module: no Dagster import.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}"
"""Letters, digits, ``_``, ``.`` and ``-``; starting with a letter or digit; at most 100 characters."""
_VALID = re.compile(NAME_PATTERN)


class InvalidName(ValueError):
    """A user string that is not a plain, short file name (``rule``: what the message says of it)."""

    def __init__(self, message: str, rule: str = "") -> None:
        super().__init__(message)
        self.rule = rule


def check_name(value: object, *, what: str = "name", example: str = "nq-dev") -> str:
    """``value`` when it matches :data:`NAME_PATTERN` and holds no ``..``, else :class:`InvalidName`
    naming ``what``, the value and the rule."""
    if not isinstance(value, str) or not _VALID.fullmatch(value) or ".." in value:
        rule = (
            "is not valid: use 1-100 letters, digits, '_', '.' or '-', starting with a letter or digit, "
            f"without '..' (e.g. {example})"
        )
        raise InvalidName(f"{what} {value!r} {rule}", rule)
    return value


def is_name(value: object) -> bool:
    """Whether :func:`check_name` accepts ``value``."""
    return isinstance(value, str) and bool(_VALID.fullmatch(value)) and ".." not in value


def _checked(value: str) -> str:
    return check_name(value)


Name = Annotated[str, AfterValidator(_checked)]
"""A pydantic field type holding a :func:`check_name`-valid string (params.yaml, run config, API models)."""
