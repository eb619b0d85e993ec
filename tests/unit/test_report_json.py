"""Reports are written as reproducible content plus run facts, and read back whole."""

import json
from pathlib import Path

from assets.storage import read_report_json, run_facts_file, write_report_json

SPLIT = {"dataset": "nq", "records_in": 3, "seconds": 1.5, "spans_per_second": 2.0, "bleu": {"1.0": 3}}


def test_a_list_report_reads_back_with_its_run_facts(tmp_path: Path) -> None:
    path = tmp_path / "mapping_summary.json"
    payload = [SPLIT, {**SPLIT, "dataset": "fever", "seconds": 0.25}]
    write_report_json(path, payload)
    content = json.loads(path.read_text())
    assert all("seconds" not in item and "spans_per_second" not in item for item in content)
    facts = json.loads(run_facts_file(path).read_text())["items"]
    assert facts[1] == {"seconds": 0.25, "spans_per_second": 2.0}
    assert read_report_json(path) == payload


def test_lists_nested_in_a_report_read_back_with_their_run_facts(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    payload = {"snapshot": "enwiki-20260101", "wall_seconds": 9.0, "splits": [SPLIT, SPLIT], "command": "/x"}
    write_report_json(path, payload)
    assert set(json.loads(path.read_text())) == {"snapshot", "splits"}
    assert read_report_json(path) == payload
