"""Adding an index type is its module, its asset and one registration (issue 36).

A toy TF-IDF index with settings of its own is added to a copy of the project's code, the way a contributor
would add one: a new module under ``assets/indexes/``, its Dagster asset appended to
``orchestration/assets/indexes.py``, and one ``register_searcher`` in ``assets/indexes/__init__.py``. The
test counts the files that differ from the checkout (exactly those three), then runs the copy's own
``kiltpipe`` on a copy of the demo build: ``build --select key:tfidf_index`` materializes the asset through
the real Definitions, ``search --index tfidf`` finds the Anarchism article for an anarchism query, and
``eval --index tfidf`` scores it on the remapped datasets with KILT's metrics. Nothing else is edited: the
CLI's ``--index`` choices, the evaluation's dependencies and the retriever all come from the registry.
"""

from __future__ import annotations

import filecmp
import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
CODE = ("assets", "orchestration")

TFIDF_MODULE = '''"""A toy TF-IDF index: a passage is a bag of words, scored by their tf-idf weights."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from assets.indexes.hits import Hit, wikipedia_id_of
from assets.indexes.registry import SearchContext, SearcherType
from assets.storage import SnapshotPaths

WORD = re.compile(r"\\w+")


@dataclass(frozen=True, slots=True)
class TfidfSettings:
    """The toy's own settings (``indexes.tfidf`` of params.yaml), defaults written here and nowhere else."""

    min_df: int = 1
    """Words in fewer passages are not indexed."""
    sublinear_tf: bool = True
    """Weigh a word by 1 + log(tf) rather than tf."""

    @classmethod
    def from_params(cls, section: dict | None) -> TfidfSettings:
        return cls(**(section or {}))


def index_dir(paths: SnapshotPaths) -> Path:
    return paths.indexes / "tfidf"


def build_tfidf(paths: SnapshotPaths, settings: TfidfSettings) -> int:
    """Postings ``{word: [[passage_id, weight], ...]}`` of every passage; returns the passages indexed."""
    rows = pl.read_parquet(paths.passages_parquet / "*.parquet", columns=["passage_id", "title", "text"])
    counts = [Counter(WORD.findall(f"{t} {x}".lower())) for t, x in zip(rows["title"], rows["text"])]
    df = Counter(word for bag in counts for word in bag)
    idf = {w: math.log(len(counts) / n) for w, n in df.items() if n >= settings.min_df}
    postings: dict[str, list] = {}
    for pid, bag in zip(rows["passage_id"], counts):
        for word, tf in bag.items():
            if word in idf:
                weight = (1 + math.log(tf) if settings.sublinear_tf else tf) * idf[word]
                postings.setdefault(word, []).append([pid, weight])
    index_dir(paths).mkdir(parents=True, exist_ok=True)
    (index_dir(paths) / "postings.json").write_text(json.dumps(postings), encoding="utf-8")
    return len(counts)


class TfidfSearcher:
    def __init__(self, folder: Path) -> None:
        self.postings = json.loads((folder / "postings.json").read_text(encoding="utf-8"))

    @classmethod
    def open(cls, context: SearchContext) -> TfidfSearcher:
        assert isinstance(context.settings.of("tfidf"), TfidfSettings)
        return cls(index_dir(context.paths))

    def batch_search(
        self, queries: Sequence[str], k: int, *, threads: int | None = None, with_text: bool = False
    ) -> list[list[Hit]]:
        results = []
        for query in queries:
            scores: Counter = Counter()
            for word in set(WORD.findall(query.lower())):
                for pid, weight in self.postings.get(word, ()):
                    scores[pid] += weight
            ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
            results.append([Hit(pid, wikipedia_id_of(pid), score) for pid, score in ranked])
        return results

    def close(self) -> None:
        self.postings = {}


TFIDF = SearcherType(
    "tfidf",
    "toy TF-IDF",
    TfidfSearcher.open,
    asset="tfidf_index",
    index_dir=index_dir,
    settings=TfidfSettings,
)
'''

TFIDF_ASSET = '''

from assets.indexes import IndexSettings
from assets.indexes.tfidf import build_tfidf


@snapshot_asset(GROUP, ins={"snapshot": dg.AssetIn("passages")})
def tfidf_index(pipeline: PipelineSettings, snapshot: SnapshotHandle) -> dg.Output[SnapshotHandle]:
    """The toy TF-IDF index of the passages."""
    settings = IndexSettings.from_params(pipeline.params.indexes).of("tfidf")
    return dg.Output(snapshot, metadata={"passages": build_tfidf(snapshot.paths, settings)})


INDEX_ASSETS.append(tfidf_index)
'''

