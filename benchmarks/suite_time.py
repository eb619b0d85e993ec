"""CI's time budget, measured: ``.ci/run``'s steps in a fresh clone, each against its budget.

Clones ``HEAD`` next to this checkout (so ``../shared/data`` is found as the tests expect), then times
``make install install-dvc``, ``make test`` and ``make repro-check`` there, and prints each step's wall
time with its ratio to the budget DEVELOPERS.md gives it (``make test`` <= 20 min; all of CI <= 90 min).
Results: ``benchmarks/results/suite_time.json`` (with the 15 slowest tests ``make test`` printed).

Run: ``.venv/bin/python benchmarks/suite_time.py`` (about 30 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import time

from common import REPO_ROOT, log, machine_info, write_results

BUDGETS = {"make test": 20 * 60, ".ci/run": 90 * 60}
STEPS = {
    "installs": ["make", "install", "install-dvc"],
    "make test": ["make", "test"],
    "make repro-check": ["make", "repro-check"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the clone (printed)")
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    clone = REPO_ROOT.parent / f"{REPO_ROOT.name}-suite-time-{commit[:8]}"
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True)
    seconds: dict[str, float] = {}
    outputs: dict[str, str] = {}
    for name, command in STEPS.items():
        log(f"{name}: {' '.join(command)} in {clone}")
        started = time.perf_counter()
        completed = subprocess.run(command, cwd=clone, capture_output=True, text=True)
        seconds[name] = round(time.perf_counter() - started, 1)
        outputs[name] = completed.stdout + completed.stderr
        if completed.returncode != 0:
            raise SystemExit(f"{name} failed ({completed.returncode}):\n{outputs[name][-5000:]}")
    seconds[".ci/run"] = round(seconds["installs"] + seconds["make test"] + seconds["make repro-check"], 1)
    summary = re.findall(r"^\d+ passed.*$", outputs["make test"], flags=re.MULTILINE)
    slowest = re.findall(r"^\s*[\d.]+s (?:call|setup|teardown)\s+\S+$", outputs["make test"], re.MULTILINE)
    payload = {
        "machine": machine_info(),
        "commit": commit,
        "seconds": seconds,
        "ratio_to_budget": {name: round(seconds[name] / budget, 3) for name, budget in BUDGETS.items()},
        "tests": summary[-1] if summary else None,
        "slowest": [line.strip() for line in slowest],
    }
    for name, value in seconds.items():
        budget = BUDGETS.get(name)
        ratio = f"  ({value / budget:.2f} of the {budget // 60}-minute budget)" if budget else ""
        print(f"{name:18s} {value / 60:6.1f} min{ratio}")
    print(f"results: {write_results('suite_time', payload)}")
    if args.keep:
        print(f"clone: {clone}")
    else:
        shutil.rmtree(clone, ignore_errors=True)


if __name__ == "__main__":
    main()
