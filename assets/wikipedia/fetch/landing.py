"""Find the complete Wikimedia dumps in a landing folder (what the landing sensor polls).

A dump of snapshot ``{dbname}-{YYYYMMDD}`` lands in one of these forms (preferred first when several
are complete):

* ``multistream``: ``{snap}-pages-articles-multistream.xml.bz2`` (read in parallel by the build);
* ``combined``: ``{snap}-pages-articles.xml[.bz2|.gz|.xz]``;
* ``parts``: ``{snap}-pages-articles{N}.xml-p{first}p{last}.bz2``, N = 1, 2, ...;
* ``multistream-parts``: ``{snap}-pages-articles-multistream{N}.xml-p{first}p{last}.bz2``;
* ``enterprise-html``: ``{dbname}-NS0-{YYYYMMDD}-ENTERPRISE-HTML.json.tar.gz`` (the Enterprise HTML dump:
  Parsoid HTML; snapshot ``{dbname}-{YYYYMMDD}``); last, so an XML dump of the same date is preferred.

Completeness rules:

* With ``{snap}-sha1sums.txt`` or ``{snap}-md5sums.txt`` (sha1 preferred) the checksum file is the list
  of files: a form is complete when every file the list names for it is present and its hash matches.
  Files of other kinds that it lists (meta-history, abstracts, multistream index...) are not needed.
  The checksum file itself must have settled and end with a newline (a half-copied list could name
  only some of the parts). A single file the list does not name falls back to the rule below.
* Without a checksum file, a single file is complete when it has not changed for ``settle_seconds``,
  has no hole (a run of zero bytes a preallocating downloader leaves) and ends like a finished dump
  (see :func:`dump_end_problem`; an Enterprise dump: every gzip member checked and the tar's end, see
  :func:`html_dump_end_problem`); part files are never complete, as nothing tells how many parts
  there are.

The wiki's SQL tables ``{snap}-page_props.sql.gz`` (Wikidata QIDs) and ``{snap}-redirect.sql.gz`` go with
the dump when they are there: checked like a single file (hash when listed, else settled and ending with
mysqldump's ``-- Dump completed``), and while one is there but incomplete the dump waits for it. They are
optional: a dump without them builds without QIDs.

Files changed within ``settle_seconds`` are not hashed (they are still being written); a file that
settled but is half-copied fails the hash check. Both are reported as incomplete, never raised.

Hashing a 20 GB dump takes about a minute, so each outcome is cached in a small JSON-serializable
dict keyed by path and valid while (size, mtime_ns) are unchanged: the caller keeps
:attr:`LandingScan.cache` (in the sensor cursor) and passes it to the next scan. Only the landing
folder itself is scanned, not its subfolders.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from assets.input_forms import ENTERPRISE_FORM
from assets.snapshot_ids import DUMP_SNAPSHOT_PATTERN, ENTERPRISE_NAME_PATTERN
from assets.wikipedia.fetch.end_checks import (
    dump_end_problem,
    file_digest,
    html_dump_end_problem,
    sql_dump_end_problem,
)

DEFAULT_SETTLE_SECONDS = 120.0
FORMS = ("multistream", "combined", "parts", "multistream-parts", ENTERPRISE_FORM)
"""The dump forms, preferred first."""

_SNAP = DUMP_SNAPSHOT_PATTERN
_SINGLE_RE = re.compile(_SNAP + r"-pages-articles(?P<ms>-multistream)?\.xml(?P<ext>\.bz2|\.gz|\.xz)?")
_PART_RE = re.compile(
    _SNAP + r"-pages-articles(?P<ms>-multistream)?(?P<num>\d+)\.xml-p(?P<first>\d+)p\d+\.bz2"
)
_ENTERPRISE_RE = re.compile(ENTERPRISE_NAME_PATTERN)
_CHECKSUMS_RE = re.compile(_SNAP + r"-(?P<algo>sha1|md5)sums\.txt")
_SIDE_TABLE_RE = re.compile(_SNAP + r"-(?P<table>page_props|redirect)\.sql\.gz")
SIDE_TABLE_KINDS = {"page_props": "page_props", "redirect": "redirect_table"}
"""The SQL tables read beside a dump (file name part -> LandedDump field)."""
_CHECKSUM_LINE_RE = re.compile(r"^(?P<hex>[0-9a-fA-F]{32}|[0-9a-fA-F]{40})\s+\*?(?P<name>\S.*?)\s*$")


@dataclass(frozen=True, slots=True)
class LandedDump:
    """A complete dump: what the sensor requests a run for."""

    snapshot_id: str
    """``{dbname}-{YYYYMMDD}`` from the file names (the partition key)."""
    dbname: str
    date: str
    form: str
    """One of :data:`FORMS`."""
    files: tuple[Path, ...]
    """The files to build from, parts in part-number order."""
    verified_by: str
    """``sha1sums``, ``md5sums`` or ``settled`` (no checksum: unchanged for a while and ends properly)."""
    run_key: str
    """Snapshot id + digest of the files' verified checksums (or of name, size, mtime when settled)."""
    total_bytes: int
    page_props: Path | None = None
    """``{snap}-page_props.sql.gz`` when it is there and complete (Wikidata QIDs for the pages)."""
    redirect_table: Path | None = None
    """``{snap}-redirect.sql.gz`` when it is there and complete (compared with the XML's redirects)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (for run tags, config and logs)."""
        return {
            "snapshot_id": self.snapshot_id,
            "dbname": self.dbname,
            "date": self.date,
            "form": self.form,
            "files": [str(path) for path in self.files],
            "verified_by": self.verified_by,
            "run_key": self.run_key,
            "total_bytes": self.total_bytes,
            "page_props": str(self.page_props) if self.page_props else None,
            "redirect_table": str(self.redirect_table) if self.redirect_table else None,
        }