TFIDF_REGISTRATION = "\nfrom assets.indexes.tfidf import TFIDF  # noqa: E402\n\nregister_searcher(TFIDF)\n"


def changed_files(copy: Path) -> list[str]:
    """The files of ``copy``'s code that differ from the checkout's (new ones included)."""
    changed = []
    for root in CODE:
        for path in sorted((copy / root).rglob("*.py")):
            relative = path.relative_to(copy)
            original = REPO / relative
            if not original.is_file() or not filecmp.cmp(path, original, shallow=False):
                changed.append(str(relative))
    return changed


def test_a_new_index_type_is_its_module_its_asset_and_one_registration(demo_build, tmp_path: Path) -> None:
    copy = tmp_path / "project"
    for root in CODE:
        shutil.copytree(REPO / root, copy / root, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "workspace.yaml", copy / "workspace.yaml")  # runs are launched from the workspace
    (copy / "assets/indexes/tfidf.py").write_text(TFIDF_MODULE, encoding="utf-8")
    with (copy / "orchestration/assets/indexes.py").open("a", encoding="utf-8") as handle:
        handle.write(TFIDF_ASSET)
    with (copy / "assets/indexes/__init__.py").open("a", encoding="utf-8") as handle:
        handle.write(TFIDF_REGISTRATION)
    assert changed_files(copy) == [
        "assets/indexes/__init__.py",
        "assets/indexes/tfidf.py",
        "orchestration/assets/indexes.py",
    ]

    data_dir = demo_build.copy(tmp_path / "data")
    snapshot = demo_build.summary["snapshot_id"]
    # which indices a build makes, and the toy's settings, are configuration (params.yaml), not code
    settings = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    settings["indexes"]["build"] = [*settings["indexes"]["build"], "tfidf"]
    settings["indexes"]["tfidf"] = {"min_df": 2}
    params_file = tmp_path / "params.yaml"
    params_file.write_text(yaml.safe_dump(settings), encoding="utf-8")
    env = {
        **demo_build.env,
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),  # another data dir: a Dagster home of its own
        "KILT_DATA_DIR": str(data_dir),
        "KILT_PARAMS": str(params_file),
        "PYTHONPATH": str(copy),
    }

    def kiltpipe(*args: str) -> subprocess.CompletedProcess:
        completed = subprocess.run(
            [sys.executable, "-m", "orchestration.cli", *args],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert completed.returncode == 0, f"kiltpipe {' '.join(args)}:\n{completed.stderr[-4000:]}"
        return completed

    probe = subprocess.run(  # the copy's code is what runs, and the registry put the asset in the graph
        [
            sys.executable,
            "-c",
            "import assets.indexes, orchestration.definitions as d\n"
            "graph = d.defs.resolve_asset_graph()\n"
            "from dagster import AssetKey\n"
            "print(assets.indexes.__file__)\n"
            "parents = graph.get(AssetKey('retrieval_evaluation')).parent_keys\n"
            "print(sorted(k.to_user_string() for k in parents))\n",
        ],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert probe.returncode == 0, probe.stderr[-4000:]
    module_file, parents = probe.stdout.strip().splitlines()
    assert Path(module_file).is_relative_to(copy)
    assert "tfidf_index" in parents and "bm25_index" in parents

    kiltpipe(
        "build", "--data-dir", str(data_dir), "--snapshot", snapshot, "--select", "key:tfidf_index", "--quiet"
    )
    postings = json.loads(
        (data_dir / "snapshots" / snapshot / "indexes" / "tfidf" / "postings.json").read_text()
    )
    assert postings and min(len(entries) for entries in postings.values()) == 2  # indexes.tfidf.min_df

    found = json.loads(kiltpipe("search", "--index", "tfidf", "--k", "5", "anarchism anarchist").stdout)
    hits = found["hits"] if isinstance(found, dict) else found
    assert hits and hits[0]["wikipedia_id"] == "12"  # Anarchism, the excerpt's first article

    reports = tmp_path / "reports"
    kiltpipe(
        "eval", "--snapshot", snapshot, "--index", "tfidf", "--index", "bm25", "--reports-dir", str(reports)
    )
    results = json.loads((reports / snapshot / "retrieval" / "retrieval.json").read_text())
    # text: both; text + structured: bm25 (the snapshot has its structured index), not tfidf (it has none)
    assert results["indexes"] == ["tfidf", "bm25", "bm25@both"] and results["splits"]
    assert list(results["left_out"]) == ["tfidf@both"]
    for split in results["splits"]:
        assert 0 <= split["indexes"]["tfidf"]["Rprec"] <= 1
    assert any(split["indexes"]["tfidf"]["Rprec"] > 0 for split in results["splits"])
    assert not (REPO / "assets/indexes/tfidf.py").exists()  # the checkout itself was never changed
