"""Where researchers already work, on the session's ``make demo`` build of the real excerpt: the snapshot as
a Hugging Face dataset (loaded back with the real ``datasets`` package, offline, for every config), pushed
with ``huggingface_hub`` up to the upload call; its BM25 and FAISS indexes opened as they are by pyserini's
own ``LuceneSearcher`` and ``FaissSearcher``; a remapped dataset in BEIR's layout, read by BEIR's own
``GenericDataLoader``."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from dagster import DagsterInstance

from assets.exports.beir import export_beir
from assets.exports.huggingface import export_huggingface, kilt_record, licence_of, push_to_hub
from assets.exports.target import EXPORT_MANIFEST, ExportError
from assets.indexes.collections import collection_view
from assets.indexes.retriever import Retriever
from assets.indexes.settings import IndexSettings
from orchestration.definitions import build_definitions, defs
from orchestration.resources import SNAPSHOTS, PipelineSettings

QUERIES = [
    "Who developed the general theory of relativity?",
    "What is the capital city of Albania?",
    "fraction of sunlight reflected by a surface",
    "Greek hero of the Trojan War killed by an arrow in the heel",
    "anarchism as a political philosophy",
]


def _rows(files: list[Path]) -> int:
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def _card_configs(out: Path) -> dict[str, dict[str, str]]:
    front = (out / "README.md").read_text().split("---")[1]
    return {
        c["config_name"]: {f["split"]: f["path"] for f in c["data_files"]}
        for c in yaml.safe_load(front)["configs"]
    }


@pytest.fixture(scope="module")
def hf_export(demo_build, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("hf") / "repo"
    # a 1 MB shard limit: the excerpt's passages and pages span several files, as enwiki's do at 500 MB
    report = export_huggingface(demo_build.paths, out, max_shard_bytes=10**6, batch_rows=50)
    return demo_build.paths, out, report


def test_every_config_loads_with_the_datasets_package_offline(
    hf_export, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datasets

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    paths, out, report = hf_export
    configs = _card_configs(out)
    corpus = ["passages", "pages", "redirects", "structured_passages"]  # tables and infoboxes too
    kb = ["kb_passages", "kb_entities", "kb_statements"]  # the snapshot's Wikidata KB
    assert list(configs)[:7] == corpus + kb
    corpus += kb
    mapped = {name for name in configs if name not in corpus}
    summary = json.loads((paths.datasets / "mapping_summary.json").read_text())
    assert mapped == {s["dataset"] for s in summary if s["records_out"]} and mapped
    expected = {
        "passages": _rows(sorted(paths.passages_parquet.glob("*.parquet"))),
        "pages": _rows(sorted(paths.pages_dir.glob("*.parquet"))),
        "redirects": _rows([paths.redirects_file]),
        "structured_passages": _rows(sorted(paths.structured_parquet.glob("*.parquet"))),
        "kb_passages": _rows(sorted((paths.kb_facts / "parquet").glob("*.parquet"))),
        "kb_entities": _rows(sorted((paths.wikidata / "entities").glob("*.parquet"))),
        "kb_statements": _rows(sorted((paths.wikidata / "statements").glob("*.parquet"))),
    }
    assert (
        len(report.configs["passages"].splits["train"]) > 1
        and len(report.configs["pages"].splits["train"]) > 1
    )
    sizes = sorted(path.stat().st_size for path in out.rglob("*.parquet"))
    assert sizes[-1] <= 10**6 and sizes[-2] > 0.5 * 10**6  # cut at the limit, not far below it
    for name, splits in configs.items():
        for split in splits:
            loaded = datasets.load_dataset(str(out), name, split=split, cache_dir=str(tmp_path / "cache"))
            if name in expected:
                assert loaded.num_rows == expected[name], name
            else:
                assert loaded.num_rows == report.configs[name].rows[split] > 0
                jsonl = paths.datasets / f"{name}-{split}-kilt.jsonl"
                originals = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
                assert [kilt_record(row) for row in loaded] == originals, f"{name} {split} lost something"
    passages = datasets.load_dataset(str(out), "passages", split="train", cache_dir=str(tmp_path / "cache"))
    first = pq.read_table(sorted(paths.passages_parquet.glob("*.parquet"))[0]).slice(0, 3).to_pylist()
    assert passages.select(range(3)).to_list() == first
    pages = datasets.load_dataset(str(out), "pages", split="train", cache_dir=str(tmp_path / "cache"))
    assert pages[0]["wikipedia_title"] == "Anarchism" and pages[0]["text"][0].startswith("Anarchism")


def test_the_card_says_licence_source_counts_rules_and_citation(hf_export) -> None:
    paths, out, report = hf_export
    card = (out / "README.md").read_text()
    front = yaml.safe_load(card.split("---")[1])
    assert front["license"] == "cc-by-sa-3.0"  # a 2016 dump: before Wikipedia's move to CC BY-SA 4.0
    assert licence_of("enwiki-20240601") == "cc-by-sa-4.0"
    assert "enwiki-20160501" in card and "petroni-etal-2021-kilt" in card
    dump_files = json.loads(paths.manifest_file.read_text())["dump_files"]
    assert dump_files and all(f"`{name}`" in card for name in dump_files)  # the dump it came from
    assert f"{report.configs['passages'].rows['train']:,}" in card
    manifest = json.loads((out / EXPORT_MANIFEST).read_text())
    rules = json.loads(paths.passages_report.read_text())
    assert manifest["passage_rules"] == {k: rules[k] for k in ("max_words", "mode", "chunker_version")}
    assert manifest["passage_rules"]["max_words"] == 100
    assert manifest["build_manifest"] == json.loads(paths.manifest_file.read_text())


def test_an_export_replaces_its_earlier_self_but_never_a_user_folder(hf_export, tmp_path: Path) -> None:
    paths, out, _ = hf_export
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    export_huggingface(paths, out, max_shard_bytes=10**6, batch_rows=50)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    theirs = tmp_path / "notes"
    theirs.mkdir()
    (theirs / "thesis.tex").write_text("mine")
    with pytest.raises(ExportError, match="holds files that no export wrote"):
        export_huggingface(paths, theirs)
    assert (theirs / "thesis.tex").read_text() == "mine" and len(list(theirs.iterdir())) == 1


def test_a_re_export_never_deletes_what_the_user_put_beside_it(hf_export, tmp_path: Path) -> None:
    """An earlier export plus the user's own NOTES.txt, a ``git init`` and a sub-folder: the re-export is
    refused naming them, before a byte is written; the same export into a clean copy replaces it."""
    import shutil
    import subprocess

    paths, out, _ = hf_export
    mine = shutil.copytree(out, tmp_path / "export")
    (mine / "NOTES.txt").write_text("my notes")
    subprocess.run(["git", "init", "-q", str(mine)], check=True)
    (mine / "drafts").mkdir()
    (mine / "drafts" / "plot.py").write_text("print(1)")
    (mine / "passages" / "mine.parquet").write_text("not an export shard")
    before = {p: p.stat().st_mtime_ns for p in mine.rglob("*")}
    with pytest.raises(ExportError) as refused:
        export_huggingface(paths, mine, max_shard_bytes=10**6, batch_rows=50)
    message = str(refused.value)
    assert "did not write" in message and str(mine / "NOTES.txt") in message
    assert str(mine / ".git") in message and str(mine / "drafts") in message
    assert {p: p.stat().st_mtime_ns for p in mine.rglob("*")} == before  # nothing touched
    assert not list(tmp_path.glob(".tmp-*"))  # nothing assembled beside it either
    with pytest.raises(ExportError, match=r"holds a Hugging Face export .* not a BEIR export"):
        export_beir(paths, "nq_open", out)  # export-beir into an HF export: refused, not replaced
    assert json.loads((out / EXPORT_MANIFEST).read_text())["kind"] == "huggingface"
    listed = json.loads((out / EXPORT_MANIFEST).read_text())["files"]
    assert sorted(listed) == sorted(
        p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and p.name != EXPORT_MANIFEST
    )


def test_the_cli_refuses_a_re_export_over_user_files(kiltpipe, hf_export, tmp_path: Path) -> None:
    import shutil

    paths, out, _ = hf_export
    mine = shutil.copytree(out, tmp_path / "export")
    (mine / "NOTES.txt").write_text("my notes")
    code, _, err = kiltpipe("export-hf", "--data-dir", paths.data_dir, "--out", mine)
    assert code == 2 and f"{mine / 'NOTES.txt'}" in err and (mine / "NOTES.txt").read_text() == "my notes"
    code, _, err = kiltpipe(
        "export-beir", "--data-dir", paths.data_dir, "--dataset", "nq_open", "--out", mine
    )
    assert code == 2 and "holds a Hugging Face export" in err


def test_push_uploads_the_folder_as_a_dataset_repository(hf_export, monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to the upload call: huggingface_hub's HfApi is replaced by a recorder (no network here)."""
    import huggingface_hub

    _, out, _ = hf_export
    calls: list[tuple[str, dict]] = []

    class RecordingApi:
        def __init__(self, token=None) -> None:
            calls.append(("init", {"token": token}))

        def create_repo(self, repo_id, **kwargs):
            calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))

        def upload_folder(self, **kwargs):
            calls.append(("upload_folder", kwargs))
            return type(
                "Commit", (), {"commit_url": f"https://huggingface.co/datasets/{kwargs['repo_id']}/commit/1"}
            )

    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingApi)
    url = push_to_hub(out, "kilt-org/enwiki-20160501", private=True)
    assert url.endswith("/commit/1")
    assert calls[1] == (
        "create_repo",
        {"repo_id": "kilt-org/enwiki-20160501", "repo_type": "dataset", "private": True, "exist_ok": True},
    )
    upload = calls[2][1]
    assert upload["folder_path"] == out and upload["repo_type"] == "dataset"
    assert "enwiki-20160501" in upload["commit_message"]


