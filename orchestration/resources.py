"""Dagster resources shared by every asset group: settings, the snapshot partitions and the IO managers."""

from __future__ import annotations

import contextlib
import functools
import json
import multiprocessing
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dagster import (
    ConfigurableIOManager,
    ConfigurableResource,
    DagsterInvariantViolationError,
    DynamicPartitionsDefinition,
    InitResourceContext,
    InputContext,
    MetadataValue,
    TableColumn,
    TableSchema,
)

from assets import params
from assets.files import write_json_atomic
from assets.storage import SnapshotPaths, build_paths, in_data_dir, published_path, registered_dump
from assets.wikipedia.dump import EMBEDDED_SNAPSHOT_ID, ensure_embedded_dump
from assets.worker_pools import die_with_parent
from orchestration.dagster_home import claim_home

OWNERS = ["team:kilt-pipeline"]
"""Who answers for every asset (the UI's owners column)."""

SNAPSHOTS = DynamicPartitionsDefinition(name="snapshots")
"""Every asset is partitioned by snapshot id (``{dbname}-{YYYYMMDD}``, e.g. ``enwiki-20160501``)."""


def path_metadata(path: Path | str) -> Any:
    """A path as Dagster metadata: where it lives once the build publishes (a path in the build's staging
    folder is gone by the time anyone reads the metadata)."""
    return MetadataValue.path(str(Path(published_path(path)).absolute()))  # the same from the UI and the CLI


def column_schema(parquet_glob: str) -> dict[str, Any]:
    """``{"dagster/column_schema": ...}``: the columns of the first Parquet file ``parquet_glob`` matches
    (read from the file: always what was written), as the UI shows a table's schema; ``{}`` when none."""
    import glob

    import pyarrow.parquet as pq

    files = sorted(glob.glob(parquet_glob))
    if not files:
        return {}
    schema = pq.read_schema(files[0])
    return {"dagster/column_schema": TableSchema(columns=[TableColumn(f.name, str(f.type)) for f in schema])}


def path_entries(key: str, path: Path | str) -> dict[str, Any]:
    """``{key: the published path}``, and for a snapshot artifact ``{key}_in_data_dir``: the same path
    relative to the data dir (``snapshots/<id>/...``)."""
    entries = {key: path_metadata(path)}
    relative = in_data_dir(path)
    if relative is not None:
        entries[f"{key}_in_data_dir"] = relative.as_posix()
    return entries


def float_metadata(value: float) -> Any:
    """A float as the UI shows it: 2 decimals from 1 up (seconds, rates), else 4 significant digits."""
    return MetadataValue.float(shown_float(value))


def shown_float(value: float) -> float:
    """``value`` rounded for reading (see :func:`float_metadata`); not-a-number and infinities kept."""
    if value != value or value in (float("inf"), float("-inf")):
        return value
    return round(value, 2) if abs(value) >= 1 else float(f"{value:.4g}")


def dagster_metadata(values: dict[str, Any]) -> dict[str, Any]:
    """A report's plain ``metadata()`` as Dagster metadata: paths as paths, floats as floats, lists and
    dicts as JSON, the rest as it is."""
    converted: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, Path):
            converted.update(path_entries(key, value))
        elif isinstance(value, float):
            converted[key] = float_metadata(value)
        elif value == "":  # the UI shows an empty value as nothing at all
            converted[key] = "none"
        elif isinstance(value, (list, tuple, dict)):
            converted[key] = MetadataValue.json(value)
        else:
            converted[key] = value
    return converted


_BUILT_IN = params.Params()


