"""DuckDB connections held to a memory limit, and SQL literals of strings and paths."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DUCKDB_MEMORY_ENV = "KILT_DUCKDB_MEMORY"
DUCKDB_MEMORY = "1GB"
"""What one DuckDB connection may hold (``$KILT_DUCKDB_MEMORY``): a build's spills to disk past it, a
reader's buffer pool evicts past it (the default, 80 % of RAM, filled with a 12 GB store's blocks at 1M
articles)."""


def duckdb_memory_limit() -> str:
    """``$KILT_DUCKDB_MEMORY``, else :data:`DUCKDB_MEMORY`."""
    return os.environ.get(DUCKDB_MEMORY_ENV) or DUCKDB_MEMORY


_SIZE_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
               "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}  # fmt: skip


def memory_bytes(size: str) -> int:
    """Bytes of a DuckDB memory size such as ``1GB`` or ``512MiB`` (KB, MB, GB are powers of 1000; KiB,
    MiB, GiB of 1024; a bare number is bytes)."""
    text = str(size).strip().lower().replace(" ", "")
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(number) :] or "b"
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if value <= 0 or unit not in _SIZE_UNITS:
        raise ValueError(f"{size!r} is not a memory size like 1GB or 512MiB")
    return int(value * _SIZE_UNITS[unit])


def spilling_duckdb(database: str | os.PathLike[str], spill_dir: str | os.PathLike[str]) -> Any:
    """A DuckDB connection to ``database`` (``:memory:`` for none) held to ``$KILT_DUCKDB_MEMORY``
    (default :data:`DUCKDB_MEMORY`), spilling past it into ``spill_dir``: a build's joins, sorts and
    index builds take the same memory whatever the snapshot's size."""
    import duckdb

    con = duckdb.connect(str(database))
    con.execute("SET preserve_insertion_order = true")
    con.execute(f"SET memory_limit = {sql_literal(duckdb_memory_limit())}")
    con.execute(f"SET temp_directory = {sql_literal(spill_dir)}")
    return con


def sql_literal(value: str | os.PathLike[str]) -> str:
    """A string or path (or glob) as a quoted DuckDB string literal."""
    return "'" + str(value).replace("'", "''") + "'"


def sql_list(values: list[Path]) -> str:
    """Paths as a DuckDB list literal (for ``read_parquet([...])``)."""
    return "[" + ", ".join(sql_literal(v) for v in values) + "]"