def test_the_export_asset_runs_in_its_own_job_and_not_in_build_all(demo_build, tmp_path: Path) -> None:
    graph = defs.resolve_asset_graph()
    assert "huggingface_export" in {k.to_user_string() for k in graph.get_all_asset_keys()}
    build_all = {
        k.to_user_string() for k in defs.resolve_job_def("build_all").asset_layer.selected_asset_keys
    }
    assert "huggingface_export" not in build_all
    data_dir = demo_build.copy(tmp_path / "data")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(SNAPSHOTS.name, ["enwiki-20160501"])
    job = build_definitions(PipelineSettings(data_dir=str(data_dir))).resolve_job_def("export_huggingface")
    result = job.execute_in_process(instance=instance, partition_key="enwiki-20160501", raise_on_error=False)
    assert result.success
    out = data_dir / "exports" / "huggingface" / "enwiki-20160501"
    meta = result.get_asset_materialization_events()[0].step_materialization_data.materialization.metadata
    assert meta["rows_passages"].value == _rows(sorted(out.glob("passages/*.parquet"))) > 6000
    assert (out / "README.md").is_file() and json.loads((out / EXPORT_MANIFEST).read_text())["snapshot_id"]


# ------------------------------------------------------------------------------------- pyserini
@pytest.mark.parametrize("collection", ["text", "structured"])
def test_pyserini_lucene_searcher_opens_the_bm25_index_as_it_is(demo_build, collection: str) -> None:
    from assets.indexes.bm25 import import_pyserini

    LuceneSearcher = import_pyserini("pyserini.search.lucene").LuceneSearcher
    paths = demo_build.paths
    index = paths if collection == "text" else collection_view(paths, "structured")  # indexes/structured/bm25
    searcher = LuceneSearcher(str(index.bm25_index))
    settings = IndexSettings.from_params()
    searcher.set_bm25(settings.bm25.k1, settings.bm25.b)
    with Retriever(paths, settings) as ours:
        for query in QUERIES:
            theirs = [hit.docid for hit in searcher.search(query, k=10)]
            mine = ours.search("bm25", query, 10, collection=collection)
            assert theirs == [hit.passage_id for hit in mine], query
    assert json.loads(searcher.doc(theirs[0]).raw())["id"] == theirs[0]


