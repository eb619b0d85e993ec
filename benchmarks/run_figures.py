"""The one runner of the README's figures (:mod:`benchmarks.figures` declares each once).

    .venv/bin/python benchmarks/run_figures.py               # the README's table from the results
    .venv/bin/python benchmarks/run_figures.py --run "BM25"  # measure those figures first (their scripts)
    .venv/bin/python benchmarks/run_figures.py --list        # every figure: commands, results, machine
    .venv/bin/python benchmarks/run_figures.py --check       # exit 1: the README's table is not the results'
                                                             # (or a declared command does not parse)

The table sits between ``<!-- figures:start -->`` and ``<!-- figures:end -->`` in README.md; nothing else of
the README is touched. ``--run`` takes the start of a figure's ``what`` (case-insensitive, repeatable) or
``all``; each command runs as ``benchmarks/<script> <arguments>`` with this interpreter, in order, and a
failure stops the run before the table is written.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from benchmarks.figures import FIGURES, Figure, Results, render_table
from support.workspace import REPO_ROOT, RESULTS_DIR, log

README = REPO_ROOT / "README.md"
START, END = "<!-- figures:start -->", "<!-- figures:end -->"


def _table_bounds(text: str) -> tuple[int, int]:
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{README}: no {START} ... {END} block to write the figures into")
    return start + len(START), end


def chosen(names: list[str]) -> list[Figure]:
    if "all" in names:
        return list(FIGURES)
    picked = [f for f in FIGURES if any(f.what.lower().lstrip("[`").startswith(n.lower()) for n in names)]
    if not picked:
        raise SystemExit(f"no figure starts with {names}; --list names them")
    return picked


HELP_PROGRAM = """
import contextlib, io, json, runpy, sys
shown = {}
for path in sys.argv[1:]:
    out, err, code = io.StringIO(), io.StringIO(), 0
    sys.argv = [path, "--help"]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            runpy.run_path(path, run_name="__main__")
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else int(done.code is not None)
    except BaseException as error:
        code, err = 1, io.StringIO(f"{type(error).__name__}: {error}")
    shown[path] = [code, out.getvalue(), err.getvalue()]
print(json.dumps(shown))
"""
"""``--help`` of each script named, run as its own ``__main__`` in one process (the libraries they share
imported once): ``{path: [exit status, stdout, stderr]}`` as JSON."""


def help_texts(paths: list[Path]) -> dict[str, tuple[int, str, str]]:
    """What ``<script> --help`` prints, for each of ``paths``."""
    if not paths:
        return {}
    shown = subprocess.run(
        [sys.executable, "-c", HELP_PROGRAM, *map(str, paths)], capture_output=True, text=True, timeout=600
    )
    if shown.returncode != 0:
        raise SystemExit(f"the --help runs of {len(paths)} scripts failed:\n{shown.stderr[-3000:]}")
    return {path: tuple(value) for path, value in json.loads(shown.stdout.splitlines()[-1]).items()}


def declaration_problems() -> list[str]:
    """What is wrong with the declared commands: a script that does not exist, arguments given to a script
    without options, an option its ``--help`` does not list."""
    problems: list[str] = []
    parsed: list[tuple[Figure, str, Path, list[str]]] = []
    for figure in FIGURES:
        for command in figure.commands:
            script, *arguments = command.split()
            path = REPO_ROOT / "benchmarks" / script
            if not path.is_file():
                problems.append(f"{figure.what}: {script} does not exist")
            elif "argparse" not in path.read_text(encoding="utf-8"):
                problems += [f"{figure.what}: {script} takes no options ({command})"] if arguments else []
            else:
                parsed.append((figure, command, path, arguments))
    shown = help_texts(sorted({path for _, _, path, _ in parsed}))
    for figure, command, path, arguments in parsed:
        code, out, err = shown[str(path)]
        options = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", out))
        unknown = [a for a in arguments if a.startswith("--") and a not in options]
        if code != 0 or unknown:
            problems.append(f"{figure.what}: {command}: {unknown or err.strip()[-300:]}")
    return problems


def run(figures: list[Figure]) -> None:
    for figure in figures:
        for command in figure.commands:
            script, *arguments = command.split()
            log(f"{figure.what}: {command} (on {figure.machine})")
            subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / script), *arguments], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--run", nargs="+", metavar="FIGURE", help="measure these figures first (or: all)")
    parser.add_argument(
        "--check", action="store_true", help="only compare the README's table with the results"
    )
    parser.add_argument("--list", action="store_true", help="list the figures and stop")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR, help="the results files' folder")
    args = parser.parse_args(argv)
    if args.list:
        for figure in FIGURES:
            commands, results = "; ".join(figure.commands), ", ".join(figure.results)
            print(f"{figure.what}\n  on {figure.machine}: {commands} -> {results}")
        return 0
    if args.run:
        run(chosen(args.run))
    table = render_table(Results(args.results))
    text = README.read_text(encoding="utf-8")
    start, end = _table_bounds(text)
    if args.check:
        problems = declaration_problems()
        if text[start:end].strip() != table:
            problems.append(
                f"{README}: its table of figures is not the results' (benchmarks/run_figures.py writes it)"
            )
        print(
            "\n".join(problems) or f"the README's {len(FIGURES)} figures are the results files', as declared"
        )
        return 1 if problems else 0
    README.write_text(text[:start] + "\n" + table + "\n" + text[end:], encoding="utf-8")
    log(f"wrote {len(FIGURES)} figures into {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
