"""Adding a collection is one registration (issues 55 and 64): a collection owns its document lookup and
its tables in the provenance store, so nothing else names it.

A fresh interpreter registers ``leads`` (each page's first text passage of the demo build, derived in code
from its Parquet, under ids ``<page>-l0``), its passages stored as the table ``lead_passages``, builds its
BM25 index with the same builder as every other collection and the provenance store with the store's own
build, and then, with no other line of code: ``kiltpipe search --collection leads`` (the CLI's choices
come from the registry) ranks the Anarchism lead first; the store looks a lead up by its id and a hit
without text gets its title and text from the store; a search of every collection (``both``) merges it
in; ``--topics ... --output`` writes KILT output whose provenance is the lead's span on the page; the
Hugging Face export publishes ``lead_passages`` as a config and the BEIR export of ``both`` puts the
leads in its corpus and its page-level qrels.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, sys
from operator import attrgetter
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from assets.exports import export_beir, export_huggingface
from assets.indexes import Hit
from assets.indexes.collection_indexes import build_collection_indexes
from assets.indexes.collections import Collection, register_collection
from assets.provenance_store import ProvenanceStore, StoredPassages, build_store
from assets.indexes.settings import IndexSettings
from assets.reading import Snapshot
from assets.storage import resolve_snapshot
from assets.wikipedia.passages import SPAN_COLUMNS

register_collection(
    Collection(
        "leads",
        "each page's first passage",
        lambda paths: paths.root / "leads",
        "leads",
        "leads",
        index_asset="leads_indexes",
        kinds={"l": "lead"},
        provenance=("section", *SPAN_COLUMNS),
        stored=StoredPassages("lead_passages", {"lead_passages": lambda p: p.root / "leads" / "parquet"}),
    )
)

data_dir, topics, output = (Path(a) for a in sys.argv[1:4])
paths = resolve_snapshot(data_dir, None)
text = pq.read_table(paths.passages / "parquet")
leads = text.filter(pc.ends_with(text.column("passage_id"), "-0"))
ids = [f"{wid}-l0" for wid in leads.column("wikipedia_id").to_pylist()]
leads = leads.set_column(0, "passage_id", [ids])
folder = paths.root / "leads"
(folder / "parquet").mkdir(parents=True)
(folder / "collection").mkdir()
pq.write_table(leads, folder / "parquet" / "part-00000.parquet")
with open(folder / "collection" / "part-00000.jsonl", "w", encoding="utf-8") as out:
    for row in leads.select(["passage_id", "title", "text"]).to_pylist():
        contents = row["title"] + "\\n" + row["text"]
        out.write(json.dumps({"id": row["passage_id"], "contents": contents}) + "\\n")
(folder / "report.json").write_text(json.dumps({"passages": leads.num_rows}))
built = build_collection_indexes(paths, "leads", IndexSettings.from_params(), ["bm25"])
stored = build_store(paths)
with ProvenanceStore(paths) as store:
    from_store = store.passage("12-l0")
hf = export_huggingface(paths, data_dir.parent / "hf", include_datasets=False)
beir = export_beir(paths, "fever", data_dir.parent / "beir", collection="both")

from orchestration.cli.main import main

code = main(["search", "anarchism political philosophy", "--collection", "leads", "--k", "3",
             "--data-dir", str(data_dir)])
print("\\nSEARCH-EXIT", code, flush=True)
with Snapshot(paths) as snapshot:
    looked_up = snapshot.retriever.with_text([[Hit("12-l0", "12", 1.0)]])[0][0]
    both = snapshot.retriever.search("bm25", "anarchism political philosophy", 20, collection="both")
code = main(["search", "--collection", "leads", "--topics", str(topics), "--output", str(output),
             "--data-dir", str(data_dir)])
print(json.dumps({
    "passages": leads.num_rows,
    "built": built.built,
    "looked_up": [looked_up.title, looked_up.text],
    "stored": stored.collections.get("lead_passages"),
    "from_store": from_store,
    "hf_rows": hf.configs["lead_passages"].rows["train"] if "lead_passages" in hf.configs else None,
    "beir": beir.added_corpus.get("leads"),
    "both": [h.passage_id for h in both],
    "topics_exit": code,
}))
"""


def test_a_collection_is_one_registration(demo_build, tmp_path: Path) -> None:
    data_dir = demo_build.copy(tmp_path / "data")
    topics = tmp_path / "topics.tsv"
    topics.write_text("a1\tanarchism political philosophy\nq2\twhat is the philosophy of anarchism\n")
    output = tmp_path / "leads-run.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(data_dir), str(topics), str(output)],
        cwd=REPO,
        env={**demo_build.env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    searched, _, rest = done.stdout.partition("\nSEARCH-EXIT 0\n")
    assert rest, done.stdout[-2000:] + done.stderr[-2000:]
    hits = json.loads(searched)
    report = json.loads(rest.strip().splitlines()[-1])
    passages = demo_build.paths.passages / "parquet"
    import pyarrow.parquet as pq

    lead = next(r for r in pq.read_table(passages).to_pylist() if r["passage_id"] == "12-0")
    assert report["built"] == ["bm25"] and report["passages"] > 100
    assert hits[0]["passage_id"] == "12-l0" and all(h["passage_id"].endswith("-l0") for h in hits)
    assert report["looked_up"] == [lead["title"], lead["text"]]  # read from the store
    assert report["stored"] == report["passages"] == report["hf_rows"] == report["beir"]
    assert report["from_store"]["passage_id"] == "12-l0" and report["from_store"]["text"] == lead["text"]
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "config_name: lead_passages" in card and "path: lead_passages/*.parquet" in card
    corpus = [json.loads(line) for line in (tmp_path / "beir" / "corpus.jsonl").read_text().splitlines()]
    leads = [r for r in corpus if r["_id"].endswith("-l0")]
    assert len(leads) == report["passages"] and leads[0]["metadata"] == {"kind": "lead"}
    assert {"12-0", "12-l0"} <= set(report["both"])  # the same words in two collections: both ranked
    assert report["topics_exit"] == 0
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert [r["id"] for r in records] == ["a1", "q2"]
    first = records[0]["output"][0]["provenance"][0]
    assert first["passage_id"] == "12-l0" and first["wikipedia_id"] == "12" and first["text"] == lead["text"]
    assert {
        k: first[k] for k in ("section", "start_paragraph_id", "start_character", "end_paragraph_id")
    } == {k: lead[k] for k in ("section", "start_paragraph_id", "start_character", "end_paragraph_id")}
