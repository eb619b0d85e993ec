"""FAISS indices over an embeddings directory: built whole, or trained once and assembled from per-shard
parts (the ``dense_index`` asset's steps).

Layout of an index directory::

    index                the FAISS index (row i = i-th vector in shard order)
    docid                passage id of row i on line i
    index.json           factory, metric, model, backend, encoder, dimension, vectors, bytes, build timings

``index`` and ``docid`` are the names pyserini's ``FaissSearcher`` opens, so a pyserini user points it at
the directory as it is; indexes built before (``index.faiss``, ``docids.txt``) are still read
(:func:`index_files`).

Training and adding run on every GPU FAISS sees when a GPU build of FAISS is installed (``faiss-gpu-cu12``;
``gpu="auto"``, the default), else on the CPU; an index type FAISS cannot put on a GPU (HNSW) stays on the
CPU. The stored index is always a CPU index.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from assets.files import atomic_path, temp_sibling
from assets.indexes.dense.budget import budget_factory
from assets.indexes.dense.embeddings import Embeddings
from assets.params import FAISS_FACTORY, FAISS_GPU, FAISS_METRIC
from assets.storage import write_report_json

INDEX_FORMAT = 1

log = logging.getLogger(__name__)


INDEX_FILE = "index"  # pyserini's FaissSearcher names


DOCIDS_FILE = "docid"


LEGACY_FILES = ("index.faiss", "docids.txt")  # what indexes built before 2026-11-25 are named


INDEX_META = "index.json"
ADD_BATCH = 65_536
"""Vectors added to an index per ``add`` call (bounded memory)."""
TRAIN_SEED = 0
"""The seed of the training sample's draw (a rebuild trains on the same vectors)."""


@dataclass(slots=True)
class IndexReport:
    factory: str
    metric: str
    vectors: int
    dimension: int
    bytes: int  # size of the index file
    bytes_per_vector: float
    docids_bytes: int
    train_vectors: int
    train_seconds: float
    add_seconds: float
    seconds: float
    index_dir: str
    params: dict[str, Any] = field(default_factory=dict)
    device: str = "cpu"  # where training and adding ran: cpu or gpu x N

    def metadata(self) -> dict[str, Any]:
        """What the ``dense_index`` asset shows of the index in the Dagster UI (plain values)."""
        return {
            "index_path": Path(self.index_dir),
            "factory": self.factory,
            "vectors": self.vectors,
            "index_bytes": self.bytes,
            "bytes_per_vector": float(self.bytes_per_vector),
            "index_seconds": float(self.seconds),
            "search_params": dict(self.params),
            "faiss_device": self.device,
        }


def faiss_module() -> Any:
    import faiss

    return faiss


def faiss_gpus(setting: str | bool = "auto") -> int:
    """GPUs FAISS trains and adds on: every one a GPU build sees for ``auto``/``on``, none for ``off`` or a
    CPU build (``on`` with none is an error)."""
    key = str(setting).lower()
    if key in ("off", "false", "no", "cpu"):
        return 0
    if key not in ("auto", "on", "true", "yes", "gpu"):
        raise ValueError(f"faiss gpu setting must be auto, on or off, not {setting!r}")
    faiss = faiss_module()
    gpu_api = ("get_num_gpus", "index_cpu_to_all_gpus", "index_gpu_to_cpu")  # a CPU build lacks the last
    has_gpu_api = all(hasattr(faiss, name) for name in gpu_api)
    count = int(faiss.get_num_gpus()) if has_gpu_api else 0
    if not count and key != "auto":
        raise RuntimeError(
            "FAISS on GPU asked for, but this FAISS build sees no GPU (pip install faiss-gpu-cu12)"
        )
    return count


def _to_gpus(index: Any, gpus: int) -> tuple[Any, str]:
    """``index`` on every GPU (sharded by FAISS), or unchanged when there are none or its type has no GPU
    version; the device it is on."""
    if not gpus:
        return index, "cpu"
    try:
        return faiss_module().index_cpu_to_all_gpus(index), f"gpu x {gpus}"
    except (RuntimeError, AttributeError) as error:
        log.warning("FAISS cannot put this index on the GPU (%s); training and adding on the CPU", error)
        return index, "cpu"


def _to_cpu(index: Any, device: str) -> Any:
    return faiss_module().index_gpu_to_cpu(index) if device != "cpu" else index


def _metric(metric: str) -> int:
    faiss = faiss_module()
    key = metric.lower().replace("-", "_")
    if key in ("ip", "inner_product", "cosine", "dot"):
        return faiss.METRIC_INNER_PRODUCT
    if key in ("l2", "euclidean"):
        return faiss.METRIC_L2
    raise ValueError(f"unknown metric {metric!r} (ip or l2)")


