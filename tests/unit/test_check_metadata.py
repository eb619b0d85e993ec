"""Issue 63, part 9: a check's metadata names where the snapshot is once published, never the build's
staging folder (gone after the build: 26 of the 85 paths the UI showed)."""

from __future__ import annotations

from pathlib import Path

from assets.check_outcome import CheckOutcome
from assets.input_forms import ENTERPRISE_FORM, XML_FORM
from assets.storage import SnapshotPaths, staging_root
from orchestration.assets.common import check_result
from orchestration.resources import SnapshotHandle


def test_a_check_names_the_published_snapshot(tmp_path: Path) -> None:
    handle = SnapshotHandle(str(tmp_path), "enwiki-20160501")
    staged = SnapshotPaths(tmp_path, "enwiki-20160501", staging_root(tmp_path, "enwiki-20160501"))
    handle.__dict__["paths"] = staged  # as a build's step sees it: the staging folder
    result = check_result(CheckOutcome(True, "fine", {}), handle)
    shown = result.metadata["snapshot_path"].value
    assert "/.staging/" not in shown and shown == str((tmp_path / "snapshots" / "enwiki-20160501").absolute())
    assert result.metadata["snapshot_path_in_data_dir"].value == "snapshots/enwiki-20160501"


def test_the_route_is_said_where_a_user_looks() -> None:
    """The knowledge source's metadata names its route and counts what that route read: ``html_bytes`` on
    the HTML route (it said ``xml_bytes`` / ``xml_mb_per_second`` for an Enterprise dump)."""
    from assets.wikipedia.schema import KnowledgeSourceReport

    report = KnowledgeSourceReport("s", "d", 1, "gzip", 1000, "enwiki", "en", route=ENTERPRISE_FORM)
    shown = report.metadata()
    assert shown["route"] == ENTERPRISE_FORM and shown["html_bytes"] == 1000 and "html_mb_per_second" in shown
    assert not any(key.startswith("xml_") for key in shown)
    xml = KnowledgeSourceReport("s", "d", 1, "bz2", 1000, "enwiki", "en").metadata()
    assert xml["route"] == XML_FORM and xml["xml_bytes"] == 1000
