"""The ``kiltpipe`` argument parser: one sub-command per verb, each bound to its handler in the verb modules
of this package; every option typed where it is parsed (:mod:`.arguments`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from assets.indexes.evaluation import KILT_KS
from assets.wikipedia.wikitext import TEXT_STYLES
from orchestration.cli.arguments import (
    fraction,
    non_negative_int,
    port,
    positive_int,
    positive_int_list,
    refuse_empty_strings,
    wheel_file,
)
from orchestration.cli.build import cmd_build
from orchestration.cli.datasets import cmd_eval, cmd_map, cmd_remap, cmd_restore_stores
from orchestration.cli.exports import cmd_export_beir, cmd_export_hf
from orchestration.cli.fetch import cmd_fetch
from orchestration.cli.lookups import (
    cmd_cites,
    cmd_page,
    cmd_passage,
    cmd_provenance,
    cmd_qid,
    cmd_span,
    cmd_tables,
)
from orchestration.cli.search import cmd_search, cmd_serve
from orchestration.cli.snapshots import (
    cmd_export_ks,
    cmd_fetch_default,
    cmd_import_ks,
    cmd_limits,
    cmd_snapshots,
    cmd_verify_repro,
)

__all__ = ["build_parser"]


def build_parser() -> argparse.ArgumentParser:
    from assets.indexes.collections import COLLECTIONS, DEFAULT_COLLECTION
    from assets.indexes.registry import index_names  # the registry of index types (light: nothing opens)

    parser = argparse.ArgumentParser(
        prog="kiltpipe",
        description="Build KILT-style knowledge sources from Wikipedia dumps and query them. "
        "Results are JSON on stdout; progress and logs go to stderr.",
    )
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    def verb(
        name: str, handler: Callable[[argparse.Namespace], int], help_text: str
    ) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=help_text, description=help_text)
        command.add_argument(
            "--data-dir", help="artifact root (default: data_dir of params.yaml, or $KILT_DATA_DIR)"
        )
        command.set_defaults(handler=handler)
        return command

    build = verb("build", cmd_build, "Materialize every asset of a snapshot through the Dagster definitions.")
    build.add_argument(
        "--dump",
        nargs="+",
        metavar="FILE",
        help="MediaWiki XML dump (bz2, gz, xz or plain), or its part files in order; "
        "default: the dump registered for --snapshot, or the embedded excerpt",
    )
    build.add_argument(
        "--snapshot",
        help="snapshot id = Dagster partition (default: {dbname}-{date} of --dump, else the embedded "
        "default's enwiki-20160501)",
    )
    build.add_argument(
        "--page-props",
        metavar="FILE",
        help="the wiki's page_props table dump ({wiki}-{date}-page_props.sql.gz): a Wikidata QID for every "
        "page (default: that file beside the dump, if there)",
    )
    build.add_argument(
        "--redirect-table",
        metavar="FILE",
        help="the wiki's redirect table dump ({wiki}-{date}-redirect.sql.gz), compared with the XML's "
        "redirects (default: that file beside the dump, if there)",
    )
    build.add_argument("--as-of", help="keep the latest revision at or before this date, e.g. 2016-05-01")
    build.add_argument(
        "--workers", type=non_negative_int, help="wikitext conversion processes (0 = in-process)"
    )
    build.add_argument(
        "--invalid-bytes", choices=["error", "replace"], help="what to do with undecodable bytes"
    )
    build.add_argument(
        "--text-style",
        choices=TEXT_STYLES,
        help="kilt: pages as KILT writes them (the default) | clean: quotes dropped, removals repaired",
    )
    build.add_argument(
        "--select", help="Dagster asset selection, e.g. '+key:knowledge_source' (default: all)"
    )
    build.add_argument(
        "--executor",
        choices=["in_process", "multiprocess", "dask"],
        help="where steps run: in_process (this process), multiprocess (one process per step) or dask "
        "(a Dask cluster); default: $KILT_EXECUTOR, else in_process; the last two need DAGSTER_HOME's "
        "persistent instance (default ./.dagster_home)",
    )
    cluster = build.add_mutually_exclusive_group()
    cluster.add_argument(
        "--dask-scheduler",
        metavar="ADDRESS",
        help="dask: run on this scheduler's workers, e.g. tcp://host:8786 (default: $KILT_DASK_SCHEDULER); "
        "they must see the same data dir and code",
    )
    cluster.add_argument(
        "--dask-workers",
        type=positive_int,
        metavar="N",
        help="dask: start a local cluster of N worker processes for the build (default: $KILT_DASK_WORKERS, "
        "else Dask's default)",
    )
    build.add_argument(
        "--force",
        action="store_true",
        help="replace a snapshot of the same id built from other dump files or another --as-of",
    )
    build.add_argument("--quiet", action="store_true", help="no progress bars")
    build.add_argument("--verbose", action="store_true", help="Dagster debug events on stderr")

    snapshots = verb(
        "snapshots", cmd_snapshots, "List built snapshots (oldest dump first) with their counts and indices."
    )
    del snapshots
    verb(
        "limits",
        cmd_limits,
        "Print every bound the project enforces on input from outside (params.yaml limits).",
    )

    page = verb(
        "page",
        cmd_page,
        "Print the KILT page record of a title, page id or Wikidata QID (redirects followed).",
    )
    page.add_argument("title_or_id")
    page.add_argument("--snapshot", help="snapshot id (default: the newest)")
    page.add_argument(
        "--by",
        choices=["auto", "id", "qid", "title"],
        default="auto",
        help="treat the argument as a page id, a Wikidata QID, a title, or guess (digits = id, Q42 = QID, "
        "each falling back to a title)",
    )
    qid = verb("qid", cmd_qid, "Print the Wikidata QID of a page given by title or id (redirects followed).")
    qid.add_argument("title_or_id")
    qid.add_argument("--snapshot", help="snapshot id (default: the newest)")
    qid.add_argument("--by", choices=["auto", "id", "title"], default="auto", help="as for `page`")

    passage = verb("passage", cmd_passage, "Print a passage: text, title and its span coordinates.")
    passage.add_argument(
        "passage_id", help="e.g. 12-0 (wikipedia_id-ordinal), 303-t0.0 (a table's), 303-i0.0 (an infobox's)"
    )
    passage.add_argument("--snapshot", help="snapshot id (default: the newest)")
    tables = verb(
        "tables", cmd_tables, "Print a page's table and infobox passages, with their wikitext offsets."
    )
    tables.add_argument("title_or_id")
    tables.add_argument("--snapshot", help="snapshot id (default: the newest)")

    span = verb(
        "span", cmd_span, "Print a span's text and the passages covering it (with covered fractions)."
    )
    span.add_argument("wikipedia_id")
    span.add_argument("start_paragraph", type=non_negative_int)
    span.add_argument("start_char", type=non_negative_int)
    span.add_argument("end_paragraph", type=non_negative_int)
    span.add_argument("end_char", type=non_negative_int, help="exclusive, as in KILT provenance")
    span.add_argument("--snapshot", help="snapshot id (default: the newest)")

    mapping = verb("map", cmd_map, "Map a dataset file onto a snapshot (KILT's procedure, offline).")
    mapping.add_argument(
        "path", help="dataset file (KILT JSONL, NQ-open/PAQ, FEVER, MKQA, TriviaQA, HotpotQA)"
    )
    mapping.add_argument(
        "--format", help="dataset format, one of assets.datasets.formats' registry (default: detected)"
    )
    mapping.add_argument("--dataset", help="dataset name (default: from the file)")
    mapping.add_argument("--split", help="split (default: from the file name)")
    mapping.add_argument("--qrels", help="FEVER qrels file paired with a topics TSV")
    mapping.add_argument(
        "--language",
        help="MKQA: languages to map, comma-separated (zh_cn,zh_tw) or 'all' (default: those the snapshot's "
        "Wikipedia answers, e.g. zh_cn,zh_hk,zh_tw for zhwiki)",
    )
    mapping.add_argument("--snapshot", help="target snapshot (default: the newest)")
    mapping.add_argument("--source-snapshot", help="snapshot whose text is the evidence for KILT coordinates")
    mapping.add_argument(
        "--bleu-threshold", type=fraction, help="dev/test drop threshold (default: params.yaml)"
    )
    mapping.add_argument("--reports-dir", help="where mapping reports go (default: params.yaml)")
    mapping.add_argument("--strict", action="store_true", help="fail on the first malformed line")

    provenance = verb(
        "provenance", cmd_provenance, "Print a dataset record, its spans with text and covering passages."
    )
    provenance.add_argument("record_id")
    provenance.add_argument("--dataset", help="dataset name when the id occurs in several datasets")
    provenance.add_argument("--snapshot", help="snapshot id (default: the newest)")

    cites = verb("cites", cmd_cites, "List the dataset records whose provenance is on a page.")
    cites.add_argument("title_or_id")
    cites.add_argument("--snapshot", help="snapshot id (default: the newest)")

    remap = verb(
        "remap", cmd_remap, "Remap the datasets mapped on one snapshot onto another and report changes."
    )
    remap.add_argument("--from", dest="source", required=True, help="snapshot the datasets are mapped on (A)")
    remap.add_argument("--to", dest="target", required=True, help="new snapshot (B)")
    remap.add_argument("--reports-dir", help="where reports go (default: params.yaml)")

    restore = verb(
        "restore-stores",
        cmd_restore_stores,
        "Rebuild a snapshot's DuckDB lookup files from its Parquet (after `dvc pull`: DVC versions the "
        "Parquet only).",
    )
    restore.add_argument("--snapshot", help="snapshot id (default: the newest)")

    export = verb("export-ks", cmd_export_ks, "Write a snapshot's knowledge source as KILT JSONL.")
    export.add_argument("--snapshot", help="snapshot id (default: the newest)")
    export.add_argument(
        "--out", help="output file (.jsonl or .jsonl.gz); default under the snapshot's exports/"
    )
    export.add_argument("--quiet", action="store_true", help="no progress bar")

    hf = verb(
        "export-hf",
        cmd_export_hf,
        "Write a snapshot as a Hugging Face dataset repository (Parquet shards of passages, pages, redirects "
        "and every remapped split, and a dataset card), for datasets.load_dataset(DIR, CONFIG).",
    )
    hf.add_argument("--snapshot", help="snapshot id (default: the newest)")
    hf.add_argument("--out", required=True, help="repository folder (an earlier export there is replaced)")
    hf.add_argument(
        "--max-shard-mb", type=positive_int, default=500, help="Parquet file size limit (default 500 MB)"
    )
    hf.add_argument(
        "--push",
        metavar="ORG/NAME",
        help="then upload it as this Hub dataset (token: $HF_TOKEN or `hf auth login`)",
    )
    hf.add_argument("--private", action="store_true", help="with --push: create the dataset private")

    beir = verb(
        "export-beir",
        cmd_export_beir,
        "Write a remapped dataset in BEIR's layout (corpus.jsonl, queries.jsonl, qrels/<split>.tsv and the "
        "page-level qrels-page/<split>.tsv), for BEIR's GenericDataLoader and MTEB.",
    )
    beir.add_argument("--snapshot", help="snapshot id (default: the newest)")
    beir.add_argument("--dataset", required=True, help="a dataset mapped onto the snapshot, e.g. nq")
    beir.add_argument("--split", action="append", help="only this split (repeatable; default: every split)")
    beir.add_argument("--out", required=True, help="BEIR folder (an earlier export there is replaced)")
    beir.add_argument(
        "--collection",
        choices=["text", "both"],
        default="text",
        help="corpus: the text passages (default, KILT-comparable), or both: + tables and infoboxes",
    )

    imp = verb(
        "import-ks",
        cmd_import_ks,
        "Import a KILT knowledge-source JSONL (KILT's 2019 release) as a snapshot.",
    )
    imp.add_argument("path", help="kilt_knowledgesource.json (JSONL, optionally gzipped)")
    imp.add_argument(
        "--snapshot", default="kilt-20190801", help="snapshot id to create (default: kilt-20190801)"
    )
    imp.add_argument("--quiet", action="store_true", help="no progress bar")

    fetch = verb(
        "fetch",
        cmd_fetch,
        "Fetch a Wikimedia dump run into the landing folder: the newest run whose jobs are done on the "
        "first source that has it, every file resumed after a drop and verified before it lands.",
    )
    fetch.add_argument("--wiki", required=True, help="the wiki's database name, e.g. enwiki")
    fetch.add_argument("--date", default="latest", help="YYYYMMDD, or latest (the newest ready run)")
    fetch.add_argument(
        "--source",
        action="append",
        help="a dump site or mirror, tried before those of snapshots.releases.sources (repeatable)",
    )
    fetch.add_argument("--form", choices=["multistream", "parts"], help="default: snapshots.releases.form")
    fetch.add_argument(
        "--tables", help="comma-separated SQL tables fetched too (page_props,redirect), or none"
    )
    fetch.add_argument("--out", help="the landing folder (default: snapshots.landing_dir)")
    fetch.add_argument("--connections", type=positive_int, help="connections per host (default 2)")
    fetch.add_argument("--rate-limit", type=positive_int, help="bytes per second over all files")
    fetch.add_argument("--contact", help="an e-mail address or URL sent in the User-Agent")
    fetch.add_argument("--quiet", action="store_true", help="no progress")

    search = verb(
        "search",
        cmd_search,
        "Search a snapshot's BM25, dense, hybrid or rerank index: one QUERY (JSON hits) or a topics file "
        "(KILT JSONL or TREC run).",
    )
    search.add_argument("query", nargs="?", help="the query text (or use --topics)")
    search.add_argument("--index", choices=index_names(), default="bm25")
    search.add_argument(
        "--collection",
        choices=COLLECTIONS,
        default=DEFAULT_COLLECTION,
        help="text passages (default, KILT-comparable), structured ones (tables, infoboxes) or both",
    )
    search.add_argument(
        "--k", type=positive_int, default=10, help="hits per query (default 10; at most limits.search.max_k)"
    )
    search.add_argument("--snapshot", help="snapshot id (default: the newest)")
    search.add_argument("--topics", help="queries: TSV id<TAB>text, KILT JSONL (id, input) or DPR QA TSV")
    search.add_argument(
        "--topics-format", choices=["tsv", "kilt", "dpr"], help="default: .jsonl = kilt, else tsv"
    )
    search.add_argument("--output", help="where the batch results go")
    search.add_argument(
        "--format",
        choices=["kilt", "trec"],
        default="kilt",
        help="kilt: one record per topic with ranked provenance; trec: qid Q0 docid rank score tag",
    )
    search.add_argument("--threads", type=positive_int, help="BM25 search threads (default: params.yaml)")

    serve = verb(
        "serve",
        cmd_serve,
        "Serve a snapshot's indices over HTTP, each loaded once: GET /search?q=...&index=...&k=..., "
        "POST /search {queries, index, k}, GET /health.",
    )
    serve.add_argument(
        "--index",
        action="append",
        choices=index_names(),
        help="repeatable (default: bm25 and dense, those indexes.build makes)",
    )
    serve.add_argument(
        "--collection",
        action="append",
        choices=COLLECTIONS,
        help="repeatable: text, structured, both (default: text, and the others where the snapshot has "
        "structured indices)",
    )
    serve.add_argument("--snapshot", help="snapshot id (default: the newest)")
    serve.add_argument(
        "--host",
        help="address to bind (default limits.network.bind_host, 127.0.0.1: this machine; 0.0.0.0 or :: for "
        "every interface)",
    )
    serve.add_argument("--port", type=port, default=8080, help="port (default 8080; 0 = any free port)")
    serve.add_argument(
        "--admin-token",
        help="clients other than this machine may call /admin/reload with 'Authorization: Bearer TOKEN' "
        "(default: $KILT_ADMIN_TOKEN; without one, admin routes answer loopback clients only)",
    )

    evaluate = verb(
        "eval",
        cmd_eval,
        "KILT retrieval metrics of the indices on every dataset remapped onto the snapshot, or KILT's "
        "retrieval and downstream metrics of a prediction file (--guess, --gold).",
    )
    evaluate.add_argument("--snapshot", help="snapshot id (default: the newest)")
    evaluate.add_argument(
        "--index",
        action="append",
        choices=index_names(),
        help="repeatable (default: indexes.evaluation.indexes of params.yaml)",
    )
    evaluate.add_argument(
        "--collection",
        action="append",
        choices=COLLECTIONS,
        help="repeatable (default: indexes.evaluation.collections of params.yaml: text and both)",
    )
    evaluate.add_argument(
        "--depth", type=positive_int, help="passages retrieved per query (default: params.yaml)"
    )
    evaluate.add_argument("--reports-dir", help="where reports go (default: params.yaml)")
    evaluate.add_argument("--guess", help="a KILT-format prediction file: evaluate it against --gold instead")
    evaluate.add_argument("--gold", help="the KILT-format gold file (a remapped split or KILT's own)")
    evaluate.add_argument(
        "--ks",
        type=positive_int_list,
        default=list(KILT_KS),
        help="with --guess: comma-separated k (default: KILT's, 1,5,10,20)",
    )
    evaluate.add_argument(
        "--rank-keys", default="wikipedia_id", help="with --guess: provenance keys a page id is made of"
    )

    fetch = verb(
        "fetch-default",
        cmd_fetch_default,
        "Obtain the embedded default corpus (from the gensim 4.4.0 wheel).",
    )
    fetch.add_argument(
        "--wheel",
        type=wheel_file,
        help="read from this already downloaded gensim wheel instead of calling pip",
    )
    verify = verb(
        "verify-repro",
        cmd_verify_repro,
        "Check a rebuild against the committed dvc.lock (byte-reproducible outputs byte for byte) and the "
        "committed float reference (embeddings, FAISS, retrieval metrics by tolerance); or write that "
        "reference with --write-reference.",
    )
    verify.add_argument("--lock", default="dvc.lock", help="the rebuilt lock (default: dvc.lock)")
    verify.add_argument(
        "--committed", help="the committed lock to compare with (default: dvc.lock at git HEAD)"
    )
    verify.add_argument(
        "--reference",
        default="reproducibility/float_reference.json",
        help="the float reference (default: reproducibility/float_reference.json)",
    )
    verify.add_argument("--snapshot", help="snapshot id (default: knowledge_source.snapshot of params.yaml)")
    verify.add_argument(
        "--write-reference",
        action="store_true",
        help="write the reference from this build instead of checking",
    )
    refuse_empty_strings(parser)
    return parser