class PipelineSettings(ConfigurableResource):
    """Where artifacts live, how much parallelism a build may use, and which `params.yaml` its assets
    read (`PipelineSettings.from_params()` fills these from it; the field defaults are the built-in ones).

    (Markdown, not reStructuredText: the Dagster UI shows this text as the resource's description.)"""

    data_dir: str = _BUILT_IN.data_dir
    progress_bars: bool = False
    params_file: str | None = None  # absolute path; None: $KILT_PARAMS or ./params.yaml

    @classmethod
    def from_params(cls, **overrides: Any) -> PipelineSettings:
        """The settings of ``params.yaml`` (``$KILT_DATA_DIR`` wins for the data dir), then ``overrides``."""
        values = {
            "data_dir": str(params.data_dir()),
            "params_file": str(params.params_path().resolve()),
        }
        return cls(**{**values, **{k: v for k, v in overrides.items() if v is not None}})

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """A step in a process of its own (the multiprocess executor's, Dask's) ends with the process that
        started it: a run worker killed (``kill -9``, run monitoring) leaves no step behind to record a
        materialization after the run failed (:func:`assets.worker_pools.die_with_parent`). A run on a
        persistent instance (``make ui``'s, the daemon's, a sensor's, the CLI's) ties its Dagster home to
        this data dir, or is refused when the home records another one (:mod:`orchestration.dagster_home`)."""
        if multiprocessing.parent_process() is not None:
            die_with_parent(os.getppid())
        instance = context.instance
        if instance is None or instance.is_ephemeral:
            return
        problem = claim_home(Path(instance.root_directory), self.data_path, "dagster-webserver ...")
        if problem:
            raise ValueError(problem)

    def params_relative(self, name: str) -> Path:
        """A path that params.yaml names: a relative one is read from params.yaml's folder."""
        return (Path(self.params_file).parent if self.params_file else Path.cwd()) / name

    @property
    def params(self) -> params.Params:
        """The pipeline's parameters (read once per process)."""
        return params.load_params(Path(self.params_file) if self.params_file else None)

    def incremental(self, override: bool | None) -> bool:
        """Whether to reuse the previous snapshot's work: a run config's ``incremental``, else
        ``snapshots.incremental``."""
        return self.params.snapshots.incremental if override is None else override


@dataclass(frozen=True)
class DumpHandle:
    """The dump files a snapshot is built from (one file, or the parts of a multi-part dump), who chose
    them (``source``: cli, landing, config, embedded) and how they were verified (``details``)."""

    files: tuple[str, ...]
    source: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def embedded(self) -> bool:
        return self.source == "embedded"

    @classmethod
    def of(cls, entry: dict[str, Any]) -> DumpHandle:
        """The handle of a dump registry entry (``assets.storage.registered_dump``)."""
        details = {k: v for k, v in entry.items() if k not in ("snapshot_id", "files", "source")}
        return cls(tuple(entry["files"]), entry["source"], details)

    def to_dict(self) -> dict[str, Any]:
        return {"files": list(self.files), "source": self.source, **self.details}


def recorded_dump(data_dir: Path, snapshot_id: str, how_to_choose: str) -> DumpHandle:
    """The dump the snapshot's knowledge source was last published from, else the embedded excerpt for
    its id; else a :class:`LookupError` saying how to choose one (``how_to_choose``, then the CLI)."""
    entry = registered_dump(data_dir, snapshot_id)
    if entry is not None:
        return DumpHandle.of(entry)
    if snapshot_id == EMBEDDED_SNAPSHOT_ID:
        return DumpHandle((str(ensure_embedded_dump(data_dir)),), "embedded")
    raise LookupError(
        f"snapshot {snapshot_id}: no dump is recorded for it in {data_dir / 'dumps'}; {how_to_choose}, "
        "or build it with `kiltpipe build --dump FILE`"
    )


def run_dump_file(data_dir: str | Path, run_id: str) -> Path:
    """Where a run keeps the dump its ``wikipedia_dump`` step chose, until its knowledge source is
    published (then the dump registry records it)."""
    return Path(data_dir) / ".steps" / run_id / "wikipedia_dump.json"


@dataclass(frozen=True)
class SnapshotHandle:
    """A built snapshot (what downstream assets and checks receive)."""

    data_dir: str
    snapshot_id: str

    @functools.cached_property
    def paths(self) -> SnapshotPaths:
        """The snapshot as this run's build sees it: its staging folder (the run holds the lock for as
        long as a handle lives, one step, so the lock is probed once per handle)."""
        return build_paths(self.data_dir, self.snapshot_id)


