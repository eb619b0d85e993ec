"""What a rebuild on another CPU must reproduce, and how it is checked.

Two kinds of artifacts:

* **Byte-reproducible** (knowledge source, passages, collection, TSV, BM25 index, remapped datasets,
  reports): integer and string work, the same bytes on any machine. ``dvc.lock`` pins their hashes
  and a rebuild must match them exactly.
* **Tolerance-reproducible** (:data:`FLOAT_OUTPUTS`: the embeddings, the FAISS index built from them,
  the same two of every other collection, and the retrieval report whose rankings come from them): the
  encoder's matrix products and reductions run through kernels chosen for the CPU at run time (AVX2 on
  one machine, AVX-512/AMX on another) that sum in other orders, so vectors differ in the last bits and
  their files' hashes differ. They are checked against a small committed reference
  (:class:`FloatReference`) instead, the text passages' vectors and (when built) every other collection's:

  - every vector: its projection onto 16 fixed orthonormal directions lies within
    ``sqrt(2 - 2 * 0.9999)`` (plus the reference's fp16 rounding) of the reference's, which every
    vector with cosine >= 0.9999 to its reference vector does (a projection never lengthens a
    difference);
  - 128 vectors (evenly spaced rows), stored whole: cosine >= 0.9999 each;
  - the passage ids in row order: identical (they are not floats);
  - 64 fixed NQ questions searched in the FAISS index: top-10 identical, except that results whose
    reference scores are within 1e-5 of each other (near-ties) may trade places;
  - every retrieval metric: equal to 3 decimals.

:func:`compare_locks` splits a ``dvc.lock`` diff along the same line: any difference outside the hashes
of :data:`FLOAT_OUTPUTS` is a reproducibility failure.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from assets.compressed import strict_lines
from assets.files import write_json_atomic
from assets.indexes.collections import collection_view, indexed_collections
from assets.limits import input_line_bytes
from assets.storage import SnapshotPaths

REFERENCE_FORMAT = 1
COSINE_FLOOR = 0.9999
SKETCH_DIRECTIONS = 16
SAMPLE_VECTORS = 128
QUERIES = 64
TOP_K = 10
NEAR_TIE = 1e-5
METRIC_DECIMALS = 3
FLOAT_OUTPUTS = ("dense/embeddings", "dense/faiss", "retrieval")
"""Path endings of the DVC outputs whose bytes depend on the CPU (see the module docstring): the dense
vectors and FAISS index of the text passages (``indexes/dense/...``) and of every other collection
(``indexes/<collection>/dense/...``: structured, kb, qa), and the retrieval report."""
_FP16_RELATIVE = 2.0**-11


def is_float_output(path: str) -> bool:
    return path.rstrip("/").endswith(FLOAT_OUTPUTS)


# ------------------------------------------------------------------------------------------ dvc.lock
@dataclass(slots=True)
class LockComparison:
    """A rebuilt ``dvc.lock`` against the committed one."""

    differences: list[str] = field(default_factory=list)
    """Differences that break reproducibility (anything but a float output's hash)."""
    float_changed: list[str] = field(default_factory=list)
    """Float outputs (or dependencies on them) whose hash differs: to be verified by tolerance."""
    identical: list[str] = field(default_factory=list)
    """Outputs with the committed hash."""


def _entries(stage: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {str(entry["path"]): entry for entry in stage.get(kind) or []}


def compare_locks(committed: str, actual: str) -> LockComparison:
    """Compare two ``dvc.lock`` texts stage by stage: commands, params, every dependency and output."""
    old, new = yaml.safe_load(committed) or {}, yaml.safe_load(actual) or {}
    result = LockComparison()
    old_stages, new_stages = old.get("stages") or {}, new.get("stages") or {}
    for name in sorted(set(old_stages) | set(new_stages)):
        if name not in new_stages or name not in old_stages:
            result.differences.append(
                f"stage {name}: only in the {'committed' if name in old_stages else 'new'} lock"
            )
            continue
        before, after = old_stages[name], new_stages[name]
        for key in ("cmd", "params"):
            if before.get(key) != after.get(key):
                result.differences.append(f"stage {name}: {key} differs")
        for kind in ("deps", "outs"):
            was, now = _entries(before, kind), _entries(after, kind)
            for path in sorted(set(was) | set(now)):
                label = f"stage {name} {kind[:-1]} {path}"
                if path not in was or path not in now:
                    result.differences.append(
                        f"{label}: only in the {'committed' if path in was else 'new'} lock"
                    )
                elif was[path] == now[path]:
                    if kind == "outs":
                        result.identical.append(path)
                elif is_float_output(path) and _without_hash(was[path]) == _without_hash(now[path]):
                    if path not in result.float_changed:
                        result.float_changed.append(path)
                else:
                    result.differences.append(f"{label}: {_describe(was[path], now[path])}")
    return result


def _without_hash(entry: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in entry.items() if key not in ("md5", "size")}


def _describe(was: dict[str, Any], now: dict[str, Any]) -> str:
    changed = sorted(key for key in set(was) | set(now) if was.get(key) != now.get(key))
    return ", ".join(f"{key} {was.get(key)} -> {now.get(key)}" for key in changed)


# ----------------------------------------------------------------------------------------- reference
def _encode(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array, dtype="<f2").tobytes()).decode("ascii")


def _decode(text: str, columns: int) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f2").astype(np.float32).reshape(-1, columns)


def _directions(dimension: int) -> np.ndarray:
    """:data:`SKETCH_DIRECTIONS` orthonormal columns, the same on every machine up to rounding."""
    rng = np.random.default_rng(20160501)
    q, _ = np.linalg.qr(rng.standard_normal((dimension, SKETCH_DIRECTIONS)))
    return q.astype(np.float64)


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


def _sample_rows(count: int) -> np.ndarray:
    return np.unique(np.linspace(0, count - 1, min(SAMPLE_VECTORS, count)).round().astype(np.int64))


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what :mod:`platform` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def reference_queries(count: int = QUERIES) -> list[str]:
    """The first ``count`` questions of the NQ-open dev file shipped with the project (real questions)."""
    from importlib import resources

    fixture = resources.files("assets.datasets") / "fixtures" / "NQ-open.dev.jsonl"
    questions = []
    for _, line in strict_lines(Path(str(fixture)), input_line_bytes()):
        if line.strip():
            questions.append(json.loads(line)["question"])
            if len(questions) == count:
                break
    return questions


def _embeddings(paths: SnapshotPaths) -> Any:
    from assets.indexes.dense import Embeddings

    return Embeddings.open(paths.dense_embeddings)


def _vectors_reference(embeddings: Any) -> dict[str, Any]:
    """What the reference keeps of one embeddings directory: identity, sketch and sample."""
    sketch, rows, sample = _sketch_and_sample(embeddings)
    return {
        "model": embeddings.manifest.get("model"),
        "backend": embeddings.manifest.get("backend"),
        "vectors": embeddings.count,
        "dimension": embeddings.dimension,
        "ids_sha256": _ids_digest(embeddings.ids()),
        "sketch": _encode(sketch),
        "sample_rows": rows.tolist(),
        "sample": _encode(sample),
    }


def _ids_digest(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()


def _sketch_and_sample(embeddings: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(projection of every unit vector on the directions, sampled row numbers, the sampled unit vectors)."""
    directions = _directions(embeddings.dimension)
    rows = _sample_rows(embeddings.count)
    sketch, sample, offset = [], [], 0
    for array in embeddings.shard_arrays():
        unit = _unit(np.asarray(array))
        sketch.append(unit @ directions)
        lo, hi = np.searchsorted(rows, [offset, offset + len(unit)])
        sample.append(unit[rows[lo:hi] - offset])
        offset += len(unit)
    return np.concatenate(sketch), rows, np.concatenate(sample)


def _top_k(retriever: Any, queries: list[str], k: int) -> tuple[list[list[str]], list[list[float]]]:
    searcher = retriever.dense
    scores, rows = searcher.search_vectors(searcher.encode_queries(queries), k)
    hits = searcher.hits_for(scores, rows)
    return [[h.passage_id for h in ranked] for ranked in hits], [
        [float(h.score) for h in ranked] for ranked in hits
    ]


def _metrics(retrieval_json: Path) -> list[dict[str, Any]]:
    report = json.loads(retrieval_json.read_text(encoding="utf-8"))
    return [
        {key: value for key, value in row.items() if not isinstance(value, float) or math.isfinite(value)}
        for row in report.get("table") or []
    ]


def write_reference(paths: SnapshotPaths, retrieval_json: Path, out: Path, retriever: Any) -> dict[str, Any]:
    """Write the float reference of ``paths``'s dense artifacts (the text passages', and each other
    collection's under its name, ``structured``, when built) and retrieval report to ``out``."""
    queries = reference_queries()
    ids, scores = _top_k(retriever, queries, TOP_K + 1)
    views = {c.name: collection_view(paths, c.name) for c in indexed_collections()}
    reference = {
        "format": REFERENCE_FORMAT,
        "snapshot_id": paths.snapshot_id,
        "written_on": cpu_model(),
        **_vectors_reference(_embeddings(paths)),
        **{
            name: _vectors_reference(_embeddings(view))
            for name, view in views.items()
            if view.dense_embeddings.is_dir()
        },
        "queries": queries,
        "top_ids": ids,
        "top_scores": [[round(s, 7) for s in row] for row in scores],
        "metrics": _metrics(retrieval_json),
    }
    write_json_atomic(out, reference)
    return reference


@dataclass(slots=True)
class FloatCheck:
    """The outcome of :func:`verify_reference`."""

    problems: list[str] = field(default_factory=list)
    min_cosine: float = 1.0
    worst_sketch: float = 0.0
    sketch_bound: float = 0.0
    vectors: int = 0
    queries: int = 0
    queries_with_near_ties: int = 0
    metrics: int = 0

    @property
    def passed(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        return (
            f"{self.vectors:,} vectors within the sketch bound (worst {self.worst_sketch:.2e} of "
            f"{self.sketch_bound:.2e}), min cosine {self.min_cosine:.7f} over {SAMPLE_VECTORS} sampled "
            f"vectors (floor {COSINE_FLOOR}), FAISS top-{TOP_K} identical on {self.queries} queries "
            f"({self.queries_with_near_ties} with near-ties), {self.metrics} metric rows equal to "
            f"{METRIC_DECIMALS} decimals"
        )


def _near_tie_ok(got: list[str], ref_ids: list[str], ref_scores: list[float]) -> tuple[bool, bool]:
    """(every position holds a reference result of the same score up to :data:`NEAR_TIE`, whether a
    near-tie decided a position)."""
    tied = False
    for rank, passage_id in enumerate(got[:TOP_K]):
        allowed = {
            ref_ids[j] for j in range(len(ref_ids)) if abs(ref_scores[j] - ref_scores[rank]) <= NEAR_TIE
        }
        if passage_id not in allowed:
            return False, tied
        tied = tied or len(allowed) > 1
    return len(set(got[:TOP_K])) == len(got[:TOP_K]) == min(TOP_K, len(ref_ids)), tied


def _check_vectors(embeddings: Any, reference: dict[str, Any], check: FloatCheck, label: str = "") -> None:
    """Check one embeddings directory against its part of the reference; problems go to ``check``."""
    for key, actual in (
        ("model", embeddings.manifest.get("model")),
        ("backend", embeddings.manifest.get("backend")),
        ("vectors", embeddings.count),
        ("dimension", embeddings.dimension),
        ("ids_sha256", _ids_digest(embeddings.ids())),
    ):
        if reference.get(key) != actual:
            check.problems.append(f"{label}{key}: {actual!r}, reference {reference.get(key)!r}")
    if check.problems:
        return
    dimension = embeddings.dimension
    sketch, rows, sample = _sketch_and_sample(embeddings)
    ref_sketch = _decode(reference["sketch"], SKETCH_DIRECTIONS).astype(np.float64)
    distance = np.linalg.norm(sketch - ref_sketch, axis=1)
    check.sketch_bound = math.sqrt(2 - 2 * COSINE_FLOOR) + _FP16_RELATIVE
    check.worst_sketch = max(check.worst_sketch, float(distance.max(initial=0.0)))
    check.vectors += len(distance)
    if (bad := np.flatnonzero(distance > check.sketch_bound)).size:
        check.problems.append(
            f"{label}{bad.size} vectors are farther from the reference than cosine {COSINE_FLOOR} allows "
            f"(first rows: {bad[:5].tolist()})"
        )
    if rows.tolist() != reference["sample_rows"]:
        check.problems.append(f"{label}sampled rows differ from the reference's")
    else:
        ref_sample = _unit(_decode(reference["sample"], dimension))
        cosines = np.sum(sample * ref_sample, axis=1)
        check.min_cosine = min(check.min_cosine, float(cosines.min(initial=1.0)))
        if (low := np.flatnonzero(cosines < COSINE_FLOOR)).size:
            check.problems.append(
                f"{label}{low.size} sampled vectors have cosine < {COSINE_FLOOR} to the reference "
                f"(rows {rows[low][:5].tolist()}, min {check.min_cosine:.6f})"
            )


def verify_reference(
    paths: SnapshotPaths, retrieval_json: Path, reference: dict[str, Any], retriever: Any
) -> FloatCheck:
    """Check the dense artifacts and the retrieval report of ``paths`` against ``reference``."""
    check = FloatCheck()
    if reference.get("format") != REFERENCE_FORMAT:
        check.problems.append(f"reference format {reference.get('format')} is not {REFERENCE_FORMAT}")
        return check
    _check_vectors(_embeddings(paths), reference, check)
    if check.problems:
        return check
    for collection in indexed_collections():  # each other collection's vectors, the same way
        if collection.name not in reference:
            continue
        view = collection_view(paths, collection.name)
        if not view.dense_embeddings.is_dir():
            check.problems.append(f"{collection.name}: no embeddings at {view.dense_embeddings}")
        else:
            _check_vectors(_embeddings(view), reference[collection.name], check, f"{collection.name}: ")
    ids, _ = _top_k(retriever, reference["queries"], TOP_K)
    for query, got, ref_ids, ref_scores in zip(
        reference["queries"], ids, reference["top_ids"], reference["top_scores"], strict=True
    ):
        same, tied = _near_tie_ok(got, ref_ids, ref_scores)
        if not same:
            check.problems.append(f"FAISS top-{TOP_K} of {query!r}: {got}, reference {ref_ids[:TOP_K]}")
        check.queries += same
        check.queries_with_near_ties += same and tied
    actual_metrics = _metrics(retrieval_json)
    check.metrics = len(actual_metrics)
    if len(actual_metrics) != len(reference["metrics"]):
        check.problems.append(f"{len(actual_metrics)} metric rows, reference {len(reference['metrics'])}")
    for row, ref in zip(actual_metrics, reference["metrics"], strict=False):
        if _rounded(row) != _rounded(ref):
            check.problems.append(
                f"retrieval metrics differ beyond {METRIC_DECIMALS} decimals: {row} vs {ref}"
            )
    return check


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    return {k: round(v, METRIC_DECIMALS) if isinstance(v, float) else v for k, v in row.items()}


# ------------------------------------------------------------------------------------------- verdict
@dataclass(slots=True)
class ReproVerdict:
    """A rebuild against the committed ``dvc.lock`` and float reference (:func:`verify_rebuild`)."""

    lock: LockComparison
    floats: FloatCheck

    @property
    def reproducible(self) -> bool:
        return not self.lock.differences and self.floats.passed

    def to_dict(self) -> dict[str, Any]:
        return {
            "reproducible": self.reproducible,
            "byte_identical_outputs": self.lock.identical,
            "differences": self.lock.differences,
            "float_outputs_rebuilt_with_other_bytes": self.lock.float_changed,
            "float_check": {
                "passed": self.floats.passed,
                "summary": self.floats.summary(),
                "problems": self.floats.problems,
            },
        }

    def line(self) -> str:
        """One sentence that says what was verified (true on any CPU when :attr:`reproducible`)."""
        if not self.reproducible:
            problems = self.lock.differences + self.floats.problems
            return f"NOT REPRODUCIBLE: {len(problems)} problems, first: {problems[0]}"
        floats = (
            "byte-identical too (same CPU kind as the lock's)"
            if not self.lock.float_changed
            else f"rebuilt with this CPU's rounding ({len(self.lock.float_changed)} hashes differ from the "
            "lock's)"
        )
        return (
            f"reproducible: {len(self.lock.identical)} outputs byte-identical to the committed dvc.lock; the "
            f"float outputs (embeddings, FAISS index, retrieval report) are {floats} and within tolerance "
            f"of the committed reference: {self.floats.summary()}"
        )


def verify_rebuild(
    committed_lock: str,
    lock: str,
    paths: SnapshotPaths,
    retrieval_json: Path,
    reference: dict[str, Any],
    retriever: Any,
) -> ReproVerdict:
    """The rebuilt ``lock`` against ``committed_lock`` (byte-reproducible outputs must match exactly) and
    the float artifacts of ``paths`` against ``reference`` (by tolerance)."""
    return ReproVerdict(
        compare_locks(committed_lock, lock), verify_reference(paths, retrieval_json, reference, retriever)
    )
