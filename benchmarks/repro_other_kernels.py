"""Reproducibility on "another CPU": the embedded default rebuilt with other float kernels, then checked.

The committed ``dvc.lock`` was written on one machine; a CI machine with another CPU (AVX-512/AMX instead
of AVX2) rounds the encoder's float work differently. This script makes this machine behave like
another CPU: ``ATEN_CPU_CAPABILITY=default`` (PyTorch's scalar kernels instead of its AVX2/AVX-512 ones)
and one thread (other summation orders), then runs what ``make demo`` runs in a scratch copy of the repo
(``kiltpipe build``, ``dvc commit``) and ``kiltpipe verify-repro`` against the committed lock and float
reference, and ``dvc status``. It records which hashes differ from the lock and the tolerance check's
figures in ``benchmarks/results/repro_other_kernels.json``.

Run: ``.venv/bin/python benchmarks/repro_other_kernels.py`` (about 10 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.common import locate_excerpt, machine_info, write_results
from support.workspace import log

REPO = Path(__file__).resolve().parents[1]
DVC = REPO / ".venv-dvc" / "bin" / "dvc"
OTHER_KERNELS = {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if completed.returncode not in (0, 2):
        raise RuntimeError(f"{' '.join(command)} failed:\n{completed.stderr[-3000:]}")
    return completed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the scratch repo (printed)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="kilt-repro-"))
    work = scratch / "repo"
    work.mkdir()
    for name in ("dvc.yaml", "dvc.lock", "params.yaml", ".dvcignore"):
        shutil.copy(REPO / name, work / name)
    for folder in ("assets", "reproducibility"):
        shutil.copytree(REPO / folder, work / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (work / ".venv").symlink_to(REPO / ".venv")
    env = {k: v for k, v in os.environ.items() if k not in ("KILT_PARAMS", "KILT_DATA_DIR")}
    env.update(
        OTHER_KERNELS, DAGSTER_HOME=str(scratch / "dagster_home"), KILT_EMBEDDED_DUMP=str(locate_excerpt())
    )
    for command in (["git", "init", "-q"], [str(DVC), "init", "-q"]):
        run(command, work, env)
    shutil.copy(REPO / ".dvc" / "config", work / ".dvc" / "config")
    kiltpipe = str(work / ".venv" / "bin" / "kiltpipe")
    started = time.perf_counter()
    log(f"building the embedded default with {OTHER_KERNELS} in {work}")
    run([kiltpipe, "fetch-default"], work, env)
    build = run([kiltpipe, "build", "--quiet"], work, env)
    build_seconds = time.perf_counter() - started
    run([str(DVC), "commit", "--force", "--quiet"], work, env)
    verify = run([kiltpipe, "verify-repro", "--committed", str(REPO / "dvc.lock")], work, env)
    status = subprocess.run([str(DVC), "status", "--quiet"], cwd=work, env=env, check=False)
    verdict = json.loads(verify.stdout)
    payload = {
        "machine": machine_info(),
        "kernels": OTHER_KERNELS,
        "build_success": json.loads(build.stdout)["success"],
        "build_seconds": round(build_seconds, 1),
        "reproducible": verdict["reproducible"],
        "byte_identical_outputs": len(verdict["byte_identical_outputs"]),
        "float_outputs_with_other_bytes": verdict["float_outputs_rebuilt_with_other_bytes"],
        "differences": verdict["differences"],
        "float_check": verdict["float_check"]["summary"],
        "dvc_repro_has_nothing_to_do": status.returncode == 0,
    }
    path = write_results("repro_other_kernels", payload)
    print(json.dumps(payload, indent=2))
    print(f"results: {path}")
    if args.keep:
        print(f"scratch repo: {work}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
