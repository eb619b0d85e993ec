"""Wikidata ids from a page_props table dump: our streaming reader vs mwsql (PyPI ``mwsql``, the
MediaWiki SQL dump parser researchers use), on the same gzipped file, in the same run.

The file has the real ``page_props.sql.gz`` layout (``tests/sql_dumps.py``: mysqldump header,
``CREATE TABLE``, extended INSERTs of 1,000 tuples with MySQL escapes), written from the real excerpt
replicated: each page id + k * 10,000,000, one ``wikibase_item`` row (QIDs of the real MKQA records,
cycled) and two other properties (its title as ``displaytitle``, a stretch of its wikitext) per page,
i.e. about 3 rows per page as in enwiki's table. Both readers run in a child process of their own
(``run_measured``: wall, CPU, peak RSS); both must find the same ``(page, QID)`` pairs. Ours also writes
the Parquet table the build joins. The two sizes show whether memory grows with the file.

    .venv/bin/python benchmarks/bench_sql_tables.py [--pages 200000 1000000]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from benchmarks.common import (
    code_fingerprint,
    format_table,
    locate_excerpt,
    machine_info,
    mib,
    run_measured,
    write_results,
)
from support.sql_dumps import PAGE_PROPS_DDL, write_table_dump
from support.workspace import REPO_ROOT, WORK_DIR, log

MKQA_QIDS = ("Q56005", "Q952176", "Q5638484")
ID_STRIDE = 10_000_000

OURS = """
import hashlib, sys
from pathlib import Path
import pyarrow.parquet as pq
from assets.wikipedia.dump.side_tables import write_wikidata_ids
report = write_wikidata_ids(Path(sys.argv[1]), Path(sys.argv[2]))
digest = hashlib.sha256()
for batch in pq.ParquetFile(sys.argv[2]).iter_batches(batch_size=65536):
    for page, qid in zip(batch.column("page_id").to_pylist(), batch.column("wikidata_id").to_pylist()):
        digest.update(f"{page} {qid}\\n".encode())
print(report.rows, report.kept, digest.hexdigest())
"""

PEER = """
import hashlib, sys
from mwsql import Dump
dump = Dump.from_file(sys.argv[1])
digest, rows, kept = hashlib.sha256(), 0, 0
for row in dump.rows(convert_dtypes=True):
    rows += 1
    if row[1] == "wikibase_item":
        kept += 1
        digest.update(f"{row[0]} {row[2]}\\n".encode())
print(rows, kept, digest.hexdigest())
"""


def _excerpt_pages() -> list[tuple[int, str, str]]:
    from support.dump_variants import field, read_xml, split_dump

    _, pages, _ = split_dump(read_xml(locate_excerpt()))
    found = []
    for page in pages:
        text = page.split(b"<text", 1)[1].split(b">", 1)[1][:300].decode("utf-8", "replace")
        found.append((int(field(page, "id")), field(page, "title"), text))
    return found


def write_page_props(path: Path, pages: int) -> dict[str, int]:
    """A page_props dump of ``pages`` pages (the excerpt's, replicated), written INSERT by INSERT."""
    source = _excerpt_pages()

    def rows() -> Iterator[tuple]:
        for number in range(pages):
            copy, (page_id, title, text) = divmod(number, len(source))[0], source[number % len(source)]
            page = page_id + copy * ID_STRIDE
            yield (page, "displaytitle", title if copy == 0 else f"{title} ({copy})", None)
            yield (page, "wikibase_item", MKQA_QIDS[number % 3], None)
            yield (page, "wikitext_sample", text, None)

    written = write_table_dump(path, "page_props", PAGE_PROPS_DDL, rows())
    return {"rows": written, "bytes": path.stat().st_size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, nargs="+", default=[200_000, 1_000_000])
    args = parser.parse_args()
    work = WORK_DIR / "sql_tables"
    work.mkdir(parents=True, exist_ok=True)
    results = []
    for pages in args.pages:
        path = work / f"enwiki-bench{pages}-page_props.sql.gz"
        log(f"writing {path.name}")
        written = write_page_props(path, pages)
        runs = {}
        for name, code in (("ours", OURS), ("mwsql", PEER)):
            log(f"{name}: {pages:,} pages")
            run = run_measured(
                [sys.executable, "-c", code, str(path), str(work / "ids.parquet")], cwd=REPO_ROOT
            )
            if run.returncode != 0:
                raise SystemExit(f"{name} failed: {run.stderr[-2000:]}")
            rows, kept, digest = run.stdout.split()
            runs[name] = {"rows": int(rows), "qids": int(kept), "digest": digest, **run.summary()}
        if (runs["ours"]["qids"], runs["ours"]["digest"]) != (runs["mwsql"]["qids"], runs["mwsql"]["digest"]):
            raise SystemExit(f"the readers disagree: {runs['ours']['qids']} vs {runs['mwsql']['qids']} QIDs")
        results.append(
            {
                "pages": pages,
                "rows": written["rows"],
                "gzip_bytes": written["bytes"],
                "ours": runs["ours"],
                "mwsql": runs["mwsql"],
                "speedup_vs_mwsql": round(runs["mwsql"]["wall_seconds"] / runs["ours"]["wall_seconds"], 2),
            }
        )
        path.unlink()
    table = format_table(
        [
            "pages",
            "rows",
            "gz MB",
            "ours rows/s",
            "ours peak RSS",
            "mwsql rows/s",
            "mwsql peak RSS",
            "ours / mwsql",
        ],
        [
            [
                f"{r['pages']:,}",
                f"{r['rows']:,}",
                f"{r['gzip_bytes'] / 1e6:.1f}",
                f"{r['rows'] / r['ours']['wall_seconds']:,.0f}",
                mib(r["ours"]["peak_rss_main"]),
                f"{r['rows'] / r['mwsql']['wall_seconds']:,.0f}",
                mib(r["mwsql"]["peak_rss_main"]),
                f"{r['speedup_vs_mwsql']:.2f}x",
            ]
            for r in results
        ],
    )
    print(table)
    write_results(
        "sql_tables",
        {
            "benchmark": "page_props.sql.gz -> (page, QID): ours (streaming, Parquet out) vs mwsql 1.0.4",
            "machine": machine_info(),
            "code": code_fingerprint(
                [
                    REPO_ROOT / "assets/wikipedia/dump/sql_tables.py",
                    REPO_ROOT / "assets/wikipedia/dump/side_tables.py",
                ]
            ),
            "results": results,
            "table": table,
            "same_pairs_digest": all(r["ours"]["digest"] == r["mwsql"]["digest"] for r in results),
        },
    )


if __name__ == "__main__":
    main()