@dataclass(frozen=True, slots=True)
class IncompleteDump:
    """A snapshot with files in the folder that is not complete (yet): why, for the log."""

    snapshot_id: str
    reason: str
    files: tuple[Path, ...]
    """Its pages-articles and checksum files present in the folder."""


@dataclass(slots=True)
class LandingScan:
    """Outcome of :func:`scan_landing`."""

    complete: list[LandedDump]
    incomplete: list[IncompleteDump]
    cache: dict[str, dict[str, Any]]
    """Verification cache to pass to the next scan (JSON-serializable, one entry per present file)."""
    hashed_bytes: int = 0
    """Bytes hashed by this scan (0 when everything came from the cache)."""


@dataclass(frozen=True, slots=True)
class _File:
    path: Path
    dbname: str
    date: str
    kind: str  # a form of FORMS, or "sha1sums"/"md5sums"
    order: tuple[int, int]  # (part number, first page id) of a part; (0, 0) otherwise
    size: int
    mtime_ns: int
    changed_at: float  # latest of mtime and ctime (ctime also moves on rename and on utime)


def _classify(name: str) -> tuple[str, str, str, str, tuple[int, int]] | None:
    """(snapshot id, dbname, date, kind, order) of a dump file name; None for other files."""
    if match := _SINGLE_RE.fullmatch(name):
        kind = "multistream" if match["ms"] else "combined"
        if kind == "multistream" and match["ext"] != ".bz2":
            return None
        return match["snap"], match["dbname"], match["date"], kind, (0, 0)
    if match := _PART_RE.fullmatch(name):
        kind = "multistream-parts" if match["ms"] else "parts"
        order = (int(match["num"]), int(match["first"]))
        return match["snap"], match["dbname"], match["date"], kind, order
    if (match := _ENTERPRISE_RE.fullmatch(name)) and match["ns"] == "0":
        return f"{match['dbname']}-{match['date']}", match["dbname"], match["date"], ENTERPRISE_FORM, (0, 0)
    if match := _CHECKSUMS_RE.fullmatch(name):
        return match["snap"], match["dbname"], match["date"], f"{match['algo']}sums", (0, 0)
    if match := _SIDE_TABLE_RE.fullmatch(name):
        return match["snap"], match["dbname"], match["date"], SIDE_TABLE_KINDS[match["table"]], (0, 0)
    return None


