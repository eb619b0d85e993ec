"""Skipped input, counted the one way every reader counts it: by reason, the first few named by file and
place in the report (all of them in the log)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SKIPS_LISTED", "SkipCounts"]

SKIPS_LISTED = 20
"""Skipped items named in a report (all are counted and logged)."""

log = logging.getLogger(__name__)


@dataclass(slots=True)
class SkipCounts:
    """The skip fields of a read report (a reader's report dataclass extends it)."""

    skipped: int = 0
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    skips: list[dict[str, Any]] = field(default_factory=list)

    def count_skip(
        self, what: str, path: Path | str, place: tuple[str, int], reason: str, detail: str
    ) -> None:
        """One ``what`` (``"entity"``, ``"QA pair"``) of ``path`` skipped at ``place`` (``("line", 12)``,
        ``("offset", 4096)``) for ``reason``; ``detail`` (cut to 200 characters) says what was there.
        ``path`` is a file (named by its name) or a label (a file's member: ``dump.tar.gz:part_0.ndjson``)."""
        self.skipped += 1
        self.skipped_by_reason[reason] = self.skipped_by_reason.get(reason, 0) + 1
        if len(self.skips) < SKIPS_LISTED:
            self.skips.append(
                {
                    "file": path.name if isinstance(path, Path) else path,
                    place[0]: place[1],
                    "reason": reason,
                    "detail": detail[:200],
                }
            )
        log.warning("%s (%s %d): %s skipped (%s): %s", path, *place, what, reason, detail[:200])

    def skip_counts(self) -> dict[str, Any]:
        """The skip fields as a report writes them."""
        return {
            "skipped": self.skipped,
            "skipped_by_reason": dict(sorted(self.skipped_by_reason.items())),
            "skips": self.skips,
        }
