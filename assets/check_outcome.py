"""What an asset check measured, for every domain's checks (plain data: the Dagster modules turn it into
an ``AssetCheckResult``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CheckOutcome"]


@dataclass(slots=True)
class CheckOutcome:
    """Result of one check: pass/fail, a one-line description and figures for the UI."""

    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)
