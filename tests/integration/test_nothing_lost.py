"""Nothing lost, nothing blocked: hostile names, racing builds, lookups during a rebuild, tiny dumps.

Each test reproduces what a user (or an attacker) did on a fresh clone, on real excerpt pages:
a dataset name that overwrote a snapshot file, two builds of one snapshot at once, lookups that failed
while the newest snapshot was rebuilt, a one-article dump whose recall check divided by 10, and the
smaller failures seen on the way (disk full, redirect-only dump, an empty --snapshot, a gold record
without an answer).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from assets.storage import build_state, read_record
from support.dump_variants import (
    article_subset,
    field,
    is_article,
    page_with_title,
    read_xml,
    set_text,
    split_dump,
    write_dump,
)
from support.real_data import real_file

KILTPIPE = Path(sys.executable).parent / "kiltpipe"
SNAPSHOT = "enwiki-20160501"
UP_TO_KS = "+key:knowledge_source"
FIXTURES = Path(__file__).parents[2] / "assets" / "datasets" / "fixtures"
HOTPOTQA = FIXTURES / "hotpotqa-dev-excerpt-kilt.jsonl"


def _tree_digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` (but the lock files, whose holder record changes) and its sha256."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.suffix != ".lock"
    }


# ------------------------------------------------------------------------------ 1. names are not paths
HOSTILE = [
    ("../../../../../ESCAPED_DS", "dev"),
    ("/tmp/kilt-hostile/ABS_DS", "dev"),
    ("../../../knowledge_source/pages/part", "00000"),
    ("nq", "../../../knowledge_source/pages/part-00000"),
    ("..", "dev"),
    ("a/b", "dev"),
    (".hidden", "dev"),
    ("nq", ""),
    ("nq", "dev/../../x"),
]


def test_user_names_never_become_paths(kiltpipe, tmp_path: Path, small_excerpt: Path, monkeypatch) -> None:
    data = tmp_path / "work" / "data"
    code, _, err = kiltpipe(
        "build", "--data-dir", data, "--dump", small_excerpt, "--select", "+key:provenance_store", "--quiet"
    )
    assert code == 0, err
    derived = tmp_path / "hotpot qa!-dev-kilt.jsonl"  # a name taken from the file is checked as well
    derived.write_bytes(HOTPOTQA.read_bytes())
    before = _tree_digest(tmp_path)
    for dataset, split in HOSTILE:
        code, _, err = kiltpipe("map", HOTPOTQA, "--data-dir", data, "--dataset", dataset, "--split", split)
        refused = "is not valid" in err or "must not be empty" in err  # "": refused by the option's type
        assert code == 2 and refused and "Traceback" not in err, (dataset, split, err)
    code, _, err = kiltpipe("map", derived, "--data-dir", data, "--format", "kilt")
    assert code == 2 and "is not valid" in err and "--dataset" in err, err
    assert _tree_digest(tmp_path) == before  # nothing written, nothing replaced, inside or outside
    assert not Path("/tmp/kilt-hostile").exists()
    assert build_state(data, SNAPSHOT).complete
    code, _, err = kiltpipe("export-ks", "--data-dir", data, "--out", tmp_path / "ks.jsonl", "--quiet")
    assert code == 0, err

    # the same names through params.yaml and through a Dagster run config
    settings = tmp_path / "params.yaml"
    settings.write_text(
        "datasets:\n  files:\n    - {path: " + str(HOTPOTQA) + ", dataset: ../../../knowledge_source}\n"
    )
    monkeypatch.setenv("KILT_PARAMS", str(settings))
    from assets import params

    params.load_params.cache_clear()
    try:
        code, _, err = kiltpipe("build", "--data-dir", data, "--select", "key:remapped_datasets", "--quiet")
    finally:
        monkeypatch.undo()
        params.load_params.cache_clear()
    assert code == 2 and "datasets.files: files[0].dataset '../../../knowledge_source' is not valid" in err
    snapshot_files = {k: v for k, v in before.items() if k.startswith("work/data/snapshots/")}
    assert {
        f"work/data/snapshots/{k}": v for k, v in _tree_digest(data / "snapshots").items()
    } == snapshot_files

    from dagster import AssetKey, DagsterInstance

    from orchestration.definitions import build_definitions
    from orchestration.resources import SNAPSHOTS, PipelineSettings

    job = build_definitions(PipelineSettings(data_dir=str(data))).resolve_job_def("build_all")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SNAPSHOTS.name, [SNAPSHOT])
    pages = sorted((data / "snapshots" / SNAPSHOT / "knowledge_source" / "pages").glob("*.parquet"))
    page_bytes = [p.read_bytes() for p in pages]
    hostile = {"files": [{"path": str(HOTPOTQA), "dataset": "../knowledge_source/pages/part", "split": "0"}]}
    result = job.execute_in_process(
        run_config={"ops": {"remapped_datasets": {"config": hostile}}},
        instance=instance,
        partition_key=SNAPSHOT,
        raise_on_error=False,
        asset_selection=[AssetKey("remapped_datasets")],
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure).step_failure_data.error
    assert "is not valid" in str(failure.to_string())
    assert [p.read_bytes() for p in pages] == page_bytes
    assert build_state(data, SNAPSHOT).complete


# ---------------------------------------------------------------------------------- 2. racing builds
def test_two_builds_at_once_one_finishes_the_other_is_refused(tmp_path: Path, tiny_excerpt: Path) -> None:
    """Two `kiltpipe build` of one snapshot started together, on a fresh Dagster home each time: twice at
    least, up to five times until one build was refused."""
    outcomes = []
    for attempt in range(5):
        data, home = tmp_path / f"data{attempt}", tmp_path / f"home{attempt}"
        env = {**os.environ, "DAGSTER_HOME": str(home)}
        command = [str(KILTPIPE), "build", "--data-dir", str(data), "--dump", str(tiny_excerpt)]
        command += ["--select", "+key:passages", "--quiet"]
        builds = [
            subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        results = [(build.wait(timeout=600), *build.communicate()) for build in builds]
        codes = sorted(code for code, _, _ in results)
        outcomes.append(codes)
        assert codes[0] == 0, results  # the build that holds the lock always finishes
        for code, out, err in results:
            for raw in ("Traceback", "IntegrityError", "OperationalError", "Nonexistent partition"):
                assert raw not in err, err
            if code != 0:
                assert code == 2 and out == "" and f"snapshot {SNAPSHOT} is being built by pid" in err
        assert build_state(data, SNAPSHOT).complete
        assert (data / "snapshots" / SNAPSHOT / "passages" / "report.json").is_file()
        from dagster import DagsterInstance

        from orchestration.resources import SNAPSHOTS

        with DagsterInstance.from_config(str(home)) as instance:  # the partition survives the refused build
            assert instance.has_dynamic_partition(SNAPSHOTS.name, SNAPSHOT)
        if attempt >= 1 and [0, 2] in outcomes:  # two races at least, one of them really run
            break
    assert [0, 2] in outcomes, outcomes  # the race was really run


# ---------------------------------------------------------------------- 3. lookups during a rebuild
def test_lookups_keep_working_while_the_newest_snapshot_is_rebuilt(
    kiltpipe, tmp_path: Path, tiny_excerpt: Path
) -> None:
    data = tmp_path / "data"
    selection = "+key:bm25_index or +key:provenance_store"
    code, _, err = kiltpipe("build", "--data-dir", data, "--dump", tiny_excerpt, "--select", selection)
    assert code == 0, err
    version = read_record(data, SNAPSHOT)["version"]
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "rebuild_home")}
    rebuild = subprocess.Popen(
        [str(KILTPIPE), "build", "--data-dir", str(data), "--dump", str(tiny_excerpt), "--force",
         "--select", selection, "--quiet"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lookups, failures, during = 0, [], 0
    try:
        while rebuild.poll() is None or lookups < 4:
            for args in (("page", "Actrius"), ("search", "Actrius film", "--index", "bm25", "--k", "3")):
                code, out, err = kiltpipe(*args, "--data-dir", data)
                lookups += 1
                during += rebuild.poll() is None
                if code != 0 or not json.loads(out):
                    failures.append((args, code, err[-300:]))
    finally:
        _, rebuild_err = rebuild.communicate(timeout=600)
    assert rebuild.returncode == 0, rebuild_err
    assert failures == [] and during >= 4, (during, failures)
    assert read_record(data, SNAPSHOT)["version"] != version  # the new version was swapped in
    assert not (data / "snapshots" / ".staging").exists()


# ------------------------------------------------------------------------ 4. every size builds green
def _one_stub(excerpt: Path, out: Path) -> Path:
    """The excerpt's Actrius article alone: 8 passages, fewer than the recall check's k of 10."""
    return write_dump(
        out / "enwiki-20160501-pages-articles.xml", article_subset(read_xml(excerpt), ["Actrius"])
    )


def _article_and_redirect(excerpt: Path, out: Path) -> Path:
    """Two pages: the Actrius article and a real redirect page of the excerpt pointed at it."""
    header, pages, footer = split_dump(read_xml(excerpt))
    redirect = next(p for p in pages if b"<redirect" in p)
    redirect = set_text(redirect, b"#REDIRECT [[Actrius]]")
    article = page_with_title(pages, "Actrius")
    return write_dump(out / "enwiki-20160501-pages-articles.xml", header + article + redirect + footer)


@pytest.mark.parametrize("dump", ["pear", "one_stub", "article_and_redirect"])
def test_every_check_holds_on_one_and_two_page_dumps(
    kiltpipe, tmp_path: Path, excerpt: Path, dump: str
) -> None:
    if dump == "pear":  # pywikibot's test dump: the Pear article alone
        path = real_file("wikipedia", "pywikibot_article-pear-0.10.xml")
    elif dump == "one_stub":
        path = _one_stub(excerpt, tmp_path)
    else:
        path = _article_and_redirect(excerpt, tmp_path)
    code, out, err = kiltpipe("build", "--data-dir", tmp_path / "data", "--dump", path, "--quiet")
    assert code == 0, err
    summary = json.loads(out)
    failed = {name: check for name, check in summary["checks"].items() if not check["passed"]}
    assert failed == {} and len(summary["checks"]) >= 14
    recall = summary["assets"]["dense_index"]
    assert summary["checks"]["dense_approximate_recall"]["description"].count("recall@") == 1
    if dump == "one_stub":
        assert (
            recall["vectors"] == 8
            and "recall@8 1.000" in summary["checks"]["dense_approximate_recall"]["description"]
        )


def test_a_dump_of_redirects_only_says_why_nothing_was_built(kiltpipe, tmp_path: Path, excerpt: Path) -> None:
    header, pages, footer = split_dump(read_xml(excerpt))
    redirect = next(p for p in pages if b"<redirect" in p)
    path = write_dump(tmp_path / "enwiki-20160501-pages-articles.xml", header + redirect + footer)
    code, _, err = kiltpipe("build", "--data-dir", tmp_path / "data", "--dump", path, "--quiet")
    assert code == 2
    assert (
        "no article could be built (1 pages read: 1 redirects; a KILT knowledge source holds articles" in err
    )
    assert "skipped: {}" not in err
    assert not (tmp_path / "data" / "snapshots" / SNAPSHOT).exists()  # no empty snapshot folder


# ------------------------------------------------------------------------------ 6. smaller things
def _write_on_a_full_disk(path: str) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)


def test_a_full_disk_is_one_line_naming_the_file(tmp_path: Path) -> None:
    """The error a worker process sends back (a ProcessPoolExecutor, as the conversion workers) is said in
    one line: the file, and that the disk is full; not the worker's traceback text."""
    from dagster._utils.error import serializable_error_info_from_exc_info

    from orchestration.build_guard import error_line

    target = str(tmp_path / "part-00003.parquet")
    with ProcessPoolExecutor(1) as pool:
        try:
            pool.submit(_write_on_a_full_disk, target).result()
        except OSError:
            info = serializable_error_info_from_exc_info(sys.exc_info())
    line = error_line(info)
    assert line.startswith(f"disk full: cannot write {target} (No space left on device; ")
    assert line.endswith(" free there); free space and build again")
    assert "\n" not in line and "_RemoteTraceback" not in line


