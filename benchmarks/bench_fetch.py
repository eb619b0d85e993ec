"""``kiltpipe fetch`` over a dropping network (issue 37): the bytes a resumed download costs, and its
throughput against ``curl`` on the same file from the same server, measured in this run.

A dump site on 127.0.0.1 (``support/dump_site.py``, in a process of its own) serves one run whose
articles file is ``--size-mb`` of random bytes (incompressible, as a bz2 dump is). Measured:

- ``curl -o`` of the file (the peer; and ``curl`` then ``sha1sum``, what a user runs to verify it), and our
  fetch of it without faults (download and sha1 verification, which ours does while the bytes arrive):
  seconds and MB/s, best of ``--repeat``; the ratios;
- our fetch with the connection cut at 50 %, 90 % and 99 % of the file: the bytes sent by the server
  for the file over its size (target: at most 1 % more), and the resumes.

    .venv/bin/python benchmarks/bench_fetch.py [--size-mb 2048] [--repeat 2]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assets.wikipedia.fetch import Fetcher, FetchSettings, find_release
from benchmarks.common import format_table, machine_info, write_results
from support.workspace import log

WIKI, DATE = "enwiki", "20240601"
NAME = f"{WIKI}-{DATE}-pages-articles-multistream.xml.bz2"
CUTS = (0.5, 0.9, 0.99)


def make_site(root: Path, size: int) -> Path:
    folder = root / WIKI / DATE
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / NAME
    with open(path, "wb") as handle:
        left = size
        while left:
            block = os.urandom(min(left, 1 << 24))
            handle.write(block)
            left -= len(block)
    return path


def timed_curl(url: str, out: Path, verify: bool = False) -> float:
    """Seconds of ``curl -o`` (and, with ``verify``, of ``sha1sum`` after it: what a user runs to check)."""
    started = time.perf_counter()
    subprocess.run(["curl", "--silent", "--show-error", "--fail", "-o", str(out), url], check=True)
    if verify:
        subprocess.run(["sha1sum", str(out)], check=True, capture_output=True)
    seconds = time.perf_counter() - started
    out.unlink()
    return seconds


def timed_fetch(url: str, landing: Path, settings: FetchSettings) -> tuple[float, Any]:
    fetcher = Fetcher(settings)
    release = find_release(WIKI, [url], fetcher.read_text, fetcher.read_json, tables=())
    started = time.perf_counter()
    report = fetcher.fetch(release, landing, on_progress=lambda line: None)
    seconds = time.perf_counter() - started
    shutil.rmtree(landing)
    return seconds, report


@contextlib.contextmanager
def served(root: Path, *cuts: str) -> Iterator[str]:
    """The dump site in a process of its own (it must not share the measured client's interpreter)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "support.dump_site", str(root), *(f"--cut={c}" for c in cuts)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield process.stdout.readline().strip()
    finally:
        process.kill()
        process.wait()


def sent_bytes(url: str) -> int:
    with urllib.request.urlopen(f"{url}/_stats") as answer:
        return int(json.load(answer)["sent"].get(NAME, 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temp folder)")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-fetch-"))
    size = args.size_mb << 20
    log(f"writing a {args.size_mb} MB file to serve")
    make_site(work / "site", size)
    settings = FetchSettings.of(backoff_seconds=0.05, stall_seconds=30, chunk_bytes=1 << 20)
    results: dict[str, Any] = {"machine": machine_info(), "size_bytes": size}
    with served(work / "site") as url:
        file_url = f"{url}/{WIKI}/{DATE}/{NAME}"
        Fetcher().read_json(f"{url}/{WIKI}/{DATE}/dumpstatus.json")  # its checksums, before any timing
        curl = min(timed_curl(file_url, work / "curl.out") for _ in range(args.repeat))
        checked = min(timed_curl(file_url, work / "curl.out", verify=True) for _ in range(args.repeat))
        ours = min(timed_fetch(url, work / "landing", settings)[0] for _ in range(args.repeat))
    results["curl_seconds"], results["ours_seconds"] = round(curl, 3), round(ours, 3)
    results["curl_sha1sum_seconds"] = round(checked, 3)
    results["throughput_ratio"] = round(curl / ours, 3)
    results["throughput_ratio_verified"] = round(checked / ours, 3)
    log(f"no faults: curl {size / curl / 1e6:,.0f} MB/s, ours {size / ours / 1e6:,.0f} MB/s")
    rows = [
        ["curl (peer)", f"{curl:.2f}", f"{size / curl / 1e6:,.0f}", "-", "-"],
        ["curl, then sha1sum (peer)", f"{checked:.2f}", f"{size / checked / 1e6:,.0f}", "-", "-"],
        ["ours, no faults", f"{ours:.2f}", f"{size / ours / 1e6:,.0f}", "1.0000", "0"],
    ]
    cut_runs = []
    for fraction in CUTS:
        with served(work / "site", f"{NAME}:{int(size * fraction)}") as url:
            Fetcher().read_json(f"{url}/{WIKI}/{DATE}/dumpstatus.json")
            seconds, report = timed_fetch(url, work / "landing", settings)
            on_wire = sent_bytes(url)
        resumes = report.files[0].resumes
        cut_runs.append(
            {"cut_at": fraction, "seconds": round(seconds, 3), "sent": on_wire, "resumes": resumes}
        )
        rows.append(
            [
                f"ours, cut at {fraction:.0%}",
                f"{seconds:.2f}",
                f"{size / seconds / 1e6:,.0f}",
                f"{on_wire / size:.4f}",
                str(resumes),
            ]
        )
    results["cuts"] = cut_runs
    results["worst_bytes_ratio"] = max(run["sent"] for run in cut_runs) / size
    print(format_table(["run", "seconds", "MB/s", "bytes sent / size", "resumes"], rows))
    print(
        f"throughput ours/curl: {results['throughput_ratio']:.2f} (target >= 0.8; ours verifies the sha1 as "
        f"the bytes arrive), ours/(curl + sha1sum): {results['throughput_ratio_verified']:.2f}; "
        f"worst bytes sent / size with a cut: {results['worst_bytes_ratio']:.4f} (target <= 1.01)"
    )
    write_results("fetch", results)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