# ------------------------------------------------------------------------------------ the scan
class _Verifier:
    """Hash and end checks through the cache, within the scan's hashing budget."""

    def __init__(
        self, cache: Mapping[str, Any], now: float, settle_seconds: float, budget: int | None
    ) -> None:
        self.old = cache
        self.new: dict[str, dict[str, Any]] = {}
        self.now = now
        self.settle_seconds = settle_seconds
        self.budget = budget
        self.hashed_bytes = 0

    def entry(self, file: _File) -> dict[str, Any]:
        """The cache entry of ``file``'s current version (a fresh one when it changed)."""
        key = str(file.path)
        entry = self.new.get(key)
        if entry is None:
            old = self.old.get(key)
            fresh = {"size": file.size, "mtime_ns": file.mtime_ns}
            valid = isinstance(old, Mapping) and all(old.get(k) == v for k, v in fresh.items())
            entry = dict(old) if valid else fresh
            self.new[key] = entry
        return entry

    def unsettled(self, file: _File) -> str | None:
        age = self.now - file.changed_at
        if age < self.settle_seconds:
            return f"{file.path.name} changed {max(age, 0):.0f}s ago (waiting {self.settle_seconds:.0f}s)"
        return None

    def _stat_moved(self, file: _File) -> bool:
        try:
            stat = file.path.stat()
        except OSError:
            return True
        return (stat.st_size, stat.st_mtime_ns) != (file.size, file.mtime_ns)

    def hash_problem(self, file: _File, algorithm: str, expected: str) -> str | None:
        """Why ``file`` does not match its checksum (None when it does)."""
        if problem := self.unsettled(file):
            return problem
        entry = self.entry(file)
        digest = entry.get(algorithm)
        if digest is None:
            if self.budget is not None and self.hashed_bytes >= self.budget:
                return f"{file.path.name} not verified yet (hashing budget of this scan used up)"
            digest = file_digest(file.path, algorithm)
            self.hashed_bytes += file.size
            if self._stat_moved(file):
                self.new.pop(str(file.path), None)
                return f"{file.path.name} changed while it was hashed"
            entry[algorithm] = digest
        if digest != expected.lower():
            return f"{file.path.name}: {algorithm} mismatch (still being copied, or corrupt)"
        return None

    def end_problem(self, file: _File, check: Callable[[Path], str | None] | None = None) -> str | None:
        """Why a single file without checksum is not complete (None when it is); ``check`` reads the file
        (default :func:`dump_end_problem`)."""
        if problem := self.unsettled(file):
            return problem
        entry = self.entry(file)
        if "end" not in entry:
            if self.budget is not None and self.hashed_bytes >= self.budget:
                return f"{file.path.name} not checked yet (reading budget of this scan used up)"
            problem = (check or dump_end_problem)(file.path)  # reads the whole file once (holes)
            self.hashed_bytes += file.size
            if self._stat_moved(file):
                self.new.pop(str(file.path), None)
                return f"{file.path.name} changed while it was checked"
            entry["end"] = problem or ""
        return f"{file.path.name}: {entry['end']}" if entry["end"] else None


def _read_checksums(file: _File) -> tuple[dict[str, str] | None, str | None]:
    """(file name -> hex digest, None) or (None, why the checksum file cannot be used yet)."""
    data = file.path.read_bytes()
    if not data.endswith(b"\n"):
        return None, f"{file.path.name} does not end with a newline (still being copied?)"
    entries: dict[str, str] = {}
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        match = _CHECKSUM_LINE_RE.match(line)
        if match is None:
            return None, f"{file.path.name}:{number}: not a '<hex>  <file name>' line"
        entries[match["name"]] = match["hex"].lower()
    return entries, None


def _landed(
    snapshot_id: str, form: str, files: list[_File], verified_by: str, proofs: list[str]
) -> LandedDump:
    """A complete dump; its run key digests ``proofs`` (what identifies the files' content)."""
    digest = hashlib.sha1("\n".join(proofs).encode()).hexdigest()[:16]
    return LandedDump(
        snapshot_id=snapshot_id,
        dbname=files[0].dbname,
        date=files[0].date,
        form=form,
        files=tuple(f.path for f in files),
        verified_by=verified_by,
        run_key=f"{snapshot_id}:{digest}",
        total_bytes=sum(f.size for f in files),
    )


