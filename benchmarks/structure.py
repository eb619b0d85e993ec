"""The project's structure in numbers, read from the code (issue 36): modules per package, the largest
modules, import edges between the project's modules (in-function imports included), import cycles, imports
that run from a lower layer up (``orchestration.architecture.LAYERS``), private names imported across
modules, the benchmark scripts' ``sys.path`` edits and imports between ``tests/`` and ``benchmarks/``, and
blocks of six or more lines repeated across files.

    .venv/bin/python benchmarks/structure.py [--repo DIR] [--label NAME]

``--repo`` measures another checkout (e.g. ``git worktree add /tmp/before 24e54d9``) with this script's
rules, so two commits compare by one method; the layering of ``--repo`` is read from its own
``orchestration/architecture.py``.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from benchmarks.common import format_table, write_results
from benchmarks.structure_rules import CODE_ROOTS, STRUCTURE_64, door_findings, read_side_findings
from support.workspace import REPO_ROOT

ROOTS = ("assets", "orchestration", "benchmarks", "tests")
WINDOW = 6


def modules(repo: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under the roots (tests' data left out)."""
    found = {}
    for root in ROOTS:
        for path in sorted((repo / root).rglob("*.py")):
            if "data" in path.relative_to(repo).parts[1:2]:
                continue
            parts = list(path.relative_to(repo).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imports_of(path: Path, name: str, known: set[str]) -> list[tuple[str, list[str]]]:
    """``(imported module, names imported from it)`` for every import in the file that names a project
    module (relative imports resolved; ``from pkg import mod`` counts as importing ``pkg.mod``)."""
    return [(module, names) for module, names, _ in placed_imports(path, name, known)]


def placed_imports(path: Path, name: str, known: set[str]) -> list[tuple[str, list[str], bool]]:
    """:func:`imports_of`, each with whether the import stands at the module's top level."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        for module, names in _imported(node, path, name, known):
            found.append((module, names, id(node) in top))
    return found


def _imported(node: ast.AST, path: Path, name: str, known: set[str]) -> list[tuple[str, list[str]]]:
    """The project modules one import statement names, with the names it takes from each."""
    if isinstance(node, ast.Import):
        return [(alias.name, []) for alias in node.names if _project(alias.name, known)]
    if not isinstance(node, ast.ImportFrom):
        return []
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    base = node.module or ""
    if node.level:
        parent = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*parent, base] if base else parent)
    names = [alias.name for alias in node.names]
    submodules = [f"{base}.{n}" for n in names if f"{base}.{n}" in known]
    if not submodules:
        return [(base, names)] if _project(base, known) else []
    found: list[tuple[str, list[str]]] = [(module, []) for module in submodules]
    rest = [n for n in names if f"{base}.{n}" not in known]
    if rest and _project(base, known):
        found.append((base, rest))
    return found


def _is_script(path: Path) -> bool:
    """A benchmark script (run as ``python benchmarks/x.py``), not a module of the benchmarks library."""
    return 'if __name__ == "__main__"' in path.read_text(encoding="utf-8")


def _project(module: str, known: set[str]) -> bool:
    return module in known or any(k.startswith(module + ".") for k in known)


def _resolve(module: str, known: set[str]) -> str:
    while module and module not in known:
        module = module.rpartition(".")[0]
    return module


def layer_ranks(repo: Path, domain_wiring: bool = False) -> Any:
    """``module -> rank`` by ``repo``'s own layering contract (None when it has none). With
    ``domain_wiring``, the contract's "wiring" layer is dropped: each domain's ``definitions`` counts in its
    domain and ``assets.resources`` in the base, where a newcomer finds them."""
    path = repo / "orchestration" / "architecture.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("measured_architecture", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    layers = [(r, n, p) for r, n, p in module.LAYERS if not (domain_wiring and n == "wiring")]

    def rank(name: str) -> int:
        best = max(
            ((len(prefix), r) for r, _, prefixes in layers for prefix in prefixes
             if name == prefix or name.startswith(prefix + ".")),
            default=None,
        )  # fmt: skip
        if best is None:
            raise KeyError(name)
        return best[1]

    return rank


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def repeated_blocks(files: list[Path], repo: Path) -> int:
    """Pairs of files sharing a block of :data:`WINDOW` identical non-blank lines (imports and docstring
    quotes aside), counted once per pair."""
    owners: dict[str, set[str]] = defaultdict(set)
    for path in files:
        lines = [
            line.strip()
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.strip().startswith(("import ", "from ", '"""', "#", ")", "]", "}"))
        ]
        for start in range(len(lines) - WINDOW + 1):
            block = "\n".join(lines[start : start + WINDOW])
            owners[hashlib.sha1(block.encode()).hexdigest()].add(str(path.relative_to(repo)))
    pairs = {tuple(sorted((a, b))) for files_ in owners.values() for a in files_ for b in files_ if a < b}
    return len(pairs)