def test_page_props_of_another_table_needs_force(kiltpipe, tmp_path: Path, small_excerpt: Path) -> None:
    from support.sql_dumps import PAGE_PROPS_DDL, page_props_rows, sql_dump_text, write_gz

    data = tmp_path / "data"
    code, _, err = kiltpipe("build", "--data-dir", data, "--dump", small_excerpt, "--select", UP_TO_KS)
    assert code == 0, err
    _, pages, _ = split_dump(read_xml(small_excerpt))  # the real pages' display titles, as the wiki has them
    rows = page_props_rows([], [(int(field(p, "id")), "displaytitle", field(p, "title")) for p in pages])
    table = write_gz(tmp_path / "props.sql.gz", sql_dump_text("page_props", PAGE_PROPS_DDL, rows))
    code, _, err = kiltpipe(
        "build", "--data-dir", data, "--dump", small_excerpt, "--page-props", table,
        "--select", UP_TO_KS, "--quiet",
    )  # fmt: skip
    assert code == 2 and "was built with the page_props table (none)" in err and "--force" in err
    code, _, err = kiltpipe(
        "build", "--data-dir", data, "--dump", small_excerpt, "--page-props", table, "--force",
        "--select", UP_TO_KS, "--quiet",
    )  # fmt: skip
    assert code == 0, err


