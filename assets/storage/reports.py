"""Reports written reproducibly: run facts (clock, command line) apart from the content DVC hashes."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assets.files import write_json_atomic

RUN_FACTS_SUFFIX = ".run.json"  # DVC ignores these (.dvcignore): they differ between two builds of one input
# the clock, the command line (temp paths), and what Lucene recorded of the host before it was pinned
_RUN_FACT_KEYS = frozenset({"built_at", "written_at", "command", "unpinned_diagnostics"})


def is_run_fact(key: str, value: Any) -> bool:
    """A value that describes one run rather than the artifact: wall time, rate, clock, absolute path."""
    if key in _RUN_FACT_KEYS or key == "seconds" or key.endswith(("_seconds", "_per_second")):
        return True
    if isinstance(value, str):
        return os.path.isabs(value)
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, str) and os.path.isabs(v) for v in value)
    )


def read_report_json(path: Path) -> Any:
    """A report :func:`write_report_json` wrote, its run facts (absolute paths, timings) merged back in."""
    content = json.loads(Path(path).read_text())
    facts_path = run_facts_file(Path(path))
    if facts_path.is_file():
        facts = json.loads(facts_path.read_text())
        facts.pop("written_at", None)
        content = _merged(content, facts["items"] if isinstance(content, list) else facts)
    return content


def _merged(content: Any, facts: Any) -> Any:
    """``content`` with the run facts :func:`split_run_facts` took out of it put back."""
    if isinstance(content, dict) and isinstance(facts, dict):
        merged = dict(content)
        for key, value in facts.items():
            merged[key] = _merged(merged[key], value) if key in merged else value
        return merged
    if isinstance(content, list) and isinstance(facts, list) and len(content) == len(facts):
        return [_merged(item, item_facts) for item, item_facts in zip(content, facts, strict=True)]
    return content


def split_run_facts(payload: Any) -> tuple[Any, Any]:
    """``(content, facts)``: ``payload`` without its run facts, and the run facts alone (same nesting)."""
    if isinstance(payload, dict):
        content: dict[str, Any] = {}
        facts: dict[str, Any] = {}
        for key, value in payload.items():
            if is_run_fact(str(key), value):
                facts[key] = value
                continue
            content[key], nested = split_run_facts(value)
            if nested:
                facts[key] = nested
        return content, facts
    if isinstance(payload, list) and any(isinstance(v, dict) for v in payload):
        pairs = [split_run_facts(v) for v in payload]
        nested_facts = [f for _, f in pairs]
        return [c for c, _ in pairs], nested_facts if any(nested_facts) else {}
    return payload, {}


def run_facts_file(path: Path) -> Path:
    """``report.json`` -> ``report.run.json``."""
    return path.with_name(path.stem + RUN_FACTS_SUFFIX)


def write_report_json(path: Path, payload: Any) -> None:
    """Write ``payload`` as two files: its content (byte-identical whenever the inputs are) at ``path``,
    and its run facts (timings, rates, clock, absolute paths) beside it in ``*.run.json``.

    DVC versions the first and ignores the second, so ``dvc repro`` of unchanged inputs reproduces
    every hash in ``dvc.lock``; nothing measured is lost.
    """
    content, facts = split_run_facts(payload)
    write_json_atomic(path, content)
    written_at = datetime.now(UTC).isoformat(timespec="seconds")
    record = (
        {"written_at": written_at, **facts}
        if isinstance(facts, dict)
        else {"written_at": written_at, "items": facts}
    )
    write_json_atomic(run_facts_file(path), record)
