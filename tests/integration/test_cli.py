"""The ``kiltpipe`` CLI as a user runs it (in its own process; the search and eval verbs in this one, to
load the JVM and the encoder once): JSON on stdout, exit codes, --help on every verb."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orchestration.cli import build_parser

KILTPIPE = Path(sys.executable).parent / "kiltpipe"


def run(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    completed = subprocess.run([str(KILTPIPE), *args], capture_output=True, text=True, env=env, timeout=1500)
    if check and completed.returncode != 0:
        raise AssertionError(
            f"kiltpipe {' '.join(args)} failed ({completed.returncode}):\n{completed.stderr}"
        )
    return completed


@pytest.fixture(scope="module")
def cli_env(demo_build) -> dict[str, str]:
    """The environment of the session's ``make demo`` build (read-only: verbs that write get their own
    data dir)."""
    return demo_build.env


@pytest.fixture(scope="module")
def built(demo_build) -> dict:
    """The JSON summary ``kiltpipe build`` printed."""
    return demo_build.summary


def test_help_on_every_verb(capsys: pytest.CaptureFixture[str]) -> None:
    verbs = build_parser()._subparsers._group_actions[0].choices
    assert set(verbs) >= {
        "build", "snapshots", "page", "export-ks", "import-ks", "fetch-default", "search", "eval"
    }  # fmt: skip
    completed = subprocess.run(  # the installed command, once; every verb's parser in this process
        [str(KILTPIPE), "build", "--help"], capture_output=True, text=True, check=True
    )
    assert "usage: kiltpipe build" in completed.stdout
    for verb in verbs:
        with pytest.raises(SystemExit) as stopped:
            build_parser().parse_args([verb, "--help"])
        assert stopped.value.code == 0 and "usage: kiltpipe " + verb in capsys.readouterr().out


def test_build_summary(built: dict) -> None:
    assert built["success"] is True
    ks = built["assets"]["knowledge_source"]
    assert ks["snapshot_id"] == "enwiki-20160501" and ks["pages"] == 106 and ks["redirects"] == 99
    assert all(check["passed"] for check in built["checks"].values()) and len(built["checks"]) == 20
    assert built["assets"]["knowledge_source_jsonl"]["pages"] == 106


def test_snapshots_and_page(built: dict, cli_env: dict[str, str]) -> None:
    [snapshot] = json.loads(run("snapshots", env=cli_env).stdout)
    assert snapshot["snapshot_id"] == "enwiki-20160501" and snapshot["pages"] == 106
    assert snapshot["state"] == "complete" and snapshot["incomplete"] is None
    assert snapshot["bm25_index"] is True and snapshot["dense_index"] is True  # one key per registered type
    assert snapshot["structured_passages"] is True and snapshot["structured_indexes"] == ["bm25", "dense"]
    page = json.loads(run("page", "ayn_rand", env=cli_env).stdout)
    assert page["wikipedia_title"] == "Ayn Rand" and page["text"][0] == "Ayn Rand\n"
    assert page["route"] == "xml"  # the snapshot's text came from an XML dump
    redirected = json.loads(run("page", "AynRand", "--snapshot", "enwiki-20160501", env=cli_env).stdout)
    assert redirected["wikipedia_id"] == page["wikipedia_id"] and redirected["redirected_from"] == "AynRand"
    by_id = json.loads(run("page", page["wikipedia_id"], "--by", "id", env=cli_env).stdout)
    assert by_id["wikipedia_title"] == "Ayn Rand"


def test_not_found_is_exit_1(built: dict, cli_env: dict[str, str]) -> None:
    missing = run("page", "Surely Not A Page Title", env=cli_env, check=False)
    assert missing.returncode == 1 and missing.stdout == ""
    assert (
        "page not found in snapshot enwiki-20160501" in missing.stderr and "Traceback" not in missing.stderr
    )
    unknown = run("page", "Ayn Rand", "--snapshot", "enwiki-19990101", env=cli_env, check=False)
    assert unknown.returncode == 1 and "snapshot 'enwiki-19990101' is not built" in unknown.stderr


def test_export_and_import(built: dict, cli_env: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "ks.jsonl"
    exported = json.loads(run("export-ks", "--out", str(out), "--quiet", env=cli_env).stdout)
    assert exported["pages"] == 106 and out.is_file()
    other = {**cli_env, "KILT_DATA_DIR": str(tmp_path / "data")}
    imported = json.loads(run("import-ks", str(out), "--snapshot", "kilt-copy", "--quiet", env=other).stdout)
    assert imported["pages"] == 106
    [copy] = json.loads(run("snapshots", env=other).stdout)
    assert copy["snapshot_id"] == "kilt-copy" and copy["state"] == "complete" and copy["pages"] == 106
    assert copy["bm25_index"] is False and copy["dense_index"] is False
    unbuilt = run("search", "anything", "--snapshot", "kilt-copy", env=other, check=False)
    assert unbuilt.returncode == 1 and "no BM25 index for snapshot kilt-copy" in unbuilt.stderr


def test_bad_dump_is_a_clear_error(cli_env: dict[str, str], tmp_path: Path, excerpt: Path) -> None:
    truncated = tmp_path / "half.xml.bz2"
    truncated.write_bytes(excerpt.read_bytes()[:400_000])
    # another data dir: a Dagster home of its own (the demo's records the demo's data dir only)
    env = {**cli_env, "KILT_DATA_DIR": str(tmp_path / "data"), "DAGSTER_HOME": str(tmp_path / "home")}
    unnamed = run("build", "--dump", str(truncated), "--quiet", env=env, check=False)
    assert unnamed.returncode == 2 and "half.xml.bz2: the bz2 stream is truncated" in unnamed.stderr
    completed = run(
        "build", "--dump", str(truncated), "--snapshot", "enwiki-20160501", "--quiet", env=env, check=False
    )
    assert completed.returncode == 2
    summary = json.loads(completed.stdout)
    assert summary["success"] is False and "half.xml.bz2: the bz2 stream is truncated" in summary["error"]
    assert not (tmp_path / "data" / "snapshots").exists() or not any(
        p.name.startswith("enwiki") for p in (tmp_path / "data" / "snapshots").iterdir()
    )
    missing = run("build", "--dump", str(tmp_path / "nope.xml"), "--quiet", env=env, check=False)
    assert missing.returncode == 2 and "dump not found" in missing.stderr


def test_build_text_style_option(kiltpipe, small_excerpt: Path, tmp_path: Path) -> None:
    """``--text-style`` reaches the converter: every page is the parser's output in that style, the
    manifest records it, and building again in the other style replaces the text."""
    from assets.storage import SnapshotPaths
    from assets.wikipedia.dump import DumpReader
    from assets.wikipedia.pages import iter_pages
    from assets.wikipedia.wikitext import parse_wikitext

    wikitext = {p.title: p.text for p in DumpReader(small_excerpt) if p.ns == 0 and p.redirect_target is None}
    paths = SnapshotPaths(tmp_path / "data", "enwiki-20160501")
    texts = {}
    for style in ("clean", "kilt"):
        code, _, err = kiltpipe(
            "build", "--data-dir", paths.data_dir, "--dump", small_excerpt, "--text-style", style,
            "--select", "+key:knowledge_source", "--quiet",
        )  # fmt: skip
        assert code == 0, err
        assert json.loads(paths.manifest_file.read_text())["text_style"] == style
        texts[style] = {page["wikipedia_title"]: page["text"] for page in iter_pages(paths)}
        assert texts[style] == {t: parse_wikitext(t, w, style=style).text for t, w in wikitext.items()}
    assert texts["kilt"] != texts["clean"]


def test_a_dagster_home_records_the_snapshots_of_one_data_dir(
    kiltpipe, small_excerpt: Path, tmp_path: Path
) -> None:
    """A build writes the data dir into its DAGSTER_HOME; a build of another data dir under the same home
    (once: its partitions joined this instance's, their paths elsewhere) is refused before it touches
    anything, saying which home to give it."""
    first, other = tmp_path / "data", tmp_path / "other"
    code, _, err = kiltpipe(
        "build", "--data-dir", first, "--dump", small_excerpt, "--select", "+key:knowledge_source", "--quiet"
    )
    assert code == 0, err
    mark = tmp_path / "dagster_home" / "kiltpipe-data-dir"
    assert mark.read_text().strip() == str(first.resolve())
    code, _, err = kiltpipe(
        "build", "--data-dir", other, "--dump", small_excerpt, "--select", "+key:knowledge_source", "--quiet"
    )
    assert code == 2 and f"records the snapshots of the data dir {first.resolve()}" in err
    assert f"DAGSTER_HOME={other.resolve() / '.dagster_home'}" in err and not other.exists()


def test_build_without_the_dense_index(
    kiltpipe, small_excerpt: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``indexes.build: [bm25]`` (CPU-only machines at enwiki scale): ``build_all`` makes every asset but
    the dense index, its checks do not run, the snapshot is complete and evaluated on BM25; asking for the
    dense index, or evaluating a search on it, is a clear error naming the keys."""
    import yaml

    from assets.indexes.evaluation import retrieval_reports_dir
    from assets.storage import SnapshotPaths, build_state
    from support.generator.scale_runs import bench_params, ensure_dataset

    paths = SnapshotPaths(tmp_path / "data", "enwiki-20160501")
    params_file = bench_params(paths.data_dir, paths.snapshot_id, tmp_path / "dataset", dense=False)
    settings = yaml.safe_load(params_file.read_text())
    assert settings["indexes"]["build"] == ["bm25"] and settings["indexes"]["evaluation"]["indexes"] == [
        "bm25"
    ]
    monkeypatch.setenv("KILT_PARAMS", str(params_file))
    code, _, err = kiltpipe(
        "build", "--data-dir", paths.data_dir, "--dump", small_excerpt, "--select", "+key:knowledge_source"
    )
    assert code == 0, err
    ensure_dataset(paths, tmp_path / "dataset", records=200, seed=0)  # records drawn from these pages

    code, printed, err = kiltpipe("build", "--data-dir", paths.data_dir, *SNAPSHOT, "--quiet")
    assert code == 0, err
    summary = json.loads(printed)
    assert {"bm25_index", "remapped_datasets", "retrieval_evaluation"} <= set(summary["assets"])
    assert not any("dense" in name for name in [*summary["assets"], *summary["checks"]]), summary
    assert any("bm25" in name for name in summary["checks"]), summary["checks"]
    assert (
        paths.bm25_index.is_dir() and not paths.dense_embeddings.exists() and not paths.dense_index.exists()
    )
    assert build_state(paths.data_dir, paths.snapshot_id).complete
    reports = retrieval_reports_dir(paths.data_dir / "reports", paths.snapshot_id)
    table = json.loads((reports / "retrieval.json").read_text())["table"]
    assert table and {row["index"] for row in table} == {"bm25"}

    code, _, err = kiltpipe("build", "--data-dir", paths.data_dir, *SNAPSHOT, "--select", "key:dense_index")
    assert code == 2 and "dense_index" in err and "indexes.build" in err, err
    settings["indexes"]["evaluation"]["indexes"] = ["bm25", "hybrid"]
    (tmp_path / "hybrid.yaml").write_text(yaml.safe_dump(settings))  # a new file: params are read once
    monkeypatch.setenv("KILT_PARAMS", str(tmp_path / "hybrid.yaml"))
    code, _, err = kiltpipe("build", "--data-dir", paths.data_dir, *SNAPSHOT, "--select", "key:bm25_index")
    assert code == 2 and "'hybrid' searches the dense index" in err, err


SNAPSHOT = ("--snapshot", "enwiki-20160501")


@pytest.fixture
def on_demo(kiltpipe, demo_build):
    """Verbs run in this process (the JVM and the encoder load once for all of them) on the demo build."""
    return lambda *args: kiltpipe(*args, "--data-dir", demo_build.data_dir)


@pytest.mark.parametrize("index", ["bm25", "dense", "hybrid"])
def test_search_prints_json_hits(on_demo, index: str) -> None:
    query = "Which Greek hero was killed by an arrow in his heel?"
    code, out, _ = on_demo("search", query, "--index", index, "--k", "5", *SNAPSHOT)
    hits = json.loads(out)
    assert code == 0 and len(hits) == 5 and hits[0]["title"] == "Achilles"
    assert set(hits[0]) == {"passage_id", "wikipedia_id", "kind", "title", "score", "text"}
    assert {hit["kind"] for hit in hits} == {"text"}  # the text passages unless --collection says otherwise
    assert all(h["text"] and h["passage_id"].startswith(h["wikipedia_id"] + "-") for h in hits)


def test_the_cli_has_the_limits_the_server_has(on_demo, kiltpipe, demo_build) -> None:
    """``--k`` over limits.search.max_k is refused before anything loads (3,000,000,000 grew the process to
    23 GB; 2,147,483,648 ended in a Java traceback); ``serve --host 256.1.1.1`` fails at once naming the
    option (it used to load the indices for 18 s, then fail with gaierror); a 2,000-word query is cut, and
    the cut said on stderr."""
    import time

    from support.hostile_load import long_query

    for k in ("3000000000", "2147483648", "1001"):
        started = time.monotonic()
        code, _, err = on_demo("search", "x", "--index", "dense", "--k", k, *SNAPSHOT)
        assert code == 2 and "limits.search.max_k" in err and time.monotonic() - started < 2, err
    started = time.monotonic()
    code, _, err = on_demo("serve", "--host", "256.1.1.1", "--port", "0")
    assert code == 2 and "--host 256.1.1.1" in err and time.monotonic() - started < 5, err
    query = long_query(demo_build.paths.passages_parquet, 2000)
    code, out, err = on_demo("search", query, "--index", "bm25", "--k", "3", *SNAPSHOT)
    assert code == 0 and len(json.loads(out)) == 3 and "limits.search.max_query_terms" in err, err
    code, out, _ = kiltpipe("limits")
    settings = {row["setting"]: row["value"] for row in json.loads(out)}
    assert code == 0 and settings["limits.search.max_k"] == 1000
    assert settings["limits.network.bind_host"] == "127.0.0.1"


def test_the_limits_page_lists_every_limit() -> None:
    """docs/limits.md names every setting of the limits model with its default."""
    from assets.limits import describe_limits

    page = (Path(__file__).parents[2] / "docs" / "limits.md").read_text(encoding="utf-8")
    for row in describe_limits():
        default = f"{row['default']:,}" if isinstance(row["default"], int) else str(row["default"])
        assert f"| `{row['setting']}` | {default} |" in page, row["setting"]


def test_batch_search_writes_kilt_and_trec(on_demo, kiltpipe, demo_build, tmp_path: Path) -> None:
    """Topics: the real FEVER claims shipped with the project (TSV id<TAB>claim)."""
    from assets.datasets.pipeline import embedded_specs

    [fever] = [spec for spec in embedded_specs() if spec.dataset == "fever"]
    topics = [line.split("\t") for line in Path(fever.path).read_text().splitlines() if line.strip()]
    kilt = tmp_path / "run.jsonl"
    code, out, err = on_demo(
        "search", "--topics", fever.path, "--index", "hybrid", "--k", "20", "--output", kilt, *SNAPSHOT
    )
    summary = json.loads(out)
    assert code == 0 and summary["topics"] == len(topics) and summary["format"] == "kilt", err
    records = [json.loads(line) for line in kilt.read_text().splitlines()]
    assert [r["id"] for r in records] == [t[0] for t in topics]
    provenance = records[0]["output"][0]["provenance"]
    assert len(provenance) == 20
    assert {
        "wikipedia_id",
        "section",
        "start_paragraph_id",
        "start_character",
        "end_paragraph_id",
        "end_character",
        "text",
    } <= set(provenance[0])
    # the run, evaluated by KILT's rules against the remapped split, scores what the evaluation asset
    # reported for the same index (the same top 20 pages per claim)
    gold = demo_build.paths.datasets / "fever-dev-kilt.jsonl"
    code, out, err = kiltpipe("eval", "--guess", kilt, "--gold", gold, "--ks", "1,5,10,20")
    assert code == 0, err
    scored = json.loads(out)["retrieval"]
    report = json.loads(
        (
            demo_build.data_dir / "reports" / demo_build.paths.snapshot_id / "retrieval" / "retrieval.json"
        ).read_text()
    )
    [row] = [
        r
        for r in report["table"]
        if r["dataset"] == "fever-dev" and r["index"] == "hybrid" and r["collection"] == "text"
    ]
    for name in (
        "Rprec",
        "precision@1",
        "recall@5",
        "recall@20",
        "success_rate@20",
        "answer_in_context@5",
        "entity_in_context@5",
    ):
        assert round(scored[name], 4) == row[name], name
    trec = tmp_path / "run.trec"
    topics_args = ("--topics", fever.path, "--index", "bm25", "--k", "20")
    code, _, err = on_demo("search", *topics_args, "--output", trec, "--format", "trec", *SNAPSHOT)
    assert code == 0, err
    lines = [line.split() for line in trec.read_text().splitlines()]
    assert len(lines) == 20 * len(topics) and lines[0][1] == "Q0" and lines[0][3] == "1"
    assert lines[0][5] == "kilt-bm25"
    code, _, err = on_demo("search", *SNAPSHOT)
    assert code == 2 and "QUERY or --topics" in err


def test_eval_prints_kilt_metrics(on_demo, tmp_path: Path) -> None:
    code, out, err = on_demo(
        "eval", "--index", "bm25", "--index", "dense", "--reports-dir", tmp_path, *SNAPSHOT
    )
    results = json.loads(out)
    assert code == 0 and {(r["dataset"], r["index"]) for r in results["table"]} == {
        (d, i) for d in ("fever-dev", "hotpotqa-dev") for i in ("bm25", "dense")
    }
    assert "KILT retrieval metrics" in err and "Rprec" in err
    assert (tmp_path / "enwiki-20160501" / "retrieval" / "retrieval.md").is_file()
