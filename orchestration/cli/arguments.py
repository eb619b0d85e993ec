"""argparse types of the ``kiltpipe`` options: every value is checked where it is parsed, and a bad one is
refused by argparse (exit 2) with the option named, never taken as "unset" or passed on to fail later.

An empty string is never a value: ``--data-dir ''`` or ``--select ''`` would otherwise read as "not given"
and start a full build. :func:`refuse_empty_strings` gives every plain string argument of a parser that rule.
"""

from __future__ import annotations

import argparse
import math
import zipfile
from pathlib import Path

MAX_PORT = 65535


def text(value: str) -> str:
    """A string argument that must not be empty (or only blanks)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value


def positive_int(value: str) -> int:
    """An integer of at least 1."""
    number = _integer(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {number}")
    return number


def non_negative_int(value: str) -> int:
    """An integer of at least 0."""
    number = _integer(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {number}")
    return number


def port(value: str) -> int:
    """A TCP port: 0 (any free port) to 65535."""
    number = _integer(value)
    if not 0 <= number <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"must be a port between 0 and {MAX_PORT}, not {number}")
    return number


def fraction(value: str) -> float:
    """A finite number between 0 and 1."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, not {value!r}") from None
    if not math.isfinite(number) or not 0 <= number <= 1:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, not {value}")
    return number


def positive_int_list(value: str) -> list[int]:
    """Comma-separated integers of at least 1, e.g. ``1,5,10``."""
    pieces = [piece.strip() for piece in value.split(",")]
    if not any(pieces):
        raise argparse.ArgumentTypeError("give comma-separated integers of at least 1, e.g. 1,5,10")
    numbers = []
    for piece in pieces:
        try:
            numbers.append(positive_int(piece))
        except argparse.ArgumentTypeError as error:
            raise argparse.ArgumentTypeError(f"{piece!r} {error}") from None
    return numbers


def wheel_file(value: str) -> str:
    """An existing ``.whl`` file that is a zip archive."""
    path = Path(text(value))
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"no such file: {path.resolve()}")
    if path.suffix != ".whl" or not zipfile.is_zipfile(path):
        raise argparse.ArgumentTypeError(f"{path.resolve()} is not a wheel (a .whl zip archive)")
    return value


def _integer(value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, not {value!r}") from None


def refuse_empty_strings(parser: argparse.ArgumentParser) -> None:
    """Give every argument of ``parser`` (and its sub-commands) that takes a plain string the :func:`text`
    type, so that an empty value is an error naming the option."""
    for action in parser._actions:  # argparse exposes no public walk over its actions
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                refuse_empty_strings(sub)
        elif _takes_a_string(action):
            action.type = text


def _takes_a_string(action: argparse.Action) -> bool:
    takes_value = isinstance(action, (argparse._StoreAction, argparse._AppendAction))
    return takes_value and action.type is None and action.choices is None
