"""The real public data the tests and benchmarks read: ``tests/data/`` (origins and licences in
``tests/data/SOURCES.md``).

Text files are stored xz-compressed (``name.xz``); files that come compressed (``.bz2``, ``.gz``) are
stored as they are. On first use the whole tree is unpacked into ``tests/data/.unpacked/`` (ignored by
git) under the original names and layout, so a reader sees exactly the files their origins published,
side by side (TriviaQA's questions next to their evidence folder). It is unpacked again when a stored file
changes. A missing file is an error, never a skip: the data ships with the repository.
"""

from __future__ import annotations

import functools
import hashlib
import lzma
import os
import shutil
import uuid
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "tests" / "data"
UNPACKED = DATA_DIR / ".unpacked"
EXCERPT_NAME = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
"""The embedded default corpus (also what ``kiltpipe fetch-default`` takes from the gensim wheel)."""
_STAMP = ".stamp"


def _stored_files() -> list[Path]:
    def stored(path: Path) -> bool:
        return not path.relative_to(DATA_DIR).parts[0].startswith(".") and path.name != "SOURCES.md"

    return sorted(path for path in DATA_DIR.rglob("*") if path.is_file() and stored(path))


@functools.cache
def unpacked_data() -> Path:
    """``tests/data`` with every stored file unpacked (done once per change of the stored files)."""
    stored = _stored_files()
    if not stored:
        raise FileNotFoundError(f"real test data missing: {DATA_DIR} is empty; restore it with git")
    listing = "\n".join(
        f"{p.relative_to(DATA_DIR)} {p.stat().st_size} {p.stat().st_mtime_ns}" for p in stored
    )
    stamp = hashlib.sha256(listing.encode()).hexdigest()
    if (UNPACKED / _STAMP).is_file() and (UNPACKED / _STAMP).read_text() == stamp:
        return UNPACKED
    temp = DATA_DIR / f".tmp-unpacked-{uuid.uuid4().hex[:12]}"
    try:
        for path in stored:
            relative = path.relative_to(DATA_DIR)
            target = temp / (relative.with_suffix("") if path.suffix == ".xz" else relative)
            target.parent.mkdir(parents=True, exist_ok=True)
            opener = lzma.open if path.suffix == ".xz" else open
            with opener(path, "rb") as source, target.open("wb") as out:
                shutil.copyfileobj(source, out)
        (temp / _STAMP).write_text(stamp)
        retired = DATA_DIR / f".old-unpacked-{uuid.uuid4().hex[:12]}"
        if UNPACKED.exists():
            os.rename(UNPACKED, retired)
        os.rename(temp, UNPACKED)
        shutil.rmtree(retired, ignore_errors=True)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return UNPACKED


def real_file(*parts: str) -> Path:
    """The real file ``tests/data/<parts>`` as its origin published it (``parts`` without ``.xz``)."""
    path = unpacked_data().joinpath(*parts)
    if not path.is_file():
        raise FileNotFoundError(
            f"real test data missing: {path.relative_to(UNPACKED)} is not under {DATA_DIR}; it ships with "
            "the repository (restore it with `git checkout -- tests/data`; add a new file with its origin "
            "in tests/data/SOURCES.md)"
        )
    return path


def excerpt_dump() -> Path:
    """The real enwiki excerpt (206 pages), the embedded default corpus."""
    return real_file("wikipedia", EXCERPT_NAME)