@pytest.mark.parametrize("collection", ["text", "structured"])
def test_pyserini_faiss_searcher_opens_the_dense_index_as_it_is(demo_build, collection: str) -> None:
    from assets.indexes.bm25 import import_pyserini
    from assets.indexes.dense.encoders import default_model_dir

    FaissSearcher = import_pyserini("pyserini.search.faiss").FaissSearcher
    AutoQueryEncoder = import_pyserini("pyserini.encode").AutoQueryEncoder
    paths = demo_build.paths
    index = (
        paths if collection == "text" else collection_view(paths, "structured")
    )  # indexes/structured/dense/faiss
    encoder = AutoQueryEncoder(encoder_dir=str(default_model_dir()), pooling="mean", l2_norm=True)
    searcher = FaissSearcher(str(index.dense_index), encoder)
    assert searcher.num_docs == len((index.dense_index / "docid").read_text().splitlines())
    with Retriever(paths, IndexSettings.from_params()) as ours:
        for query in QUERIES:
            theirs = searcher.search(query, k=10)
            mine = ours.search("dense", query, 10, with_text=False, collection=collection)
            assert [h.docid for h in theirs] == [h.passage_id for h in mine], query
            assert [float(h.score) for h in theirs] == pytest.approx([h.score for h in mine], abs=1e-4)