def _single_outcome(
    snapshot_id: str,
    form: str,
    file: _File,
    checksums: tuple[_File, dict[str, str]] | None,
    verifier: _Verifier,
) -> LandedDump | str:
    """A single-file dump, or why it is not complete."""
    end_check = html_dump_end_problem if form == ENTERPRISE_FORM else None
    problem, verified_by, proof = _check_single(file, checksums, verifier, end_check)
    if problem is None:
        return _landed(snapshot_id, form, [file], verified_by, [proof])
    if verified_by == "settled" and checksums:
        return f"not listed in {checksums[0].path.name}; {problem}"
    return problem


def _check_single(
    file: _File,
    checksums: tuple[_File, dict[str, str]] | None,
    verifier: _Verifier,
    end_check: Callable[[Path], str | None] | None = None,
) -> tuple[str | None, str, str]:
    """``(problem or None, verified_by, proof)`` of one file: its hash when the checksum file lists it,
    else settled and ending as ``end_check`` (default: like a dump) says."""
    name = file.path.name
    if checksums is not None and name in checksums[1]:
        algorithm, expected = checksums[0].kind.removesuffix("sums"), checksums[1][name]
        problem = verifier.hash_problem(file, algorithm, expected)
        return problem, checksums[0].kind, f"{name} {algorithm}:{expected}"
    return verifier.end_problem(file, end_check), "settled", f"{name} {file.size} {file.mtime_ns}"


def _parts_outcome(
    snapshot_id: str,
    form: str,
    files: list[_File],
    checksums: tuple[_File, dict[str, str]] | None,
    verifier: _Verifier,
) -> LandedDump | str:
    """A dump in part files (in part order), or why it is not complete."""
    if checksums is None:
        return "part files without a checksum file (the set of parts is unknown)"
    checksum_file, listed = checksums
    expected: dict[str, tuple[int, int]] = {}  # name -> part order
    for name in listed:
        info = _classify(name)
        if info is not None and info[0] == snapshot_id and info[3] == form:
            expected[name] = info[4]
    if not expected:
        return f"part files not listed in {checksum_file.path.name}"
    names = {f.path.name for f in files}
    if missing := sorted(set(expected) - names, key=expected.__getitem__):
        return f"{len(missing)} of {len(expected)} parts missing: {', '.join(missing)}"
    if extra := [f.path.name for f in files if f.path.name not in expected]:
        return f"part files not listed in {checksum_file.path.name}: {', '.join(extra)}"
    algorithm = checksum_file.kind.removesuffix("sums")
    problems = [p for f in files if (p := verifier.hash_problem(f, algorithm, listed[f.path.name]))]
    if problems:
        return "; ".join(problems)
    proofs = [f"{f.path.name} {algorithm}:{listed[f.path.name]}" for f in files]
    return _landed(snapshot_id, form, files, checksum_file.kind, proofs)


def _evaluate_snapshot(
    snapshot_id: str, files: list[_File], verifier: _Verifier
) -> LandedDump | IncompleteDump:
    """The first complete form of one snapshot (in :data:`FORMS` order), or why there is none."""
    paths = tuple(f.path for f in sorted(files, key=lambda f: f.path.name))
    present = sorted((f for f in files if f.kind in FORMS), key=lambda f: (f.order, f.path.name))
    if not present:
        return IncompleteDump(snapshot_id, "checksum file present, no pages-articles file yet", paths)
    checksums: tuple[_File, dict[str, str]] | None = None
    by_kind = {f.kind: f for f in files if f.kind.endswith("sums")}
    if checksum_file := by_kind.get("sha1sums") or by_kind.get("md5sums"):
        problem = verifier.unsettled(checksum_file)
        listed = None
        if problem is None:
            listed, problem = _read_checksums(checksum_file)
        if listed is None:
            return IncompleteDump(snapshot_id, f"checksum file not usable yet: {problem}", paths)
        checksums = (checksum_file, listed)
    reasons: list[str] = []
    for form in FORMS:
        candidates = [f for f in present if f.kind == form]
        if not candidates:
            continue
        outcomes: Iterable[LandedDump | str]
        if form in ("parts", "multistream-parts"):
            outcomes = [_parts_outcome(snapshot_id, form, candidates, checksums, verifier)]
        else:  # a file the checksum file names first (the others are e.g. decompressed copies)
            candidates.sort(key=lambda f: (checksums is None or f.path.name not in checksums[1], f.path.name))
            outcomes = (_single_outcome(snapshot_id, form, f, checksums, verifier) for f in candidates)
        for outcome in outcomes:
            if isinstance(outcome, LandedDump):
                return _with_side_tables(outcome, files, checksums, verifier, paths)
            reasons.append(f"{form}: {outcome}")
    return IncompleteDump(snapshot_id, " | ".join(reasons), paths)


