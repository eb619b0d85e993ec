"""The embedded default corpus: a real enwiki excerpt shipped inside the PyPI gensim 4.4.0 wheel.

It is fetched with ``pip download`` (PyPI is reachable wherever the project installs), read out of
the wheel zip, checked against a pinned sha256 and cached under ``data/``; no Wikipedia text is
committed to the repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from assets.files import atomic_path, sha256_of

GENSIM_REQUIREMENT = "gensim==4.4.0"
MEMBER = "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
FILE_NAME = Path(MEMBER).name
SHA256 = "a53f4648dec40467ebdcbc7a1307eddb51fe6e28e9309f6ebde81ba0d04bea2d"
SNAPSHOT_ID = "enwiki-20160501"  # dbname + date of the newest revision in the excerpt
ORIGIN = (
    "English Wikipedia excerpt (206 pages, revisions 2003-2016, CC BY-SA 3.0) from the PyPI wheel "
    f"{GENSIM_REQUIREMENT}, member {MEMBER}"
)


BGWIKI_MEMBER = "gensim/test/test_data/bgwiki-latest-pages-articles-shortened.xml.bz2"
BGWIKI_SHA256 = "8c67571ec18cb8f0f77a91ab2ee4a04c9368684358e40b94d95670f909210355"
"""A real Bulgarian Wikipedia dump (UTF-16, export 0.10, 2017; 3 pages, 1 article) in the same wheel."""


def embedded_dump_path(data_dir: Path) -> Path:
    return data_dir / "downloads" / FILE_NAME


def ensure_embedded_dump(data_dir: Path, *, wheel: Path | None = None) -> Path:
    """Return the cached excerpt, fetching and verifying it first when needed.

    ``wheel`` reads the member from an already downloaded gensim wheel instead of calling pip;
    ``$KILT_EMBEDDED_DUMP`` names an already obtained copy (tests, offline machines).
    """
    return ensure_wheel_member(
        data_dir, MEMBER, SHA256, wheel=wheel, local_copy=os.environ.get("KILT_EMBEDDED_DUMP")
    )


def ensure_wheel_member(
    data_dir: Path, member: str, sha256: str, *, wheel: Path | None = None, local_copy: str | None = None
) -> Path:
    """``member`` of the gensim wheel, cached as ``<data_dir>/downloads/<its name>`` and checked against
    ``sha256``; the wheel is downloaded with pip when not given (PyPI is reachable wherever the project
    installs)."""
    target = data_dir / "downloads" / Path(member).name
    if target.is_file() and sha256_of(target) == sha256:
        return target
    if local_copy and Path(local_copy).is_file() and sha256_of(Path(local_copy)) == sha256:
        with atomic_path(target) as temp:
            shutil.copyfile(local_copy, temp)
        return target
    with tempfile.TemporaryDirectory() as tmp:
        if wheel is None:
            command = [
                sys.executable,
                "-m",
                "pip",
                "download",
                GENSIM_REQUIREMENT,
                "--no-deps",
                "--only-binary=:all:",
                "--python-version",
                "3.11",
                "--quiet",
                "-d",
                tmp,
            ]
            completed = subprocess.run(command, capture_output=True, text=True, check=False)
            wheels = sorted(Path(tmp).glob("gensim-*.whl"))
            if completed.returncode != 0 or not wheels:
                raise RuntimeError(
                    f"could not download {GENSIM_REQUIREMENT} from PyPI to obtain {Path(member).name}:\n"
                    f"{completed.stderr.strip()}"
                )
            wheel = wheels[0]
        with zipfile.ZipFile(wheel) as archive:
            try:
                info = archive.getinfo(member)
            except KeyError:
                raise RuntimeError(f"{wheel} does not contain {member}") from None
            with atomic_path(target) as temp:
                with archive.open(info) as source, open(temp, "wb") as sink:
                    while block := source.read(1 << 20):
                        sink.write(block)
                actual = sha256_of(temp)
                if actual != sha256:
                    raise RuntimeError(f"{member} from {wheel} has sha256 {actual}, expected {sha256}")
    return target