# ------------------------------------------------------------------------------------- BEIR
def test_beir_generic_data_loader_reads_the_export(demo_build, tmp_path: Path) -> None:
    import duckdb
    from beir.datasets.data_loader import GenericDataLoader

    paths = demo_build.paths
    with duckdb.connect(str(paths.datasets_db), read_only=True) as con:
        dataset, split = con.execute(
            "SELECT dataset, split FROM provenance_passages GROUP BY ALL ORDER BY count(*) DESC, 1, 2"
        ).fetchone()
        spans = con.execute(
            "SELECT record_id, list(DISTINCT passage_id) FROM provenance_passages "
            "WHERE dataset = ? AND split = ? GROUP BY record_id",
            [dataset, split],
        ).fetchall()
        pages = dict(
            con.execute(
                "SELECT record_id, list(DISTINCT wikipedia_id) FROM provenance "
                "WHERE dataset = ? AND split = ? GROUP BY record_id",
                [dataset, split],
            ).fetchall()
        )
        records = con.execute(
            "SELECT count(*) FROM records WHERE dataset = ? AND split = ?", [dataset, split]
        ).fetchone()[0]
    out = tmp_path / "beir"
    report = export_beir(paths, dataset, out)
    corpus, queries, qrels = GenericDataLoader(str(out)).load(split=split)
    assert len(corpus) == report.corpus == _rows(sorted(paths.passages_parquet.glob("*.parquet")))
    assert set(queries) == set(qrels) == {record for record, _ in spans}
    assert {q: set(d) for q, d in qrels.items()} == {r: set(p) for r, p in spans}
    assert all(score == 1 for docs in qrels.values() for score in docs.values())
    assert report.splits[[s.split for s in report.splits].index(split)].queries == records
    # page level: every passage of each provenance page is relevant
    _, _, page_qrels = GenericDataLoader(str(out), qrels_folder="qrels-page").load(split=split)
    with duckdb.connect(str(paths.provenance_store), read_only=True) as store:
        page_of = dict(store.execute("SELECT passage_id, wikipedia_id FROM passages").fetchall())
    for record, docs in page_qrels.items():
        assert {page_of[d] for d in docs} == set(pages[record])
        assert set(qrels.get(record, {})) <= set(docs)
    sample = next(iter(queries))
    line = next(
        json.loads(x)
        for x in (out / "queries.jsonl").read_text().splitlines()
        if json.loads(x)["_id"] == sample
    )
    assert line["metadata"]["split"] == split and isinstance(line["metadata"]["answers"], list)
    with pytest.raises(ExportError, match="no dataset 'nope'"):
        export_beir(paths, "nope", tmp_path / "other")
    fever = export_beir(paths, "fever", tmp_path / "fever")  # the shipped FEVER qrels name pages, no spans
    assert fever.page_only_splits == ["dev"] and not (tmp_path / "fever" / "qrels").exists()
    _, fever_queries, _ = GenericDataLoader(str(tmp_path / "fever"), qrels_folder="qrels-page").load(
        split="dev"
    )
    assert len(fever_queries) == fever.splits[0].queries_with_page_qrels == fever.splits[0].queries > 0
    with pytest.raises(ExportError, match="no record has provenance"):  # NQ-open: answers only
        export_beir(paths, "nq_open", tmp_path / "other")
    assert not (tmp_path / "other").exists()


