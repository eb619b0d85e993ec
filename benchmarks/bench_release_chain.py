"""From a dump site to built snapshots with nothing done by hand (issue 37): ``dagster-daemon`` runs the
release sensor, the fetch, the landing sensor and ``build_all`` for two consecutive runs of a wiki.

A dump site on 127.0.0.1 (``support/dump_site.py``) publishes run N (the real excerpt, enwiki-20160501)
with its articles job ``in-progress``; the daemon starts on the project's ``workspace.yaml`` with a Dagster
home, data and landing folder of its own and a params.yaml watching ``enwiki`` on the site (both sensors
running, polled every few seconds). The job is then marked ``done``, and the script waits for the fetch and
for the build of N; then run N+1 a month later (every tenth article edited, one removed, one added:
``support.dump_variants.later_snapshot`` of the same real pages) goes the same way and is built
incrementally from N. With ``--articles N`` the two runs are instead the enwiki-shaped generator's
snapshot of N articles and its month N+1 (``support/generator``: the run's own multistream file,
index, ``page_props`` and ``redirect`` tables). Measured for each run: seconds from "status done" to the
fetch run's start, to the fetched files in the landing folder, and to the complete snapshot
(``build_all`` succeeded), and what the incremental build reused.

    .venv/bin/python benchmarks/bench_release_chain.py [--timeout 1800] [--articles 10000 --backend onnx]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import format_table, machine_info, write_results
from benchmarks.scale_sensor import FINISHED, dagster_daemon
from support.dump_site import DumpSite, run_files, write_run
from support.dump_variants import later_snapshot, read_xml
from support.real_data import excerpt_dump
from support.workspace import REPO_ROOT, log

WIKI, RUNS = "enwiki", ("20160501", "20160601")
ARTICLES_JOB = "articlesmultistreamdump"


def excerpt_runs(work: Path) -> tuple[dict[str, dict[str, bytes]], dict[str, Any]]:
    """Run N (the real excerpt) and N+1 (a month of edits of the same pages): their files by date."""
    xml_n = read_xml(excerpt_dump())
    xml_n1, month = later_snapshot(xml_n, every=10)
    runs = {RUNS[0]: run_files(xml_n, work / "made-n"), RUNS[1]: run_files(xml_n1, work / "made-n1")}
    for files in runs.values():
        del files["page_props.sql.gz"]  # the excerpt's pages have no QIDs to give
    return runs, {k: len(v) for k, v in month.items()}


def generated_runs(articles: int) -> tuple[dict[str, dict[str, bytes]], dict[str, Any]]:
    """The generator's snapshot of ``articles`` articles and its month (cached under
    benchmarks/work/scale), each run's files by date, named without the ``<wiki>-<date>-`` prefix."""
    from support.generator.dump import default_out, generate

    runs, month = {}, {}
    for out, kwargs in ((default_out(articles, 0), {}), (default_out(articles, 0, 1), {"month": 1})):
        stats = generate(articles, out, **kwargs)
        wiki, date = stats["arguments"]["wiki"], stats["arguments"]["date"]
        if wiki != WIKI:
            raise SystemExit(f"the generator made {wiki}, not {WIKI}")
        prefix = f"{wiki}-{date}-"
        runs[date] = {p.name.removeprefix(prefix): p.read_bytes() for p in sorted(out.glob(f"{prefix}*"))}
        month = stats.get("changes") or month
    return runs, month


def params_file(work: Path, site: DumpSite, backend: str | None = None) -> Path:
    settings = yaml.safe_load((REPO_ROOT / "params.yaml").read_text(encoding="utf-8"))
    settings["data_dir"] = str(work / "data")
    if backend:
        settings["indexes"]["dense"]["backend"] = backend
    settings["snapshots"].update(
        {"landing_dir": str(work / "landing"), "sensor_interval_seconds": 5, "settle_seconds": 0}
    )
    settings["snapshots"]["releases"].update(
        {
            "wikis": [WIKI],
            "sources": [site.url],
            "tables": ["redirect"],
            "interval_seconds": 5,
            "sensor_running": True,
            "stall_seconds": 10,
        }
    )
    path = work / "params.yaml"
    path.write_text(yaml.safe_dump(settings), encoding="utf-8")
    return path