def params_defaults(repo: Path) -> dict[str, set[str]]:
    """``field name -> repr of its default`` over every section model of ``repo``'s ``assets/params.py``
    (read as text: a literal, a module constant, or ``Field(<either>, ...)``)."""
    tree = ast.parse((repo / "assets" / "params.py").read_text(encoding="utf-8"))
    constants = {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
    }

    def value_of(node: ast.AST) -> Any:
        if isinstance(node, ast.Call) and node.args:
            node = node.args[0]
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name) and node.id in constants:
            return constants[node.id]
        return None

    found: dict[str, set[str]] = defaultdict(set)
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for node in cls.body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                value = value_of(node.value)
                if isinstance(value, (str, int, float, bool)) and value != "":
                    found[node.target.id].add(repr(value))
    return found


def restated_defaults(code: dict[str, Path], repo: Path) -> list[str]:
    """Signature defaults written as a literal equal to the params model's default of the same name (a
    default written twice; a named constant used by both is not counted)."""
    defaults = params_defaults(repo)
    found = []
    for name, path in sorted(code.items()):
        if path.name == "params.py" and name == "assets.params":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
            found += [
                f"{name}.{node.name}({arg.arg}={default.value!r})"
                for arg, default in pairs
                if isinstance(default, ast.Constant) and repr(default.value) in defaults.get(arg.arg, ())
            ]
    return found


CAPABILITY_DEPTH = 3
"""A package of at least this many folders (``assets/indexes/bm25/``) is a capability package: outside it,
code imports its ``__init__`` (its public face), never its modules."""
LONG_FUNCTION = 80
"""Lines of a function (its body and signature) above which it counts as long."""
MANY_PARAMETERS = 8
"""Parameters of a function above which it counts as taking too many."""


def capability_packages(repo: Path, code: dict[str, Path]) -> set[str]:
    """Dotted names of the capability packages under ``assets/`` (:data:`CAPABILITY_DEPTH` folders deep)."""
    return {
        name
        for name, path in code.items()
        if path.name == "__init__.py"
        and name.startswith("assets.")
        and name.count(".") >= CAPABILITY_DEPTH - 1
    }


def internal_imports(found: dict[str, Path], packages: set[str]) -> list[str]:
    """Imports, from code and benchmarks outside a capability package, of one of its modules."""
    known = set(found)
    listed = []
    for name, path in found.items():
        if name.split(".")[0] == "tests":
            continue
        for imported, _ in imports_of(path, name, known):
            owner = max(
                (p for p in packages if imported == p or imported.startswith(p + ".")), key=len, default=None
            )
            if owner and imported != owner and not (name == owner or name.startswith(owner + ".")):
                listed.append(f"{name} -> {imported}")
    return sorted(set(listed))


