"""Incremental knowledge source: a page whose revision the previous snapshot of the same wiki already
converted is copied from that snapshot instead of being converted again.

A month of enwiki changes a few percent of its pages, but a multistream dump shifts every bz2 stream
after a deleted page, so the whole dump is still decompressed and parsed (``benchmarks/month_streams.py``).
What is skipped is the wikitext conversion, stage 1's largest cost. A page is the same page when its id,
title, revision id, parent id, time stamp and wikitext length equal those of the previous snapshot's row
(a revision id names one text in MediaWiki; the rest guards against a dump that reuses ids), and both
snapshots were converted by the same rules (:data:`PARSER_VERSION`, text style, the wiki's case, server and
namespaces). Its stage-1 row is rebuilt from the published row: anchors get back the lookup key of their
``href`` (``link_target_key(unquote(href))``, what conversion computed from the link target), and stage 2
resolves every anchor again, so links to pages that appeared, moved or went follow the new snapshot. The
published knowledge source is therefore the full build's, byte for byte (tested).

The previous snapshot's identities (one small row per page, sorted by page id, in row groups of
:data:`IDENTITY_ROWS_PER_GROUP`) are written once per build beside the parse steps; a conversion worker
reads the row groups of its pages' id range, and the parse step's writer takes the rows of the pages it
reuses from the previous snapshot's shards, two shards in memory at a time.

Pure module: no Dagster import.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from assets.files import temp_sibling
from assets.incremental import previous_snapshot
from assets.input_forms import recorded_conversion
from assets.snapshot_ids import snapshot_of_dump_name
from assets.storage import SnapshotPaths, spilling_duckdb, sql_list, sql_literal
from assets.wikipedia.dump import SiteInfo
from assets.wikipedia.schema import ANCHOR_TYPE, STAGE1_SCHEMA
from assets.wikipedia.wikitext import link_target_key

log = logging.getLogger(__name__)

IDENTITY_FILE = "identity.parquet"
SOURCE_FILE = "source.json"
IDENTITY_ROWS_PER_GROUP = 8192
IDENTITY_FIELDS = ("title", "revid", "parentid", "timestamp", "wikitext_bytes")
"""What must be equal, besides the page id, for a page to be taken from the previous snapshot."""


def conversion_identity(site: SiteInfo, text_style: str, parser_version: int, route: str) -> dict[str, Any]:
    """What the conversion of a page depends on besides the page itself (recorded in the manifest);
    ``route``: the dump's form (``xml``, ``enterprise-html``), so that pages one form's reader converted
    are never reused by another's."""
    return json.loads(
        json.dumps(
            {
                "route": route,
                "parser_version": parser_version,
                "text_style": text_style,
                "case": site.case,
                "server": site.server,
                "namespaces": {str(k): v for k, v in sorted(site.namespaces.items())},
            },
            sort_keys=True,
        )
    )


def target_snapshot_id(dumps: Sequence[Path], snapshot_id: str | None) -> str | None:
    """The id a build of ``dumps`` will get when it is known before parsing: ``snapshot_id``, else the
    ``{dbname}-{date}`` a Wikimedia file name starts with; None otherwise (no reuse)."""
    return snapshot_id or snapshot_of_dump_name(Path(dumps[0]).name)


def previous_knowledge_source(data_dir: Path, snapshot_id: str) -> tuple[SnapshotPaths | None, str]:
    """The newest complete snapshot of the same wiki dated before ``snapshot_id`` with a knowledge source
    that records its conversion rules, and why there is none (logged by :func:`prepare_reuse`)."""
    source = previous_snapshot(
        data_dir, snapshot_id, has=lambda p: p.manifest_file.is_file() and any(p.pages_dir.glob("*.parquet"))
    )
    if source is None:
        return (
            None,
            f"no complete earlier snapshot of the wiki of {snapshot_id} under {data_dir / 'snapshots'}",
        )
    if "conversion" not in json.loads(source.manifest_file.read_text()):
        return None, f"{source.manifest_file} records no conversion rules (built by an older version)"
    return source, ""