def wait_for_run(instance: Any, tags: dict[str, str], since: float, timeout: float, daemon: Any) -> Any:
    """The first run with ``tags`` created after ``since`` once it has finished."""
    from dagster import RunsFilter

    deadline = time.time() + timeout
    while time.time() < deadline:
        if daemon.poll() is not None:
            raise SystemExit(f"dagster-daemon exited ({daemon.returncode})")
        records = [
            r
            for r in instance.get_run_records(RunsFilter(tags=tags))
            if r.create_timestamp.timestamp() >= since - 1
        ]
        if records and records[0].dagster_run.status.value in FINISHED:
            return records[0]
        time.sleep(1.0)
    raise SystemExit(f"no finished run with {tags} within {timeout:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for each run")
    parser.add_argument("--articles", type=int, help="the generator's N and N+1 instead of the excerpt")
    parser.add_argument("--backend", help="the dense backend of the builds (default: params.yaml's)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-chain-"))
    contents, month = generated_runs(args.articles) if args.articles else excerpt_runs(work)
    home = work / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    results: dict[str, Any] = {
        "machine": machine_info(),
        "runs": "generated" if args.articles else "excerpt",
        "articles": args.articles,
        "dense_backend": args.backend,
        "month": month,
    }
    rows = []
    with DumpSite(work / "site") as site:
        env = {
            **os.environ,
            "DAGSTER_HOME": str(home),
            "KILT_PARAMS": str(params_file(work, site, args.backend)),
            "KILT_DATA_DIR": str(work / "data"),
            "KILT_LANDING_DIR": str(work / "landing"),
        }
        os.environ["DAGSTER_HOME"] = str(home)
        from dagster import DagsterInstance

        instance = DagsterInstance.get()
        log_file = work / "daemon.log"
        with dagster_daemon(env, log_file) as daemon:
            for date in contents:
                snapshot = f"{WIKI}-{date}"
                site.faults.job_status[(date, ARTICLES_JOB)] = "in-progress"
                write_run(site.root, WIKI, date, contents[date])
                time.sleep(12)  # the sensor sees the run in progress and waits
                site.faults.job_status.clear()
                done = time.time()
                log(f"{snapshot}: status done; waiting for the fetch and the build")
                fetch = wait_for_run(instance, {"kilt/snapshot": snapshot}, done, args.timeout, daemon)
                build = wait_for_run(instance, {"dagster/partition": snapshot}, done, args.timeout, daemon)
                fetched = fetch.dagster_run.status.value
                built = build.dagster_run.status.value
                report = work / "data" / "snapshots" / snapshot / "knowledge_source" / "report.json"
                facts = json.loads(report.read_text()) if report.is_file() else {}
                entry = {
                    "fetch_status": fetched,
                    "build_status": built,
                    "done_to_fetch_start_s": round(fetch.start_time - done, 1) if fetch.start_time else None,
                    "done_to_landed_s": round(fetch.end_time - done, 1) if fetch.end_time else None,
                    "done_to_built_s": round(build.end_time - done, 1) if build.end_time else None,
                    "build_wall_s": round(build.end_time - build.start_time, 1) if build.end_time else None,
                    "pages_reused": facts.get("pages_reused"),
                    "bytes_served": sum(site.sent.values()),
                }
                results[snapshot] = entry
                rows.append(
                    [
                        snapshot,
                        f"{fetched}/{built}",
                        str(entry["done_to_fetch_start_s"]),
                        str(entry["done_to_landed_s"]),
                        str(entry["done_to_built_s"]),
                        str(entry["pages_reused"]),
                    ]
                )
                log(f"{snapshot}: {entry}")
    headers = ["snapshot", "fetch/build", "done->fetch s", "done->landed s", "done->built s", "pages reused"]
    print(format_table(headers, rows))
    write_results(f"release_chain_n{args.articles}" if args.articles else "release_chain", results)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