class SnapshotIOManager(ConfigurableIOManager):
    """Artifacts are directories under `data_dir`; between assets only the partition key travels.

    Nothing is pickled: a downstream asset of snapshot S receives `SnapshotHandle(data_dir, S)` (and the
    dump asset's consumer the registered dump files), so steps run by other processes, DVC stages and
    snapshots imported outside Dagster all load the same way.
    """

    data_dir: str = _BUILT_IN.data_dir  # build_definitions sets the pipeline's

    def handle_output(self, context: Any, obj: Any) -> None:
        if isinstance(obj, DumpHandle):  # kept for this run's knowledge_source step (see load_input)
            write_json_atomic(run_dump_file(self.data_dir, context.run_id), obj.to_dict())
        elif not isinstance(obj, SnapshotHandle):
            name = context.asset_key.to_user_string()
            raise TypeError(f"{name} returned {type(obj).__name__}, not a snapshot or dump handle")

    def load_input(self, context: InputContext) -> SnapshotHandle | DumpHandle:
        # the run's partition: asset checks on a partitioned asset are not partition-scoped in Dagster 1.13
        # (their input covers every partition), but every step of a run belongs to its one snapshot
        snapshot_id = context.partition_key if context.has_partition_key else context.asset_partition_key
        data_dir = Path(self.data_dir)
        upstream = context.upstream_output
        if upstream is not None and upstream.asset_key.path == ["wikipedia_dump"]:
            try:  # the run that chose the dump: this one, or the failed run a re-execution resumes
                run_id = upstream.run_id
            except DagsterInvariantViolationError:  # not materialized in this run (nor its parent's)
                run_id = context.step_context.run_id
            return self._dump(data_dir, snapshot_id, run_id)
        handle = SnapshotHandle(str(data_dir.resolve()), snapshot_id)
        if not handle.paths.knowledge_source.is_dir():
            raise LookupError(
                f"snapshot {snapshot_id} has no knowledge source under {handle.paths.root}; "
                "materialize knowledge_source for this partition first"
            )
        return handle

    @staticmethod
    def _dump(data_dir: Path, snapshot_id: str, run_id: str) -> DumpHandle:
        """The dump this run's ``wikipedia_dump`` step chose; without one in this run, the dump the
        snapshot's knowledge source was last published from, or the embedded excerpt for its id."""
        chosen = run_dump_file(data_dir, run_id)
        if chosen.is_file():
            values = json.loads(chosen.read_text())
            return DumpHandle.of({"snapshot_id": snapshot_id, **values})
        return recorded_dump(data_dir, snapshot_id, "materialize wikipedia_dump with dump_paths")


STEP_IO_MANAGER = "step_io_manager"


class StepIOManager(ConfigurableIOManager):
    """Small JSON values between the steps inside one asset's graph (a shard to encode, what it did).

    Written under `<data_dir>/.steps/<run id>/<step>/`, so any process or Dask worker that sees the data
    dir reads them; JSON, not pickles. A run's folder goes when its last step (the asset) succeeds.
    """

    data_dir: str = _BUILT_IN.data_dir  # build_definitions sets the pipeline's

    def _path(self, identifier: list[str]) -> Path:
        return Path(self.data_dir) / ".steps" / Path(*identifier).with_suffix(".json")

    def handle_output(self, context: Any, obj: Any) -> None:
        write_json_atomic(self._path(context.get_identifier()), obj)

    def load_input(self, context: InputContext) -> Any:
        assert context.upstream_output is not None
        return json.loads(self._path(context.upstream_output.get_identifier()).read_text())


def step_scratch(data_dir: str | Path, run_id: str, asset_name: str) -> Path:
    """A folder for files the steps of one graph asset in a run share (removed with their values)."""
    return Path(data_dir) / ".steps" / run_id / f"{asset_name}.scratch"


def remove_step_values(data_dir: str | Path, run_id: str, asset_name: str) -> None:
    """Delete what :class:`StepIOManager` (and, for ``wikipedia_dump``, the snapshot IO manager) kept for
    the steps of one graph asset in a run (its last step has read them all), and the run's folder once it
    is empty."""
    run_dir = Path(data_dir) / ".steps" / run_id
    for leftover in run_dir.glob(f"{asset_name}.*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        run_dir.rmdir()
