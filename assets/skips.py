"""Skipped input, counted the one way every reader of every domain counts it (:class:`SkipLog`): a count by
reason and the first few skips named (by file and line or offset, or by page id), merged from workers into
a build's report. A read report that lists its skips by file and place extends :class:`SkipCounts`."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SKIPS_LISTED", "SkipCounts", "SkipLog"]

SKIPS_LISTED = 20
"""Skipped items named in a report (all are counted and logged)."""

log = logging.getLogger(__name__)


@dataclass(slots=True)
class SkipLog:
    """What a read left out: ``by_reason`` counts every skip, ``named`` holds the first ``listed`` of them
    as the reader names them (a page ``"page id=12 'Anarchism': ..."``, a line ``{"file", "line", ...}``)."""

    listed: int = SKIPS_LISTED
    by_reason: Counter = field(default_factory=Counter)
    named: list[Any] = field(default_factory=list)

    def skip(self, reason: str, named: Any = None, count: int = 1) -> None:
        """``count`` skips for ``reason``; ``named`` kept when given and fewer than ``listed`` are."""
        self.by_reason[reason] += count
        if named is not None and len(self.named) < self.listed:
            self.named.append(named)

    def merge(self, other: SkipLog) -> None:
        """Add another log's counts (a worker's, a file part's) and, room permitting, its named skips."""
        self.by_reason.update(other.by_reason)
        self.named.extend(other.named[: max(self.listed - len(self.named), 0)])

    @property
    def total(self) -> int:
        return sum(self.by_reason.values())


@dataclass(slots=True)
class SkipCounts:
    """The skip fields of a read report (a reader's report dataclass extends it): a :class:`SkipLog`
    whose named skips say file, place, reason and what was there."""

    skip_log: SkipLog = field(default_factory=SkipLog)

    @property
    def skipped(self) -> int:
        return self.skip_log.total

    @property
    def skipped_by_reason(self) -> dict[str, int]:
        return dict(self.skip_log.by_reason)

    @property
    def skips(self) -> list[dict[str, Any]]:
        return self.skip_log.named

    def count_skip(
        self, what: str, path: Path | str, place: tuple[str, int], reason: str, detail: str
    ) -> None:
        """One ``what`` (``"entity"``, ``"QA pair"``) of ``path`` skipped at ``place`` (``("line", 12)``,
        ``("offset", 4096)``) for ``reason``; ``detail`` (cut to 200 characters) says what was there.
        ``path`` is a file (named by its name) or a label (a file's member: ``dump.tar.gz:part_0.ndjson``)."""
        named = {
            "file": path.name if isinstance(path, Path) else path,
            place[0]: place[1],
            "reason": reason,
            "detail": detail[:200],
        }
        self.skip_log.skip(reason, named)
        log.warning("%s (%s %d): %s skipped (%s): %s", path, *place, what, reason, detail[:200])

    def skip_counts(self) -> dict[str, Any]:
        """The skip fields as a report writes them."""
        return {
            "skipped": self.skipped,
            "skipped_by_reason": dict(sorted(self.skip_log.by_reason.items())),
            "skips": self.skips,
        }