def test_verify_repro_refuses_an_empty_snapshot_id(kiltpipe, tmp_path: Path) -> None:
    code, _, err = kiltpipe("verify-repro", "--data-dir", tmp_path, "--snapshot", "")
    assert code == 2 and "argument --snapshot: must not be empty" in err


def test_eval_scores_retrieval_when_a_gold_record_has_no_answer(kiltpipe, tmp_path: Path) -> None:
    """Real HotpotQA KILT dev records; one derived gold record keeps its provenance but loses its answer.
    KILT's retrieval script scores such a file, its downstream script cannot."""
    records = [json.loads(line) for line in HOTPOTQA.read_text().splitlines()]
    gold = [dict(records[0], output=[{"provenance": records[0]["output"][0].get("provenance", [])}])]
    gold += records[1:]
    gold = [g for g in gold if any("provenance" in o for o in g["output"])]
    guess = []
    for g in gold:
        cited = [p for o in g["output"] for p in o.get("provenance", [])][:1]
        guess.append({"id": g["id"], "output": [{"answer": "x", "provenance": cited}]})
    gold_file, guess_file = tmp_path / "gold.jsonl", tmp_path / "guess.jsonl"
    gold_file.write_text("".join(json.dumps(g) + "\n" for g in gold))
    guess_file.write_text("".join(json.dumps(g) + "\n" for g in guess))
    code, out, err = kiltpipe("eval", "--gold", gold_file, "--guess", guess_file)
    assert code == 0, err
    result = json.loads(out)
    assert result["retrieval"]["Rprec"] > 0 and "downstream" not in result
    assert f"gold records have no answer (first: {gold[0]['id']})" in result["downstream_not_computed"]
    assert "kiltpipe: downstream metrics not computed" in err


