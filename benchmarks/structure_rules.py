"""The structure rules of single issues, read from the code by ``benchmarks/structure.py``: issue 55's read
side (stores, kind branches, compressed input, line reads) and issue 64's doors (settings read below the
door, the dump's form detected again, collection tables named outside their registration, tests importing
``benchmarks/``, README figures written by hand)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

__all__ = ["CODE_ROOTS", "STRUCTURE_55", "STRUCTURE_64", "door_findings", "read_side_findings"]

CODE_ROOTS = ("assets", "orchestration")


READ_PACKAGE = "assets.reading"
"""The one door to a built snapshot (issue 55): the only package that constructs a store."""
STORE_CLASSES = ("ProvenanceStore",)
PASSAGE_KIND_NAMES = frozenset({"text", "table", "infobox", "kb", "qa", "structured"})
KIND_HOMES = ("assets.indexes.collections", "assets.indexes.hits")
"""Where passage kinds are registered and read from an id: a branch on the kind here is the registry."""
CODECS = {
    ("gzip", "open"), ("bz2", "open"), ("lzma", "open"), ("gzip", "GzipFile"), ("bz2", "BZ2File"),
    ("lzma", "LZMAFile"), ("zlib", "decompressobj"), ("bz2", "BZ2Decompressor"), ("lzma", "LZMADecompressor"),
    ("zstandard", "ZstdDecompressor"), ("isal_zlib", "decompressobj"), ("igzip", "open"),
}  # fmt: skip
"""Calls that decode a compressed stream (a write mode excepted): an opener of compressed input."""


def _called(node: ast.Call) -> tuple[str, str]:
    func = node.func
    if isinstance(func, ast.Attribute):
        owner = func.value
        return (owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")), func.attr
    return "", func.id if isinstance(func, ast.Name) else ""


def _writes(node: ast.Call) -> bool:
    modes = [a for a in node.args[1:2]] + [k.value for k in node.keywords if k.arg == "mode"]
    return any(isinstance(m, ast.Constant) and set(str(m.value)) & set("wax") for m in modes)


def read_side_findings(found: dict[str, Path]) -> dict[str, list[str]]:
    """Issue 55's measures: ``store_constructions`` (a store built outside :data:`READ_PACKAGE`, in code or
    benchmarks); in code (``assets/``, ``orchestration/``): ``kind_branches`` (a comparison of a passage's
    kind with a kind's name outside the collection registry), ``compressed_openers`` (modules that decode
    compressed input themselves) and ``line_readers`` (modules that read a bounded line, ``readline(n)``,
    themselves)."""
    listed: dict[str, set[str]] = defaultdict(set)
    for name, path in found.items():
        root = name.split(".")[0]
        if root == "tests":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                owner, called = _called(node)
                if called in STORE_CLASSES and not name.startswith(READ_PACKAGE):
                    listed["store_constructions"].add(f"{name}:{node.lineno}")
                if root not in CODE_ROOTS:
                    continue
                if (owner, called) in CODECS and not _writes(node):
                    listed["compressed_openers"].add(name)
                if called == "readline" and node.args:
                    listed["line_readers"].add(name)
            elif isinstance(node, ast.Compare) and root in CODE_ROOTS and name not in KIND_HOMES:
                operands = [node.left, *node.comparators]
                named = [o for o in operands if isinstance(o, ast.Constant) and o.value in PASSAGE_KIND_NAMES]
                kind = [o for o in operands if "kind" in ast.unparse(o).lower() and o not in named]
                if named and kind and "passage" in ast.unparse(node).lower() + name:
                    listed["kind_branches"].add(f"{name}:{node.lineno}")
        if root in CODE_ROOTS:
            listed["unbounded_line_reads"].update(_unbounded_line_reads(name, ast.parse(path.read_text())))
    return {key: sorted(listed.get(key, ())) for key in STRUCTURE_55}


STRUCTURE_55 = (
    "store_constructions",
    "kind_branches",
    "compressed_openers",
    "line_readers",
    "unbounded_line_reads",
)
TEXT_OPENERS = ("open", "open_text")


def _unbounded_line_reads(name: str, tree: ast.AST) -> list[str]:
    """Lines of a file read without a bound: a ``for`` over a handle ``with open(...)``/``open_text(...)``
    bound (directly, through ``enumerate`` or ``tqdm``), or ``readline()``/``readlines()`` without a size."""
    found = []
    for node in ast.walk(tree):
        attribute = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        if attribute and node.func.attr in ("readline", "readlines") and not node.args:
            found.append(f"{name}:{node.lineno}")
        if not isinstance(node, ast.With):
            continue
        handles = {
            item.optional_vars.id
            for item in node.items
            if isinstance(item.optional_vars, ast.Name)
            and isinstance(item.context_expr, ast.Call)
            and _called(item.context_expr)[1] in TEXT_OPENERS
            and not _writes(item.context_expr)
        }
        for inner in ast.walk(node):
            if isinstance(inner, ast.For):
                source = inner.iter
                while (
                    isinstance(source, ast.Call)
                    and source.args
                    and _called(source)[1] in ("enumerate", "tqdm")
                ):
                    source = source.args[0]
                if isinstance(source, ast.Name) and source.id in handles:
                    found.append(f"{name}:{inner.lineno}")
    return found


PARAMS_READERS = ("load_params", "configured_limits")
PARAMS_DOORS = ("assets.params", "assets.reading")
"""Issue 64: only the doors (and ``orchestration/``) read a params file."""
COLLECTION_TABLES = frozenset({"structured_passages", "kb_passages", "kb_entities", "kb_statements"})
TABLE_USERS = ("assets.provenance_store", "assets.exports")
TABLE_REGISTRATION = "assets.provenance_store.tables"
"""Issue 64: the store and the exports name a collection's tables only in the registration of them."""
STRUCTURE_64 = {
    "params_reads_below_the_door": "params files read below the door (assets/)",
    "dump_form_detections": "calls detecting a dump's form",
    "collection_tables_named": "collection tables named by the store and exports",
    "tests_importing_benchmarks": "tests importing benchmarks/",
}


def door_findings(found: dict[str, Path], repo: Path) -> dict[str, object]:
    """Issue 64's measures (:data:`STRUCTURE_64`; each a list of ``module:line``) and whether the README's
    figures are the runner's (a ``figures:start`` block)."""
    listed: dict[str, set[str]] = defaultdict(set)
    for name, path in found.items():
        root = name.split(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{name}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Call) and root in CODE_ROOTS:
                called = _called(node)[1]
                if called in PARAMS_READERS and root == "assets" and not name.startswith(PARAMS_DOORS):
                    listed["params_reads_below_the_door"].add(where)
                if called == "dump_form":
                    listed["dump_form_detections"].add(where)
            elif isinstance(node, ast.Constant) and node.value in COLLECTION_TABLES:
                if name.startswith(TABLE_USERS) and name != TABLE_REGISTRATION:
                    listed["collection_tables_named"].add(where)
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and root == "tests":
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(n == "benchmarks" or n.startswith("benchmarks.") for n in names):
                    listed["tests_importing_benchmarks"].add(where)
    readme = repo / "README.md"
    by_runner = readme.is_file() and "<!-- figures:start -->" in readme.read_text(encoding="utf-8")
    return {
        **{key: sorted(listed.get(key, ())) for key in STRUCTURE_64},
        "readme_figures_by_runner": by_runner,
    }