def imports_into_packages(found: dict[str, Path], code: dict[str, Path]) -> list[tuple[str, bool]]:
    """The broad rule (issue 55): imports, from code and benchmarks outside a package (any package under
    ``assets/`` or ``orchestration/`` but those two roots), of one of its modules rather than its face (its
    ``__init__``; a subpackage's counts as one), wherever the import stands; each as ``("importer ->
    module", at module level)``."""
    packages = {n for n, p in code.items() if p.name == "__init__.py" and "." in n}
    known = set(found)
    listed = set()
    for name, path in found.items():
        if name.split(".")[0] == "tests":
            continue
        for imported, _, top in placed_imports(path, name, known):
            owner = max((p for p in packages if imported.startswith(p + ".")), key=len, default=None)
            inside = owner is not None and (name == owner or name.startswith(owner + "."))
            if owner and imported not in packages and not inside:  # a subpackage's face is a face
                listed.add((f"{name} -> {imported}", top))
    return sorted(listed)


def functions(found: dict[str, Path]) -> list[tuple[str, int, int]]:
    """``(module.function, lines, parameters)`` of every function outside ``tests/`` (methods included;
    ``self``/``cls`` not counted)."""
    listed = []
    for name, path in found.items():
        if name.split(".")[0] == "tests":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
                every += [a for a in (args.vararg, args.kwarg) if a is not None]
                count = sum(a.arg not in ("self", "cls") for a in every)
                lines = (
                    (node.end_lineno or node.lineno)
                    - min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    + 1
                )
                listed.append((f"{name}.{node.name}", lines, count))
    return listed


def section_fields(repo: Path) -> dict[str, set[str]]:
    """``section model -> its field names`` of every model of ``repo``'s ``assets/params.py`` and
    ``assets/limits.py``."""
    found: dict[str, set[str]] = {}
    for module in ("params", "limits"):
        tree = ast.parse((repo / "assets" / f"{module}.py").read_text(encoding="utf-8"))
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            names = {
                node.target.id
                for node in cls.body
                if isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id != "model_config"
            }
            if names:
                found[cls.name] = names
    return found


def restated_settings(code: dict[str, Path], repo: Path) -> list[str]:
    """Fields of a settings class outside the params models (a Dagster ``Config``, a ``*Config``,
    ``*Settings`` or ``*Options`` class) that restate two or more fields of one params section, each as
    ``module.Class.field (Section)``; a field that holds a section itself is no copy. Reports that record
    what a build was made with are not settings."""
    sections = section_fields(repo)
    found = []
    for name, path in sorted(code.items()):
        if name in ("assets.params", "assets.limits"):
            continue
        for cls in (
            n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.ClassDef)
        ):
            bases = [ast.unparse(base) for base in cls.bases]
            if not (
                cls.name.endswith(("Config", "Settings", "Options"))
                or any(b.endswith("Config") for b in bases)
            ):
                continue
            fields = {
                node.target.id
                for node in cls.body
                if isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and not ast.unparse(node.annotation).endswith(("Params", "Settings", "Limits"))
            }
            for section, names in sections.items():
                shared = fields & names
                if len(shared) >= 2:
                    found += [f"{name}.{cls.name}.{field} ({section})" for field in sorted(shared)]
    return sorted(set(found))


def _import_findings(found: dict[str, Path], known: set[str], ranks: dict[str, Any]) -> tuple[Any, ...]:
    """The import edges, the private names imported across modules, the imports up the layers (by each
    contract of ``ranks``) and the imports between tests, benchmark scripts and the benchmarks library."""
    upward_by: dict[str, list[str]] = {key: [] for key in ranks}
    edges: dict[str, set[str]] = defaultdict(set)
    private: list[str] = []
    tests_to_benchmarks: set[str] = set()
    benchmarks_to_tests: set[str] = set()
    scripts_to_scripts: set[str] = set()
    for name, path in found.items():
        for imported, names in imports_of(path, name, known):
            target = _resolve(imported, known)
            if not target or target == name:
                continue
            edges[name].add(target)
            if name.split(".")[0] in CODE_ROOTS and target.split(".")[0] in CODE_ROOTS:
                private += [
                    f"{name} <- {target}.{n}" for n in names if n.startswith("_") and n != "__version__"
                ]
                for key, rank in ranks.items():
                    if rank is None:
                        continue
                    try:
                        if rank(name) < rank(target):
                            upward_by[key].append(f"{name} -> {target}")
                    except KeyError:
                        pass
            if name.startswith("tests") and target.startswith("benchmarks") and _is_script(found[target]):
                tests_to_benchmarks.add(f"{name} -> {target}")
            if (
                name.startswith("benchmarks")
                and target.startswith("benchmarks")
                and _is_script(found[target])
            ):
                scripts_to_scripts.add(f"{name} -> {target}")
            if name.startswith("benchmarks") and target.startswith("tests"):
                benchmarks_to_tests.add(f"{name} -> {target}")
    return edges, private, upward_by, (tests_to_benchmarks, benchmarks_to_tests, scripts_to_scripts)