def default_train_sample(factory: str) -> int:
    """Training vectors for a factory: 40 per IVF list (FAISS warns under 39), 10k for PQ/SQ, else 0."""
    import re

    match = re.search(r"IVF(\d+)", factory)
    sizes = [40 * int(match.group(1))] if match else []
    if re.search(r"PQ\d+|SQ\d|SQfp16|LSH|OPQ|PCA", factory):
        sizes.append(10_000)
    return max(sizes, default=0)


def _new_index(factory: str, dimension: int, metric: str, hnsw_ef_construction: int | None = None) -> Any:
    faiss = faiss_module()
    index = faiss.index_factory(dimension, factory, _metric(metric))
    for sub in _sub_indexes(index):  # polysemous codes are not used by searches here: training them is slow
        if hasattr(sub, "do_polysemous_training"):
            sub.do_polysemous_training = False
    if hnsw_ef_construction is not None:
        hnsw = hnsw_of(index)
        if hnsw is None:
            raise ValueError(f"{factory!r} has no HNSW graph: hnsw_ef_construction does not apply")
        hnsw.efConstruction = hnsw_ef_construction
    return index


def _train(
    index: Any, embeddings: Embeddings, factory: str, train_sample: int | None, seed: int
) -> tuple[int, float]:
    if index.is_trained:
        return 0, 0.0
    started = time.perf_counter()
    vectors = min(train_sample or default_train_sample(factory) or 10_000, embeddings.count)
    index.train(embeddings.sample(vectors, seed=seed))
    return vectors, time.perf_counter() - started


@dataclass(frozen=True, slots=True)
class FaissTuning:
    """How a FAISS index is built, beside what it is (``indexes.dense``): none of it changes the index's
    settings."""

    add_batch: int = ADD_BATCH
    """Vectors added at a time."""
    hnsw_ef_construction: int | None = None
    """HNSW's efConstruction (None: FAISS's)."""
    seed: int = TRAIN_SEED
    """The seed of the training sample."""
    threads: int | None = None
    """OpenMP threads (None: FAISS's)."""


DEFAULT_TUNING = FaissTuning()


def build_faiss_index(
    embeddings_dir: str | os.PathLike[str],
    index_dir: str | os.PathLike[str],
    factory: str = FAISS_FACTORY,
    metric: str = FAISS_METRIC,
    *,
    train_sample: int | None = None,
    search_params: str = "",
    gpu: str | bool = FAISS_GPU,
    tuning: FaissTuning = DEFAULT_TUNING,
) -> IndexReport:
    """A FAISS ``index_factory(dimension, factory, metric)`` index over the vectors of ``embeddings_dir``,
    made in this process by the steps the ``dense_index`` asset runs (in any processes): train
    (:func:`train_faiss_index`), add each embeddings shard (:func:`add_shard_to_faiss`), merge and publish
    (:func:`merge_faiss_shards`) into ``index_dir``.

    Trainable factories (``IVF{n},SQ8``, ``IVF{n},PQ{m}``, ...) are trained on ``train_sample`` rows drawn
    uniformly (default :func:`default_train_sample`); vectors are added ``add_batch`` at a time, read from
    the memory-mapped shard files. Files are published atomically. ``tuning``: how the work is done
    (batch, seed, threads, HNSW's construction depth), which changes no setting of the index.
    """
    add_batch, hnsw_ef_construction = tuning.add_batch, tuning.hnsw_ef_construction
    seed, threads = tuning.seed, tuning.threads
    if threads:
        faiss_module().omp_set_num_threads(threads)
    work = temp_sibling(Path(index_dir))
    training = train_faiss_index(
        embeddings_dir, work, factory, metric, train_sample=train_sample, seed=seed, gpu=gpu,
        hnsw_ef_construction=hnsw_ef_construction,
    )  # fmt: skip
    parts = []
    if training["mergeable"]:
        shards = len(Embeddings.open(embeddings_dir).manifest["shards"])
        parts = [add_shard_to_faiss(embeddings_dir, work, shard, add_batch, gpu) for shard in range(shards)]
    return merge_faiss_shards(
        embeddings_dir, index_dir, training, parts, factory, metric, search_params=search_params,
        add_batch=add_batch,
    )  # fmt: skip