def test_beir_export_with_every_collection(demo_build, kiltpipe, tmp_path: Path) -> None:
    """``--collection both``: the corpus has every text passage, then every table and infobox with its kind,
    then every KB passage (what a search of ``both`` ranks); page-level qrels take a provenance page's
    passages of every collection too; passage-level qrels are the text's."""
    import duckdb
    from beir.datasets.data_loader import GenericDataLoader

    paths = demo_build.paths
    text = export_beir(paths, "fever", tmp_path / "text")
    code, out, _ = kiltpipe(
        "export-beir", "--data-dir", demo_build.data_dir, "--dataset", "fever", "--out", tmp_path / "both",
        "--collection", "both",
    )  # fmt: skip
    both = json.loads(out)
    structured = pq.read_table(paths.structured_parquet, columns=["passage_id", "kind", "wikipedia_id"])
    kb = pq.read_table(paths.kb_facts / "parquet", columns=["passage_id", "wikipedia_id"])
    assert code == 0 and both["collection"] == "both" and kb.num_rows > 0
    assert both["corpus_structured"] == structured.num_rows and both["corpus_kb"] == kb.num_rows
    assert both["corpus"] == text.corpus + structured.num_rows + kb.num_rows
    lines = (tmp_path / "both" / "corpus.jsonl").read_text().splitlines()
    assert lines[: text.corpus] == (tmp_path / "text" / "corpus.jsonl").read_text().splitlines()
    tail = [json.loads(line) for line in lines[text.corpus :]]
    ids = structured.column("passage_id").to_pylist() + kb.column("passage_id").to_pylist()
    assert [r["_id"] for r in tail] == ids
    kinds = structured.column("kind").to_pylist() + ["kb"] * kb.num_rows
    assert [r["metadata"]["kind"] for r in tail] == kinds
    corpus, _, qrels = GenericDataLoader(str(tmp_path / "both"), qrels_folder="qrels-page").load(split="dev")
    _, _, text_qrels = GenericDataLoader(str(tmp_path / "text"), qrels_folder="qrels-page").load(split="dev")
    assert len(corpus) == both["corpus"]
    page_of = {}
    for table in (structured, kb):
        page_of.update(zip(*table.select(["passage_id", "wikipedia_id"]).to_pydict().values(), strict=True))
    with duckdb.connect(str(paths.provenance_store), read_only=True) as store:
        page_of.update(store.execute("SELECT passage_id, wikipedia_id FROM passages").fetchall())
    added = set()
    for record, docs in qrels.items():
        assert set(text_qrels[record]) <= set(docs)
        assert {page_of[d] for d in docs} == {page_of[d] for d in text_qrels[record]}
        added |= set(docs) - set(text_qrels[record])
    assert added & set(structured.column("passage_id").to_pylist())  # FEVER's pages have tables or infoboxes
    with pytest.raises(ExportError, match="text passages or both"):
        export_beir(paths, "fever", tmp_path / "bad", collection="structured")


def test_the_cli_exports_and_pushes(
    demo_build, kiltpipe, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kiltpipe export-hf --push`` (huggingface_hub replaced by a recorder) and ``export-beir``, as a user
    runs them: JSON on stdout, exit 0; a bad dataset name exits 2 with the mapped ones named."""
    import huggingface_hub

    uploaded: list[dict] = []

    class RecordingApi:
        def __init__(self, token=None) -> None:
            pass

        def create_repo(self, repo_id, **kwargs):
            pass

        def upload_folder(self, **kwargs):
            uploaded.append(kwargs)
            return type("Commit", (), {"commit_url": "https://huggingface.co/datasets/org/name/commit/2"})

    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingApi)
    data = str(demo_build.data_dir)
    code, out, err = kiltpipe("export-hf", "--data-dir", data, "--out", tmp_path / "hf", "--push", "org/name")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["pushed"].endswith("/commit/2") and uploaded[0]["repo_id"] == "org/name"
    assert summary["configs"]["passages"]["rows"]["train"] == summary["rows_passages"] > 6000
    code, out, err = kiltpipe(
        "export-beir", "--data-dir", data, "--dataset", "hotpotqa", "--out", tmp_path / "b"
    )
    assert code == 0, err
    assert json.loads(out)["splits"][0]["qrels"] > 0 and (tmp_path / "b" / "qrels" / "dev.tsv").is_file()
    code, _, err = kiltpipe("export-beir", "--data-dir", data, "--dataset", "nope", "--out", tmp_path / "c")
    assert code == 2 and "mapped: fever, hotpotqa, nq_open" in err