def _words(text: str) -> list[str]:
    return [word.strip(".,:;()`*~").lower() for word in text.split()]


def restated_summaries(repo: Path) -> list[str]:
    """Packages whose docstring's second paragraph opens by saying its summary line again (most of its
    first twelve words are the summary's)."""
    found = []
    for root in (*CODE_ROOTS, "benchmarks", "support"):
        for init in sorted((repo / root).rglob("__init__.py")):
            doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
            paragraphs = doc.split("\n\n")
            if len(paragraphs) < 2:
                continue
            summary, opening = set(_words(paragraphs[0])), _words(paragraphs[1])[:12]
            if opening and sum(w in summary for w in opening) / len(opening) > 0.6:
                found.append(str(init.parent.relative_to(repo)))
    return found


def measure(repo: Path) -> dict[str, Any]:
    found = modules(repo)
    known = set(found)
    ranks = {"contract": layer_ranks(repo), "domain_wiring": layer_ranks(repo, domain_wiring=True)}
    edges, private, upward_by, crossings = _import_findings(found, known, ranks)
    tests_to_benchmarks, benchmarks_to_tests, scripts_to_scripts = crossings
    code = {n: p for n, p in found.items() if n.split(".")[0] in CODE_ROOTS}
    code_edges = {n: {t for t in ts if t in code} for n, ts in edges.items() if n in code}
    per_package = Counter(str(p.parent.relative_to(repo)) for p in code.values() if p.name != "__init__.py")
    sizes = sorted(
        ((len(p.read_text(encoding="utf-8").splitlines()), str(p.relative_to(repo))) for p in code.values()),
        reverse=True,
    )
    bench_files = sorted((repo / "benchmarks").glob("*.py"))
    every_function = functions(found)
    return {
        "code_modules": sum(p.name != "__init__.py" for p in code.values()),
        "modules_per_package": dict(sorted(per_package.items())),
        "largest_modules": [{"path": path, "lines": lines} for lines, path in sizes[:5]],
        "modules_over_600_lines": sum(lines > 600 for lines, _ in sizes),
        "import_edges": sum(len(ts) for ts in code_edges.values()),
        "cycles": cycles(code_edges),
        "upward_imports": sorted(upward_by["contract"]),
        "upward_imports_with_definitions_in_their_domain": sorted(upward_by["domain_wiring"]),
        "private_names_imported_across_modules": sorted(private),
        "benchmark_files": len(bench_files),
        "benchmark_lines": sum(len(p.read_text(encoding="utf-8").splitlines()) for p in bench_files),
        "benchmark_sys_path_edits": sum(
            bool(re.search(r"^\s*sys\.path\.insert\(", p.read_text(encoding="utf-8"), re.M))
            for p in bench_files
        ),
        "benchmarks_importing_tests": sorted(benchmarks_to_tests),
        "tests_importing_benchmark_scripts": sorted(tests_to_benchmarks),
        "benchmark_scripts_importing_scripts": sorted(scripts_to_scripts),
        "file_pairs_with_repeated_blocks": repeated_blocks(list(code.values()) + bench_files, repo),
        "defaults_restated_in_signatures": restated_defaults(code, repo),
        "functions_over_80_lines": sorted(
            f"{where} ({lines})" for where, lines, _ in every_function if lines > LONG_FUNCTION
        ),
        "functions_over_80_lines_in_code": sum(
            lines > LONG_FUNCTION and where.split(".")[0] in CODE_ROOTS for where, lines, _ in every_function
        ),
        "most_parameters": max(((count, where) for where, _, count in every_function), default=(0, ""))[::-1],
        "functions_over_8_parameters": sorted(
            f"{where} ({count})" for where, _, count in every_function if count > MANY_PARAMETERS
        ),
        "settings_restated": restated_settings(code, repo),
        "imports_into_package_internals": internal_imports(found, capability_packages(repo, code)),
        "imports_into_any_package": [where for where, _ in imports_into_packages(found, code)],
        "imports_into_any_package_at_module_level": sum(top for _, top in imports_into_packages(found, code)),
        **read_side_findings(found),
        **door_findings(found, repo),
        "package_docstrings_restating_their_summary": restated_summaries(repo),
        "dagster_imports_under_assets": sorted(
            str(path.relative_to(repo))
            for name, path in code.items()
            if name.startswith("assets")
            and re.search(r"^\s*(from|import) dagster\b", path.read_text(encoding="utf-8"), re.M)
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO_ROOT)
    parser.add_argument("--label", default="now")
    args = parser.parse_args()
    figures = measure(args.repo.resolve())
    rows = [
        ["modules (assets/, orchestration/)", figures["code_modules"]],
        [
            "largest module",
            f"{figures['largest_modules'][0]['path']} ({figures['largest_modules'][0]['lines']})",
        ],
        ["modules over 600 lines", figures["modules_over_600_lines"]],
        ["import edges", figures["import_edges"]],
        ["cycles", len(figures["cycles"])],
        ["imports from a lower layer up (contract)", len(figures["upward_imports"])],
        [
            "... with each definitions.py in its domain",
            len(figures["upward_imports_with_definitions_in_their_domain"]),
        ],
        ["private names imported across modules", len(figures["private_names_imported_across_modules"])],
        [
            "benchmarks/ top-level files (lines)",
            f"{figures['benchmark_files']} ({figures['benchmark_lines']:,})",
        ],
        ["benchmark sys.path edits", figures["benchmark_sys_path_edits"]],
        ["benchmark -> tests imports", len(figures["benchmarks_importing_tests"])],
        ["tests -> benchmark script imports", len(figures["tests_importing_benchmark_scripts"])],
        ["benchmark script -> script imports", len(figures["benchmark_scripts_importing_scripts"])],
        ["file pairs sharing a 6-line block", figures["file_pairs_with_repeated_blocks"]],
        ["params defaults restated in signatures", len(figures["defaults_restated_in_signatures"])],
        ["modules under assets/ importing Dagster", len(figures["dagster_imports_under_assets"])],
        [
            "functions over 80 lines (assets/, orchestration/; all but tests)",
            f"{figures['functions_over_80_lines_in_code']} ({len(figures['functions_over_80_lines'])})",
        ],
        ["most parameters of a function", "{} ({})".format(*figures["most_parameters"])],
        ["functions over 8 parameters", len(figures["functions_over_8_parameters"])],
        ["settings restated (fields copying a params section)", len(figures["settings_restated"])],
        ["imports into a package's modules from outside it", len(figures["imports_into_package_internals"])],
        [
            "... any package's (broad rule; at module level)",
            "{} ({})".format(
                len(figures["imports_into_any_package"]), figures["imports_into_any_package_at_module_level"]
            ),
        ],
        ["stores constructed outside assets/reading/", len(figures["store_constructions"])],
        ["branches on a passage's kind", len(figures["kind_branches"])],
        ["modules decoding compressed input", len(figures["compressed_openers"])],
        ["modules reading bounded lines", len(figures["line_readers"])],
        ["lines of a file read without a bound", len(figures["unbounded_line_reads"])],
        [
            "package docstrings restating their summary",
            len(figures["package_docstrings_restating_their_summary"]),
        ],
        *([label, len(figures[key])] for key, label in STRUCTURE_64.items()),
        ["README figures written by the runner", figures["readme_figures_by_runner"]],
    ]
    print(format_table(["measure", args.label], rows))
    print(format_table(["package", "modules"], list(figures["modules_per_package"].items())))
    write_results(f"structure_{args.label}", figures)


if __name__ == "__main__":
    main()
