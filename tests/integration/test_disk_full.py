"""A full disk, on a real small filesystem (a tmpfs in a mount namespace of the test's own:
``tests/small_disk.py``): each library's "no space" error is one line naming the file; a first build into
20 MB and a ``--force`` rebuild on a nearly full disk end with one line naming the path and the space, no
traceback, their staging folder removed and nothing published (the complete version stays)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from assets.disk_space import disk_full_line
from tests.small_disk import run_on_small_disk

SNAPSHOT = "enwiki-20160501"
UP_TO_STORE = "+key:provenance_store"

WRITERS = r"""
import json, os, sys, traceback
root = sys.argv[1]
disk = os.statvfs(root)
open(os.path.join(root, "filler"), "wb").write(b"0" * (disk.f_bavail * disk.f_frsize - 8192))
said = {}
def attempt(name, write):
    try:
        write(os.path.join(root, name))
    except BaseException as error:  # each library's own exception type
        said[name] = f"{type(error).__module__}.{type(error).__name__}: {error}"
    else:
        said[name] = None
import numpy as np
attempt("python.bin", lambda p: open(p, "wb").write(b"x" * 10**6))
attempt("numpy.bin", lambda p: np.ones(10**6).tofile(p))
import duckdb
def duck(p):
    con = duckdb.connect(p)
    con.execute("CREATE TABLE t AS SELECT range AS i, repeat('x', 100) AS s FROM range(100000)")
    con.close()
attempt("duckdb.duckdb", duck)
import polars as pl
frame = pl.DataFrame({"s": ["x" * 100] * 100000})
attempt("polars.parquet", lambda p: frame.write_parquet(p, compression="uncompressed"))
import pyarrow as pa, pyarrow.parquet as pq
table = pa.table({"s": ["y" * 100] * 100000})
attempt("pyarrow.parquet", lambda p: pq.write_table(table, p, compression="none"))
import faiss
def index(p):
    built = faiss.IndexFlatIP(64)
    built.add(np.ones((20000, 64), dtype="float32"))
    faiss.write_index(built, p)
attempt("faiss.index", index)
json.dump(said, open(sys.argv[2], "w"))
"""


def test_every_library_s_no_space_error_is_one_line_naming_the_file(tmp_path: Path) -> None:
    small = tmp_path / "small"
    said_file = tmp_path / "said.json"
    run = run_on_small_disk(
        small, 4 * 2**20, [sys.executable, "-c", WRITERS, str(small), str(said_file)], env=dict(os.environ)
    )
    assert run.returncode == 0, run.stderr
    said = json.loads(said_file.read_text())
    assert set(said) == {
        "python.bin", "numpy.bin", "duckdb.duckdb", "polars.parquet", "pyarrow.parquet", "faiss.index"
    }  # fmt: skip
    named = {"duckdb.duckdb", "faiss.index"}  # the others' messages name no file: the folder written is said
    for name, message in said.items():
        assert message is not None, f"{name} was written on a full disk"
        line = disk_full_line(message, small)
        assert line is not None, f"{name}: not recognised as a full disk: {message}"
        target = small / name if name in named else small
        assert line.startswith(f"disk full: cannot write {target} (No space left on device; "), line
        assert line.endswith("free there); free space and build again") and "\n" not in line
    assert disk_full_line("ValueError: no such page") is None
    quoted = disk_full_line('IO Error: Could not write file "/x/y.wal\\": No space left on device')
    assert quoted.startswith("disk full: cannot write /x/y.wal (No space left on device; ")


def _build(data: Path, dump: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "orchestration.cli", "build", "--data-dir", str(data), "--dump", str(dump),
        "--quiet", "--select", UP_TO_STORE, *extra,
    ]  # fmt: skip


def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "dagster_home"
    home.mkdir(exist_ok=True)
    return {**os.environ, "DAGSTER_HOME": str(home), "KILT_LANDING_DIR": str(tmp_path / "landing")}


def _failed_in_one_line(stderr: str) -> str:
    assert "Traceback" not in stderr and "Stack Trace" not in stderr, stderr
    [line] = [line for line in stderr.splitlines() if line.startswith("kiltpipe: build failed:")]
    return line


def test_a_first_build_into_a_small_disk_publishes_nothing(tmp_path: Path, excerpt: Path) -> None:
    small = tmp_path / "small"
    data = small / "data"
    run = run_on_small_disk(small, 20 * 2**20, _build(data, excerpt), env=_env(tmp_path))
    assert run.returncode == 2
    line = _failed_in_one_line(run.stderr)
    assert line.startswith("kiltpipe: build failed: disk full: ") and line.endswith("nothing was published")
    assert str(data / "snapshots" / ".staging" / SNAPSHOT) in line and " free " in line
    assert not any(name.startswith(("data/snapshots/", "data/builds/", "data/dumps/")) for name in run.left)
    assert run.used_bytes < 256 * 1024  # the space is given back


def test_a_forced_rebuild_on_a_full_disk_keeps_the_published_version(tmp_path: Path, excerpt: Path) -> None:
    small = tmp_path / "small"
    data = small / "data"
    env = _env(tmp_path)
    first, second = (" ".join(_build(data, excerpt, *extra)) for extra in ((), ("--force",)))
    fill = (
        f"{sys.executable} -c \"import shutil; free = shutil.disk_usage('{small}').free - 2_500_000; "
        f"open('{small}/filler', 'wb').write(b'0' * free)\""
    )
    script = (
        f"{first} > {tmp_path}/out1 2> {tmp_path}/err1 || exit 11; {fill}; "
        f"{second} > {tmp_path}/out2 2> {tmp_path}/err2; echo $? > {tmp_path}/code2"
    )
    run = run_on_small_disk(small, 40 * 2**20, ["sh", "-c", script], env=env)
    assert run.returncode == 0, (tmp_path / "err1").read_text()[-3000:]
    assert (tmp_path / "code2").read_text().strip() == "2"
    line = _failed_in_one_line((tmp_path / "err2").read_text())
    assert "disk full: " in line and str(data / "snapshots") in line and "\\" not in line
    assert not any(name.startswith("data/snapshots/.staging/") for name in run.left)
    assert f"data/snapshots/{SNAPSHOT}/provenance.duckdb" in run.left  # the published version, whole
    record = json.loads((tmp_path / "out1").read_text())  # the first build's summary
    assert record["success"]
