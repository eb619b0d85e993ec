"""Dependencies run one way: ``orchestration/`` assembles what ``assets/`` defines and never the reverse."""

from __future__ import annotations

import ast
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
