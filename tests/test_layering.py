"""Structure: ``orchestration/`` assembles what ``assets/`` defines and never the reverse; the definitions
load from any directory, and the built-in defaults name the same settings as ``params.yaml``."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
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


def test_asset_definitions_load_without_orchestration() -> None:
    """Importing every domain's Dagster wiring pulls in nothing from ``orchestration`` (a fresh
    interpreter, so no other test's imports count)."""
    code = (
        "import sys\n"
        "import assets.wikipedia.definitions, assets.indexes.definitions, assets.datasets.definitions\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] == {UPPER_LAYER!r}))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip() == "[]"


def _keys(tree: dict, prefix: str = "") -> set[str]:
    keys: set[str] = set()
    for key, value in tree.items():
        keys.add(prefix + key)
        if isinstance(value, dict):
            keys |= _keys(value, f"{prefix}{key}.")
    return keys


def test_built_in_defaults_know_every_key_of_params_yaml() -> None:
    """``assets.params.DEFAULTS`` (what runs without ``params.yaml``) and ``params.yaml`` name the same
    settings: a key added to one only is drift (``part_bytes`` once was)."""
    import yaml

    from assets.params import DEFAULTS

    in_yaml = _keys(yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8")))
    assert sorted(in_yaml - _keys(DEFAULTS)) == [] and sorted(_keys(DEFAULTS) - in_yaml) == []


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
