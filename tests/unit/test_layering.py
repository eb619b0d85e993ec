"""Structure: ``orchestration/`` assembles what ``assets/`` defines and never the reverse; the definitions
load from any directory, and the built-in defaults name the same settings as ``params.yaml``."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestration.architecture import layer_of

REPO = Path(__file__).resolve().parents[2]
UPPER_LAYER = "orchestration"


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` for every import in a file, at any depth (imports inside functions count)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_no_module_under_assets_imports_orchestration() -> None:
    modules = sorted((REPO / "assets").rglob("*.py"))
    assert len(modules) > 30
    offending = [
        f"{path.relative_to(REPO)}:{line}: imports {module}"
        for path in modules
        for line, module in _imported_modules(path)
        if module == UPPER_LAYER or module.startswith(f"{UPPER_LAYER}.")
    ]
    assert offending == [], "assets/ must not import orchestration/:\n" + "\n".join(offending)


def test_tests_and_support_import_nothing_from_benchmarks() -> None:
    """Tests and benchmarks share helpers through ``support/`` (the generator included), never by importing
    each other."""
    modules = sorted([*(REPO / "tests").rglob("*.py"), *(REPO / "support").rglob("*.py")])
    assert len(modules) > 100
    offending = [
        f"{path.relative_to(REPO)}:{line}: imports {module}"
        for path in modules
        for line, module in _imported_modules(path)
        if module == "benchmarks" or module.startswith("benchmarks.")
    ]
    assert offending == [], "tests/ and support/ import from benchmarks/:\n" + "\n".join(offending)


PARAMS_READERS = {"load_params", "configured_limits"}
"""What reads a params file: only the doors call them (issue 64, part 1)."""
DOORS = ("assets/params.py", "assets/reading/")


def test_no_domain_module_reads_a_params_file() -> None:
    """Under ``assets/``, only ``assets/params.py`` and the read door (``assets/reading/``) call
    :func:`~assets.params.load_params` or :func:`~assets.params.configured_limits`: a domain function that
    needs a setting takes it as an argument, so a door opened with other params is obeyed everywhere."""
    calls = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in sorted((REPO / "assets").rglob("*.py"))
        if not str(path.relative_to(REPO)).startswith(DOORS)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) in PARAMS_READERS
    ]
    assert calls == [], "a domain module reads params.yaml itself:\n" + "\n".join(calls)


DECODERS = {"bz2", "gzip", "lzma", "zlib", "indexed_bzip2", "rapidgzip"}
"""Modules that decompress: only ``assets/compressed.py`` reads compressed input with them."""
DECODER_USES = {  # what else imports one, and why it is no reader of compressed input
    "assets/indexes/bm25/lucene_files.py": {"zlib"},  # zlib.crc32 of Lucene's file footers
    "assets/wikipedia/pages/kilt_jsonl.py": {"gzip"},  # writes the KILT JSONL export, .gz when asked
}


def test_every_compressed_input_is_read_through_the_one_opener() -> None:
    """XML dumps, SQL tables, entity, label, QA and dataset files, KILT JSON lines: ``assets/compressed.py``
    is the one module that decodes them (truncation detected once, for every codec)."""
    uses = {
        str(path.relative_to(REPO)): {module for _, module in _imported_modules(path) if module in DECODERS}
        for root in ("assets", "orchestration")
        for path in sorted((REPO / root).rglob("*.py"))
        if path != REPO / "assets" / "compressed.py"
    }
    assert {path: found for path, found in uses.items() if found} == DECODER_USES


def test_the_domains_are_plain_python() -> None:
    """Every module under ``assets/`` imports with neither Dagster nor ``orchestration`` loaded (a fresh
    interpreter, so no other test's imports count): the Dagster assets, checks, configs and resources of
    every domain are ``orchestration.assets.<domain>`` and ``orchestration.resources``."""
    code = (
        "import importlib, pkgutil, sys\n"
        "import assets\n"
        "names = [m.name for m in pkgutil.walk_packages(assets.__path__, 'assets.')]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "print(len(names))\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'dagster', 'orchestration'}))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    imported, loaded = completed.stdout.split("\n")[:2]
    assert int(imported) > 80 and loaded == "[]"
    assert not list((REPO / "assets").rglob("definitions.py"))


def _project_modules() -> dict[str, Path]:
    modules = {}
    for root in ("assets", "orchestration"):
        for path in (REPO / root).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _project_imports(path: Path, known: dict[str, Path]) -> list[tuple[int, str]]:
    """``(line, module)`` of every project module a file imports (``from assets import params`` is
    ``assets.params``), at any depth."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in known:
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                found.append((node.lineno, child if child in known else node.module))
    return found


def test_imports_run_one_way_down_the_layers() -> None:
    known = _project_modules()
    offending = []
    for module, path in sorted(known.items()):
        rank, name = layer_of(module)
        for line, imported in _project_imports(path, known):
            other_rank, other_name = layer_of(imported)
            if other_rank > rank or (other_rank == rank and other_name != name):
                offending.append(f"{path.relative_to(REPO)}:{line}: {name} imports {other_name} ({imported})")
    assert offending == [], "imports against the layering:\n" + "\n".join(offending)


def test_no_import_cycle() -> None:
    """No cycle among the project's modules, counting imports inside functions (a deferred import that
    dodges a cycle at import time is still a cycle in the design)."""
    known = _project_modules()
    graph = {
        module: sorted({m for _, m in _project_imports(path, known) if m != module and m != "assets"})
        for module, path in known.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            connect(module)
    assert cycles == [], f"import cycles: {cycles}"


def _keys(tree: dict, prefix: str = "") -> set[str]:
    keys: set[str] = set()
    for key, value in tree.items():
        keys.add(prefix + key)
        if isinstance(value, dict):
            keys |= _keys(value, f"{prefix}{key}.")
    return keys


def test_the_settings_model_knows_exactly_the_keys_of_params_yaml() -> None:
    """The typed model (what runs without ``params.yaml``) and ``params.yaml`` name the same settings: a key
    added to one only is drift (``part_bytes`` once was), and ``params.yaml`` parses into the model."""
    import yaml

    from assets.params import Params, load_params

    in_yaml = _keys(yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8")))
    in_model = _keys(Params().model_dump())
    assert sorted(in_yaml - in_model) == [] and sorted(in_model - in_yaml) == []
    assert load_params(REPO / "params.yaml").knowledge_source.snapshot == "enwiki-20160501"


def test_an_unknown_or_mistyped_key_of_params_yaml_is_an_error_naming_it(tmp_path: Path) -> None:
    import yaml

    from assets.params import ParamsError, load_params

    real = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    real["indexes"]["dense"]["shard_szie"] = real["indexes"]["dense"].pop("shard_size")
    real["passages"]["max_words"] = "a hundred"
    broken = tmp_path / "params.yaml"
    broken.write_text(yaml.safe_dump(real), encoding="utf-8")
    with pytest.raises(ParamsError) as raised:
        load_params(broken)
    message = str(raised.value)
    assert str(broken) in message and "unknown key 'indexes.dense.shard_szie'" in message
    assert "passages.max_words" in message and "'a hundred'" in message


def test_run_config_overrides_params_field_by_field() -> None:
    from assets.params import EvaluationParams
    from orchestration.assets.indexes import EvaluationConfig
    from orchestration.run_config import with_config

    section = EvaluationParams(depth=100, indexes=("bm25", "dense", "hybrid"))
    assert with_config(section, EvaluationConfig()) == section
    assert with_config(section, EvaluationConfig(depth=20)) == EvaluationParams(
        depth=20, indexes=("bm25", "dense", "hybrid")
    )


def test_a_run_config_or_option_is_checked_as_params_yaml_is() -> None:
    """A run config's value (the UI's, a sensor's) or a CLI option goes through the section's model: a
    bad value names its field, an unknown name is refused, nothing is half-applied."""
    from pydantic import ValidationError

    from assets.params import ParamsError, PassagesParams
    from assets.wikipedia.fetch import FetchSettings
    from orchestration.assets.wikipedia import PassagesConfig
    from orchestration.run_config import with_config

    section = PassagesParams()
    for bad, field in (
        ({"mode": "zzz"}, "mode"),
        ({"max_words": 0}, "max_words"),
        ({"workers": -1}, "workers"),
    ):
        with pytest.raises(ValidationError, match=field):
            with_config(section, PassagesConfig(**bad))
    with pytest.raises(ParamsError, match="no setting 'max_word'"):
        section.replace(max_word=5)
    assert section.replace(max_words=None, mode="dpr") == PassagesParams(mode="dpr")
    with pytest.raises(TypeError, match="no setting 'retry'"):
        FetchSettings.of(retry=2)
    assert FetchSettings.of(retries=2, connect_seconds=5.0).limits.connect_seconds == 5.0


def test_asset_modules_read_no_params_at_import(tmp_path: Path) -> None:
    """The domain wiring imports with a broken ``params.yaml`` (nothing read at import); building the
    definitions reads it, once, and fails naming the bad key."""
    broken = tmp_path / "params.yaml"
    broken.write_text("indexes:\n  dense:\n    modle: e5\n", encoding="utf-8")
    env = {**os.environ, "KILT_PARAMS": str(broken)}
    code = (
        "import orchestration.assets.wikipedia, orchestration.assets.indexes, orchestration.assets.datasets\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    completed = subprocess.run(
        [sys.executable, "-c", "import orchestration.definitions"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode != 0 and "unknown key 'indexes.dense.modle'" in completed.stderr


def test_definitions_load_from_a_directory_without_params_yaml(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "KILT_PARAMS"}
    code = (
        "import orchestration.definitions as d\n"
        "print(len(d.defs.resolve_asset_graph().get_all_asset_keys()))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert int(completed.stdout.strip().splitlines()[-1]) >= 10
