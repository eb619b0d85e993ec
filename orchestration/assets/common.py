"""What every domain's Dagster module shares: assets of the snapshot partitions, owned by the team."""

from __future__ import annotations

from typing import Any

import dagster as dg

from orchestration.resources import OWNERS, SNAPSHOTS

__all__ = ["snapshot_asset", "snapshot_graph_asset", "snapshot_multi_asset"]


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