def _with_side_tables(
    dump: LandedDump,
    files: list[_File],
    checksums: tuple[_File, dict[str, str]] | None,
    verifier: _Verifier,
    paths: tuple[Path, ...],
) -> LandedDump | IncompleteDump:
    """The dump with its page_props and redirect tables when they are there: a table that is there but
    not complete (hash, or settled and ending like a SQL dump) makes the dump wait for it."""
    tables: dict[str, Path] = {}
    proofs: list[str] = []
    for file in sorted((f for f in files if f.kind in SIDE_TABLE_KINDS.values()), key=lambda f: f.kind):
        problem, _, proof = _check_single(file, checksums, verifier, sql_dump_end_problem)
        if problem is not None:
            return IncompleteDump(dump.snapshot_id, f"waiting for {file.kind} table: {problem}", paths)
        tables[file.kind] = file.path
        proofs.append(proof)
    if not tables:
        return dump
    digest = hashlib.sha1("\n".join([dump.run_key, *proofs]).encode()).hexdigest()[:16]
    return replace(dump, run_key=f"{dump.snapshot_id}:{digest}", **tables)


def scan_landing(
    folder: Path | str,
    cache: Mapping[str, Any] | None = None,
    *,
    settle_seconds: float = DEFAULT_SETTLE_SECONDS,
    hash_budget_bytes: int | None = None,
    now: float | None = None,
) -> LandingScan:
    """The complete and incomplete dumps in ``folder`` (rules in the module docstring).

    ``cache`` is the :attr:`LandingScan.cache` of the previous scan. ``hash_budget_bytes`` bounds the
    work of one scan (sensor ticks have a timeout): once that many bytes were hashed, files that are
    not in the cache are left for the next scan (the file that crosses the budget is finished).
    ``now`` (epoch seconds) defaults to the current time. A missing folder is an error.
    """
    folder = Path(folder).absolute()
    if not folder.is_dir():
        raise FileNotFoundError(f"landing folder not found: {folder}")
    verifier = _Verifier(cache or {}, time.time() if now is None else now, settle_seconds, hash_budget_bytes)
    snapshots: dict[str, list[_File]] = {}
    with os.scandir(folder) as entries:
        for entry in entries:
            info = _classify(entry.name)
            if info is None or not entry.is_file():
                continue
            stat = entry.stat()
            snapshot_id, dbname, date, kind, order = info
            snapshots.setdefault(snapshot_id, []).append(
                _File(
                    path=folder / entry.name,
                    dbname=dbname,
                    date=date,
                    kind=kind,
                    order=order,
                    size=stat.st_size,
                    mtime_ns=stat.st_mtime_ns,
                    changed_at=max(stat.st_mtime, stat.st_ctime),
                )
            )
    complete: list[LandedDump] = []
    incomplete: list[IncompleteDump] = []
    for snapshot_id in sorted(snapshots):
        outcome = _evaluate_snapshot(snapshot_id, snapshots[snapshot_id], verifier)
        if isinstance(outcome, LandedDump):
            complete.append(outcome)
        else:
            incomplete.append(outcome)
    for files in snapshots.values():  # keep the still-valid entries of files this scan did not check
        for file in files:
            verifier.entry(file)
    return LandingScan(complete, incomplete, verifier.new, verifier.hashed_bytes)
