"""CI's time budget, measured: ``.ci/run``'s steps in a fresh clone, each against its budget.

Clones ``HEAD`` into a bare folder of the temp dir (nothing beside it: the clone is all there is), then times
``make install install-dvc``, ``make test-fast``, ``make test`` and ``make repro-check`` there, and prints
each step's wall time with its ratio to its budget (``make test-fast`` < 2 min, the newcomer issue's;
``make test`` <= 20 min and all of CI <= 90 min, DEVELOPERS.md's). Results:
``benchmarks/results/suite_time.json`` (with the 15 slowest tests ``make test`` printed).

Run: ``.venv/bin/python benchmarks/suite_time.py`` (about 32 minutes on 2 cores); ``--steps installs
"make test-fast"`` times only those.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.common import machine_info, write_results
from support.workspace import REPO_ROOT, RESULTS_DIR, log

BUDGETS = {"make test-fast": 3 * 60, "make test": 15 * 60, ".ci/run": 90 * 60}
"""Issue 64's targets for the two test commands; CI's budget."""
STEPS = {
    "installs": ["make", "install", "install-dvc"],
    "make test-fast": ["make", "test-fast"],
    "make test": ["make", "test"],
    "make repro-check": ["make", "repro-check"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the clone (printed)")
    parser.add_argument(
        "--steps", nargs="+", choices=list(STEPS), default=list(STEPS), help="steps to time, in order"
    )
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    clone = Path(tempfile.gettempdir()) / f"{REPO_ROOT.name}-suite-time-{commit[:8]}" / REPO_ROOT.name
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True)
    seconds: dict[str, float] = {}
    outputs: dict[str, str] = {}
    for name in args.steps:
        command = STEPS[name]
        log(f"{name}: {' '.join(command)} in {clone}")
        started = time.perf_counter()
        completed = subprocess.run(command, cwd=clone, capture_output=True, text=True)
        seconds[name] = round(time.perf_counter() - started, 1)
        outputs[name] = completed.stdout + completed.stderr
        if completed.returncode != 0:
            raise SystemExit(f"{name} failed ({completed.returncode}):\n{outputs[name][-5000:]}")
    if {"installs", "make test", "make repro-check"} <= seconds.keys():
        seconds[".ci/run"] = round(
            seconds["installs"] + seconds["make test"] + seconds["make repro-check"], 1
        )
    tests_output = outputs.get("make test") or outputs.get("make test-fast", "")
    summary = re.findall(r"^\d+ passed.*$", tests_output, flags=re.MULTILINE)
    slowest = re.findall(r"^\s*[\d.]+s (?:call|setup|teardown)\s+\S+$", tests_output, re.MULTILINE)
    payload = {
        "machine": machine_info(),
        "commit": commit,
        "seconds": seconds,
        "ratio_to_budget": {
            name: round(seconds[name] / budget, 3) for name, budget in BUDGETS.items() if name in seconds
        },
        "tests": summary[-1] if summary else None,
        "slowest": [line.strip() for line in slowest],
    }
    for name, value in seconds.items():
        budget = BUDGETS.get(name)
        ratio = f"  ({value / budget:.2f} of the {budget // 60}-minute budget)" if budget else ""
        print(f"{name:18s} {value / 60:6.1f} min{ratio}")
    name = (
        "suite_time"
        if args.steps == list(STEPS)
        else "suite_time_" + "_".join(step.replace("make ", "").replace("-", "_") for step in args.steps)
    )  # a partial run does not replace the full one's results
    if name == "suite_time":  # a full run supersedes the partial ones
        for partial in RESULTS_DIR.glob("suite_time_*.json"):
            partial.unlink()
    print(f"results: {write_results(name, payload)}")
    if args.keep:
        print(f"clone: {clone}")
    else:
        shutil.rmtree(clone, ignore_errors=True)


if __name__ == "__main__":
    main()
