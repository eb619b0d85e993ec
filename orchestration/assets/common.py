"""What every domain's Dagster module shares: assets and checks of the snapshot partitions, owned by the
team, and a check's result naming the snapshot it checked."""

from __future__ import annotations

import warnings
from typing import Any

import dagster as dg

from assets.check_outcome import CheckOutcome
from orchestration.resources import OWNERS, SNAPSHOTS, SnapshotHandle, path_entries

__all__ = ["check_result", "snapshot_asset", "snapshot_check", "snapshot_graph_asset", "snapshot_multi_asset"]


def snapshot_asset(group: str, **options: Any) -> Any:
    """``@asset`` partitioned by snapshot, owned by :data:`~orchestration.resources.OWNERS`, in ``group``."""
    return dg.asset(owners=OWNERS, group_name=group, partitions_def=SNAPSHOTS, **options)


def snapshot_graph_asset(group: str, **options: Any) -> Any:
    """``@graph_asset`` partitioned by snapshot, owned by :data:`~orchestration.resources.OWNERS`, in
    ``group``."""
    return dg.graph_asset(owners=OWNERS, group_name=group, partitions_def=SNAPSHOTS, **options)


def snapshot_multi_asset(group: str, **options: Any) -> Any:
    """``@multi_asset`` partitioned by snapshot, in ``group``: one step that writes several assets (each
    ``AssetOut`` names its owners: :data:`~orchestration.resources.OWNERS`)."""
    return dg.multi_asset(group_name=group, partitions_def=SNAPSHOTS, **options)


def snapshot_check(**options: Any) -> Any:
    """``@asset_check`` partitioned by snapshot: each result is kept under the snapshot it checked, so the
    UI's check history shows its partition and a failed check leads to its snapshot. Dagster calls
    partitioned checks a preview: its warning is silenced here, the pinned Dagster's behaviour is tested
    (``test_blocking_check_stops_downstream``, the UI test)."""

    def decorate(function: Any) -> Any:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=dg.PreviewWarning)
            return dg.asset_check(partitions_def=SNAPSHOTS, **options)(function)

    return decorate


def check_result(outcome: CheckOutcome, snapshot: SnapshotHandle) -> dg.AssetCheckResult:
    """A check's result naming the snapshot it checked, in its description and metadata (with its folder),
    beside the partition Dagster records."""
    return dg.AssetCheckResult(
        passed=outcome.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        description=f"snapshot {snapshot.paths.snapshot_id}: {outcome.description}",
        metadata={
            "snapshot": snapshot.paths.snapshot_id,
            **path_entries("snapshot_path", snapshot.paths.root),  # published: staging is gone after
            **{
                key: dg.MetadataValue.json(value) if isinstance(value, (list, dict)) else value
                for key, value in outcome.metadata.items()
            },
        },
    )