def index_files(index_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """``(FAISS index, docids)`` files of an index directory: pyserini's names, else the legacy ones."""
    directory = Path(index_dir)
    if not (directory / INDEX_FILE).is_file() and (directory / LEGACY_FILES[0]).is_file():
        return directory / LEGACY_FILES[0], directory / LEGACY_FILES[1]
    return directory / INDEX_FILE, directory / DOCIDS_FILE


def _mergeable(index: Any) -> bool:
    """Whether shard copies of this (trained, empty) index merge into one: IVF lists and flat codes do,
    HNSW graphs do not (FAISS raises on merge_from)."""
    if hnsw_of(index) is not None:
        return False
    try:
        faiss_module().clone_index(index).merge_from(faiss_module().clone_index(index), 0)
    except RuntimeError:
        return False
    return True


def train_faiss_index(
    embeddings_dir: str | os.PathLike[str],
    work_dir: str | os.PathLike[str],
    factory: str = FAISS_FACTORY,
    metric: str = FAISS_METRIC,
    *,
    train_sample: int | None = None,
    seed: int = TRAIN_SEED,
    gpu: str | bool = FAISS_GPU,
    hnsw_ef_construction: int | None = None,
) -> dict[str, Any]:
    """The trained, empty index every shard step adds its vectors to (``trained.faiss`` in ``work_dir``);
    ``mergeable`` False (HNSW) means the shard steps do nothing and :func:`merge_faiss_shards` adds all."""
    faiss = faiss_module()
    embeddings = Embeddings.open(embeddings_dir)
    factory = budget_factory(factory, embeddings.count, embeddings.dimension)  # ``budget:<size>``: what fits
    blank = _new_index(factory, embeddings.dimension, metric, hnsw_ef_construction)
    index, device = _to_gpus(blank, faiss_gpus(gpu))
    train_vectors, train_seconds = _train(index, embeddings, factory, train_sample, seed)
    index = _to_cpu(index, device)
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    with atomic_path(work / "trained.faiss") as temp:
        faiss.write_index(index, str(temp))
    return {
        "work_dir": str(work),
        "train_vectors": train_vectors,
        "train_seconds": train_seconds,
        "mergeable": _mergeable(index),
        "device": device,
        "factory": factory,
    }


def add_shard_to_faiss(
    embeddings_dir: str | os.PathLike[str],
    work_dir: str | os.PathLike[str],
    shard: int,
    add_batch: int = ADD_BATCH,
    gpu: str | bool = FAISS_GPU,
) -> dict[str, Any]:
    """Encode one embeddings shard into a copy of the trained index (``part-<shard>.faiss``: its codes)."""
    faiss = faiss_module()
    started = time.perf_counter()
    embeddings = Embeddings.open(embeddings_dir)
    work = Path(work_dir)
    index, device = _to_gpus(faiss.read_index(str(work / "trained.faiss")), faiss_gpus(gpu))
    vectors = np.load(
        embeddings.directory / embeddings.manifest["shards"][shard]["embeddings"], mmap_mode="r"
    )
    for begin in range(0, vectors.shape[0], add_batch):
        index.add(np.ascontiguousarray(vectors[begin : begin + add_batch]))
    index = _to_cpu(index, device)
    name = f"part-{shard:05d}.faiss"
    with atomic_path(work / name) as temp:
        faiss.write_index(index, str(temp))
    return {
        "shard": shard,
        "part": name,
        "vectors": int(index.ntotal),
        "seconds": time.perf_counter() - started,
        "device": device,
    }


def merge_faiss_shards(
    embeddings_dir: str | os.PathLike[str],
    index_dir: str | os.PathLike[str],
    training: dict[str, Any],
    parts: Sequence[dict[str, Any]],
    factory: str = FAISS_FACTORY,
    metric: str = FAISS_METRIC,
    *,
    search_params: str = "",
    add_batch: int = ADD_BATCH,
) -> IndexReport:
    """The index of ``embeddings_dir`` from its shard parts, merged in shard order (ids run on: the same
    index as :func:`build_faiss_index` adds), published into ``index_dir``; the work dir goes."""
    faiss = faiss_module()
    started = time.perf_counter()
    embeddings = Embeddings.open(embeddings_dir)
    work = Path(training["work_dir"])
    factory = training.get("factory", factory)  # what a ``budget:<size>`` became
    if not training["mergeable"]:  # an HNSW graph: this process adds every vector to the trained index
        index = faiss.read_index(str(work / "trained.faiss"))
        t0 = time.perf_counter()
        for block in embeddings.iter_batches(add_batch):
            index.add(block)
        made = _Made(factory, metric, search_params, training, time.perf_counter() - t0, "cpu", started)
        report = _publish_index(index, embeddings, Path(index_dir), made)
        shutil.rmtree(work, ignore_errors=True)
        return report
    ordered = sorted(parts, key=lambda part: part["shard"])
    if [part["shard"] for part in ordered] != list(range(len(embeddings.manifest["shards"]))):
        raise RuntimeError(f"{work}: FAISS parts for shards {[p['shard'] for p in ordered]}, not every shard")
    index = faiss.read_index(str(work / "trained.faiss"))
    ivf = ivf_of(index) is not None  # IVF lists store ids (shifted past what is merged); flat codes do not
    for part in ordered:
        index.merge_from(faiss.read_index(str(work / part["part"])), index.ntotal if ivf else 0)
    added = sum(part["seconds"] for part in ordered)
    made = _Made(factory, metric, search_params, training, added, training.get("device", "cpu"), started)
    report = _publish_index(index, embeddings, Path(index_dir), made)
    shutil.rmtree(work, ignore_errors=True)
    return report


@dataclass(frozen=True, slots=True)
class _Made:
    """How an index was made: what it is (factory, metric, search parameters), its training step's
    record, the seconds its vectors took to add and where, and when the merge began."""

    factory: str
    metric: str
    search_params: str
    training: dict[str, Any]
    add_seconds: float
    device: str
    started: float


def _publish_index(index: Any, embeddings: Embeddings, out: Path, made: _Made) -> IndexReport:
    """Write ``index``, its docids and ``index.json`` into ``out`` (each file atomically)."""
    factory, metric, search_params = made.factory, made.metric, made.search_params
    train_vectors, train_seconds = made.training["train_vectors"], made.training["train_seconds"]
    add_seconds, device, started = made.add_seconds, made.device, made.started
    faiss = faiss_module()
    if index.ntotal != embeddings.count:
        raise RuntimeError(f"index holds {index.ntotal} vectors, expected {embeddings.count}")
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / INDEX_FILE) as temp:
        faiss.write_index(index, str(temp))
    ids_lines = 0
    with atomic_path(out / DOCIDS_FILE) as temp, open(temp, "w", encoding="utf-8") as handle:
        for shard in embeddings.manifest["shards"]:
            lines = (embeddings.directory / shard["ids"]).read_text(encoding="utf-8").splitlines()
            ids_lines += len(lines)
            handle.writelines(f"{line}\n" for line in lines)
    if ids_lines != index.ntotal:
        raise RuntimeError(f"{ids_lines} passage ids for {index.ntotal} vectors")
    for legacy in LEGACY_FILES:  # an index rebuilt in place: no stale copy under the old names
        (out / legacy).unlink(missing_ok=True)
    size = (out / INDEX_FILE).stat().st_size
    report = IndexReport(
        factory=factory,
        metric="ip" if _metric(metric) == faiss.METRIC_INNER_PRODUCT else "l2",
        vectors=int(index.ntotal),
        dimension=embeddings.dimension,
        bytes=size,
        bytes_per_vector=round(size / max(1, index.ntotal), 2),
        docids_bytes=(out / DOCIDS_FILE).stat().st_size,
        train_vectors=train_vectors,
        train_seconds=round(train_seconds, 3),
        add_seconds=round(add_seconds, 3),
        seconds=round(time.perf_counter() - started, 3),
        index_dir=str(out),
        params=_search_params(index),
        device=device,
    )
    meta = {
        "format": INDEX_FORMAT,
        "model": embeddings.manifest["model"],
        "backend": embeddings.manifest["backend"],
        "passage_text": embeddings.manifest.get("passage_text"),
        "encoder": embeddings.manifest.get("encoder"),  # how queries must be encoded
        "embeddings_dir": str(embeddings.directory),
        "search_params": search_params,  # FAISS ParameterSpace string searches apply (e.g. "nprobe=64")
        **asdict(report),
    }
    write_report_json(out / INDEX_META, meta)
    return report


def _sub_indexes(index: Any) -> Iterator[Any]:
    """The index and the indices it wraps (pre-transform, refine, IVF), downcast to their classes."""
    faiss = faiss_module()
    seen = 0
    while index is not None and seen < 8:
        index = faiss.downcast_index(index)
        yield index
        seen += 1
        inner = getattr(index, "base_index", None) or getattr(index, "index", None)
        index = inner if inner is not None and not isinstance(inner, int) else None


def hnsw_of(index: Any) -> Any:
    faiss = faiss_module()
    index = faiss.downcast_index(index)
    if hasattr(index, "hnsw"):
        return index.hnsw
    return None


def ivf_of(index: Any) -> Any:
    faiss = faiss_module()
    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None


def _search_params(index: Any) -> dict[str, Any]:
    params: dict[str, Any] = {}
    ivf = ivf_of(index)
    if ivf is not None:
        params["nlist"] = int(ivf.nlist)
        params["nprobe"] = int(ivf.nprobe)
    hnsw = hnsw_of(index)
    if hnsw is not None:
        params["efSearch"] = int(hnsw.efSearch)
        params["efConstruction"] = int(hnsw.efConstruction)
    return params