def test_two_pages_are_really_two(excerpt: Path, tmp_path: Path) -> None:
    """The two-page dump above: one article and one redirect to it."""
    _, pages, _ = split_dump(read_xml(_article_and_redirect(excerpt, tmp_path)))
    assert len(pages) == 2 and [is_article(p) for p in pages] == [True, False]
    assert field(pages[0], "title") == "Actrius"


# ------------------------------------------------------------------ 7. hostile dumps, said in the report
def test_a_page_over_the_size_limit_and_an_external_entity_are_reported(
    kiltpipe, tmp_path: Path, excerpt: Path
) -> None:
    """A valid dump whose one page is 9 MiB of wikitext (a few KB of bz2; MediaWiki refuses pages over
    2 MiB) and another page referring to an external entity: the build takes the rest, and its report
    names both pages (id, size or entity) in the skipped counts and examples."""
    import re

    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    header, pages, footer = split_dump(read_xml(excerpt))
    anarchism, autism = page_with_title(pages, "Anarchism"), page_with_title(pages, "Autism")
    text = re.search(rb"<text[^>]*>(.*)</text>", anarchism, re.S)[1]
    huge = set_text(anarchism, text * (9 * 2**20 // len(text) + 1))
    hostile = autism.replace(b"</text>", b"&xxe;</text>", 1)
    doctype = f'<!DOCTYPE mediawiki [<!ENTITY xxe SYSTEM "file://{secret}">]>\n'.encode()
    rest = [p for p in pages[:30] if p not in (anarchism, autism)]
    xml = header.replace(b"<mediawiki", doctype + b"<mediawiki", 1) + huge + hostile + b"".join(rest) + footer
    dump = write_dump(tmp_path / "enwiki-20160501-pages-articles.xml.bz2", xml, compression="bz2")
    assert dump.stat().st_size < 2 * 2**20
    data = tmp_path / "data"
    code, _, err = kiltpipe("build", "--data-dir", data, "--dump", dump, "--select", UP_TO_KS, "--quiet")
    assert code == 0, err
    report = json.loads((data / "snapshots" / SNAPSHOT / "knowledge_source" / "report.json").read_text())
    assert report["skipped"]["page_too_large"] == 1 and report["skipped"]["external_entity_dropped"] == 1
    examples = "\n".join(report["skipped_examples"])
    assert "page id=12 'Anarchism': 9," in examples and "over knowledge_source.max_page_bytes" in examples
    assert f"page id=25 'Autism': external XML entity 'file://{secret}' dropped" in examples
    table = pq.read_table(data / "snapshots" / SNAPSHOT / "knowledge_source" / "pages")
    ids = {str(page_id) for page_id in table.column("wikipedia_id").to_pylist()}
    assert "12" not in ids and "25" in ids and len(ids) == report["articles"]
    assert "TOP SECRET" not in json.dumps(table.to_pylist(), default=str)


def test_a_failed_import_leaves_no_lock_and_no_scratch_folder(kiltpipe, tmp_path: Path) -> None:
    """An import whose file is not a KILT knowledge source: refused, and nothing of it is left."""
    bad = tmp_path / "kilt_knowledgesource.json"
    bad.write_text(HOTPOTQA.read_text())  # real KILT records, of a dataset: not pages
    data = tmp_path / "data"
    code, _, err = kiltpipe("import-ks", str(bad), "--data-dir", data, "--quiet")
    assert code == 2, err
    left = sorted(str(p.relative_to(data)) for p in data.rglob("*")) if data.exists() else []
    assert not [p for p in left if p.endswith(".lock") or ".work" in p or p.startswith("snapshots/")], left
