"""Adding a setting is one edit: a field of its params section (issue 45).

A field is added to ``PassagesParams`` in a copy of the project's code, with its type, default and
docstring, the way a contributor would add one. The test counts the files that differ from the checkout
(exactly ``assets/params.py``), then runs the copy: ``params.yaml`` sets the field and the model reads it;
the ``passages`` asset's Dagster run config has the field, described by its docstring; and a run config
that sets it reaches ``build_passages`` (the domain call) inside the section it takes. Nothing else is
edited: neither the run config nor the domain function restates the field.
"""

from __future__ import annotations

import filecmp
import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CODE = ("assets", "orchestration")
ANCHOR = "    structured: bool = STRUCTURED_PASSAGES\n"
NEW_FIELD = '''    min_words: int = Field(0, ge=0)
    """Passages of fewer words are dropped (0: none)."""
'''

PROBE = r"""
import json, sys
from pathlib import Path

from dagster import build_asset_context

import orchestration.assets.wikipedia as wikipedia
from assets.params import load_params
from assets.storage import SnapshotPaths
from orchestration.resources import PipelineSettings, SnapshotHandle

params_file = Path(sys.argv[1])
found = {"params_yaml": load_params(params_file).passages.min_words}
field = wikipedia.PassagesConfig.model_fields["min_words"]
found["run_config_field"] = [str(field.annotation), field.description]


class Reached(Exception):
    pass


def domain_call(paths, settings, **options):
    raise Reached(json.dumps({"type": type(settings).__name__, "min_words": settings.min_words}))


class Handle(SnapshotHandle):
    @property
    def paths(self):  # the snapshot's paths, as a build's are (no build holds its lock here)
        return SnapshotPaths(self.data_dir, self.snapshot_id)


wikipedia.build_passages = domain_call
wikipedia.require_room = lambda *args, **kwargs: None
pipeline = PipelineSettings(data_dir=sys.argv[2], params_file=str(params_file))
context = build_asset_context(partition_key="enwiki-20160501")
try:
    list(
        wikipedia.passages(
            context,
            config=wikipedia.PassagesConfig(min_words=9),
            pipeline=pipeline,
            snapshot=Handle(sys.argv[2], "enwiki-20160501"),
        )
    )
except Exception as error:
    cause = error
    while cause is not None and not isinstance(cause, Reached):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        raise
    found["domain_call"] = json.loads(str(cause))
print(json.dumps(found))
"""


def _changed(copy: Path) -> list[str]:
    """Files of the copy's code that differ from the checkout's (new files included)."""
    changed = []
    for root in CODE:
        for path in sorted((copy / root).rglob("*.py")):
            original = REPO / path.relative_to(copy)
            if not original.is_file() or not filecmp.cmp(path, original, shallow=False):
                changed.append(path.relative_to(copy).as_posix())
    return changed


def test_a_setting_is_one_field_of_its_section(tmp_path: Path) -> None:
    copy = tmp_path / "project"
    for root in CODE:
        shutil.copytree(REPO / root, copy / root, ignore=shutil.ignore_patterns("__pycache__"))
    params_py = copy / "assets" / "params.py"
    text = params_py.read_text(encoding="utf-8")
    assert text.count(ANCHOR) == 1, "PassagesParams moved: update the anchor of this test"
    params_py.write_text(text.replace(ANCHOR, ANCHOR + NEW_FIELD), encoding="utf-8")
    assert _changed(copy) == ["assets/params.py"]

    params_file = tmp_path / "params.yaml"
    params_file.write_text("passages:\n  min_words: 3\n", encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, str(params_file), str(tmp_path / "data")],
        cwd=copy,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(copy), "DAGSTER_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    found = json.loads(completed.stdout.strip().splitlines()[-1])
    assert found["params_yaml"] == 3
    assert found["run_config_field"] == ["int | None", "Passages of fewer words are dropped (0: none)."]
    assert found["domain_call"] == {"type": "PassagesParams", "min_words": 9}