def prepare_reuse(data_dir: Path, snapshot_id: str, parts_dir: Path) -> str | None:
    """The folder of the reuse source of a build of ``snapshot_id`` (written under ``parts_dir`` once:
    ``identity.parquet`` and ``source.json``), or None when no earlier snapshot can serve (logged)."""
    source, why = previous_knowledge_source(data_dir, snapshot_id)
    if source is None:
        log.info(f"knowledge source {snapshot_id}: every page converted ({why})")
        return None
    shards = sorted(source.pages_dir.glob("*.parquet"))
    version = [[p.name, p.stat().st_size, p.stat().st_mtime_ns] for p in shards]  # a rebuilt source: anew
    digest = hashlib.sha1(json.dumps(version).encode()).hexdigest()[:12]
    folder = parts_dir / f"reuse-{source.snapshot_id}-{digest}"
    if (folder / SOURCE_FILE).is_file():
        return str(folder)
    work = temp_sibling(folder)
    work.mkdir(parents=True)
    try:
        _write_identities(shards, work / IDENTITY_FILE)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)  # nothing half-written is left for the next attempt
        raise
    manifest = json.loads(source.manifest_file.read_text())
    description = {
        "snapshot_id": source.snapshot_id,
        "pages_dir": str(source.pages_dir.resolve()),
        "shards": [p.name for p in shards],
        "conversion": manifest["conversion"],
    }
    (work / SOURCE_FILE).write_text(json.dumps(description, indent=2) + "\n")
    try:
        work.rename(folder)
    except OSError:  # another parse step of this build wrote it first (same content)
        shutil.rmtree(work, ignore_errors=True)
    return str(folder)


def _write_identities(shards: list[Path], target: Path) -> None:
    """Each published page's id, title, revision fields, wikitext length and place (shard, row), sorted by
    page id, in row groups of which a worker's id range reads few."""
    con = spilling_duckdb(":memory:", target.parent / "spill")
    try:
        con.execute(
            f"""
            COPY (
              SELECT CAST(wikipedia_id AS BIGINT) AS page_id, wikipedia_title AS title,
                     history.revid AS revid, history.parentid AS parentid, history.timestamp AS timestamp,
                     wikitext_bytes,
                     CAST(regexp_extract(filename, 'part-(\\d+)\\.parquet$', 1) AS INTEGER) AS shard,
                     CAST(file_row_number AS INTEGER) AS row
              FROM read_parquet({sql_list(shards)}, filename = true, file_row_number = true)
              ORDER BY page_id
            ) TO {sql_literal(target)}
              (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {IDENTITY_ROWS_PER_GROUP})
            """
        )
    finally:
        con.close()
        shutil.rmtree(target.parent / "spill", ignore_errors=True)


def reuse_problem(folder: str, conversion: dict[str, Any]) -> str | None:
    """Why the source in ``folder`` cannot serve a part converted with ``conversion`` (None: it can)."""
    source = json.loads((Path(folder) / SOURCE_FILE).read_text())
    recorded = recorded_conversion(source["conversion"])  # an older build's, its route in today's name
    if recorded != conversion:
        differing = sorted(k for k in conversion if recorded.get(k) != conversion[k])
        return f"snapshot {source['snapshot_id']} was converted with other {', '.join(differing)}"
    return None


def reusable_pages(folder: str, articles: Sequence[tuple]) -> dict[int, tuple[int, int]]:
    """Of ``articles`` (the tuples :func:`convert_batch` takes), the page ids whose revision the source
    converted already, with the source's ``(shard, row)`` of each."""
    if not articles:
        return {}
    ids = [article[1] for article in articles]
    table = pq.read_table(
        Path(folder) / IDENTITY_FILE,
        filters=[("page_id", ">=", min(ids)), ("page_id", "<=", max(ids))],
    )
    known = {row["page_id"]: row for row in table.to_pylist()}  # a worker's id range: a few thousand
    found: dict[int, tuple[int, int]] = {}
    for _, page_id, title, wikitext, revid, parentid, timestamp in articles:
        row = known.get(page_id)
        if row is None:
            continue
        page = (title, revid, parentid, timestamp, len(wikitext.encode("utf-8")))
        if tuple(row[name] for name in IDENTITY_FIELDS) == page:
            found[page_id] = (row["shard"], row["row"])
    return found


def href_key(href: str, case: str) -> str:
    """The lookup key conversion gave the anchor whose URL-quoted target is ``href``."""
    plain = href.replace("%20", " ")  # most escapes are spaces: unquote (slow) only for the others
    return link_target_key(unquote(plain) if "%" in plain else plain, case=case)


class HrefKeys:
    """:func:`href_key` remembered across shards (popular link targets recur on every shard); forgets
    everything past ``limit`` entries, so memory stays bounded."""

    def __init__(self, case: str, limit: int = 1_000_000) -> None:
        self.case = case
        self.limit = limit
        self._keys: dict[str, str] = {}

    def __call__(self, hrefs: list[str]) -> pa.Array:
        if len(self._keys) > self.limit:
            self._keys.clear()
        keys = self._keys
        case = self.case
        return pa.array(
            [keys[h] if h in keys else keys.setdefault(h, href_key(h, case)) for h in hrefs], pa.string()
        )


def stage1_of_published(pages: pa.Table, href_keys: HrefKeys) -> pa.Table:
    """Published page rows turned back into stage-1 rows (``ord`` 0, set by the caller): anchors lose the
    resolved target and get the lookup key of their ``href``; ``wikidata_info`` goes."""
    anchors = pages.column("anchors").combine_chunks()
    if anchors.null_count:
        raise ValueError("a published page has null anchors (never written by stage 2)")
    offsets = anchors.offsets
    offsets = pc.subtract(offsets, offsets[0])
    flat = anchors.flatten()
    fields = dict(zip([f.name for f in flat.type], flat.flatten(), strict=True))
    encoded = fields["href"].dictionary_encode()
    keys = href_keys(encoded.dictionary.to_pylist())
    children = [fields[f.name] for f in ANCHOR_TYPE if f.name != "target_key"]
    rebuilt = pa.StructArray.from_arrays([*children, keys.take(encoded.indices)], fields=list(ANCHOR_TYPE))
    columns = {name: pages.column(name) for name in STAGE1_SCHEMA.names if name not in ("ord", "anchors")}
    columns["ord"] = pa.array([0] * pages.num_rows, pa.int64())
    columns["anchors"] = pa.ListArray.from_arrays(offsets, rebuilt)
    table = pa.table(columns)
    return table.select(STAGE1_SCHEMA.names).cast(STAGE1_SCHEMA)


class ReusedRows:
    """Stage-1 rows of the source's pages by ``(shard, row)``; the two shards last used stay converted in
    memory (a parse step's pages come in page order, as the source's do)."""

    def __init__(self, folder: str, case: str) -> None:
        source = json.loads((Path(folder) / SOURCE_FILE).read_text())
        self.snapshot_id: str = source["snapshot_id"]
        self.pages_dir = Path(source["pages_dir"])
        self.shards: list[str] = source["shards"]
        self.href_keys = HrefKeys(case)
        self._cache: OrderedDict[int, pa.Table] = OrderedDict()

    def _shard(self, index: int) -> pa.Table:
        if index in self._cache:
            self._cache.move_to_end(index)
            return self._cache[index]
        path = self.pages_dir / self.shards[index]
        try:
            table = stage1_of_published(pq.read_table(path), self.href_keys)
        except (OSError, pa.ArrowInvalid) as exc:
            raise ValueError(f"{path}: the previous snapshot's shard cannot be reused: {exc}") from exc
        self._cache[index] = table
        if len(self._cache) > 2:
            self._cache.popitem(last=False)
        return table

    def rows(self, wanted: Sequence[tuple[int, int, int, int]]) -> pa.Table:
        """Stage-1 rows of ``(ord, page_id, shard, row)`` in the order given, each with its ``ord``; a row
        that is not that page (the source changed under the build) is an error naming the shard."""
        pieces = []
        start = 0
        while start < len(wanted):
            shard = wanted[start][2]
            end = start
            while end < len(wanted) and wanted[end][2] == shard:
                end += 1
            run = wanted[start:end]
            taken = self._shard(shard).take(pa.array([w[3] for w in run], pa.int64()))
            if taken.column("wikipedia_id").to_pylist() != [str(w[1]) for w in run]:
                raise ValueError(
                    f"{self.pages_dir / self.shards[shard]}: rows are not the pages the reuse identities "
                    "name (the previous snapshot was rebuilt during this build); build again"
                )
            ords = pa.array([w[0] for w in run], pa.int64())
            pieces.append(taken.set_column(0, STAGE1_SCHEMA.field("ord"), ords))
            start = end
        return pa.concat_tables(pieces) if pieces else STAGE1_SCHEMA.empty_table()
