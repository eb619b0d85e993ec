"""Wikimedia dump releases: which run of a wiki is complete, on which source, and which files it needs.

A dump site (Wikimedia's, or a mirror laid out as it is) has a page per wiki listing its runs
(``/enwiki/`` -> ``20240601/``, ...) and, per run, ``dumpstatus.json``::

    {"jobs": {"articlesmultistreamdump": {"status": "done", "updated": "2024-06-02 11:32:05",
              "files": {"enwiki-20240601-pages-articles-multistream.xml.bz2":
                        {"size": 22468419744, "url": "/enwiki/20240601/enwiki-20240601-...",
                         "md5": "...", "sha1": "..."}, ...}},
              "pagepropstable": {...}, "redirecttable": {...}, ...},
     "version": "0.8"}

``dumpstatus.json`` is read into a typed model (:class:`DumpStatus`: a size is a non-negative integer, a
checksum hex digits, every level the type Wikimedia writes); a status that is not is no release, and the
reason names the field. The status is trusted no further than its source: a file's ``url`` resolves
against the source being read and must stay there (same scheme, host and port, under
``<source>/<wiki>/<date>/`` and naming the file), so a status cannot send the fetch to another host or
another path of this one.

A run is *ready* for a build when every job the build needs says ``done`` and lists its files with a size
and a checksum: the articles in the chosen form (``multistream``: the one
``{snap}-pages-articles-multistream.xml.bz2``, from ``articlesmultistreamdumprecombine`` on the wikis
that split it, else ``articlesmultistreamdump``; ``parts``: the ``{snap}-pages-articles{N}.xml-p...bz2``
files of ``articlesdump``), plus the SQL tables asked for (``page_props`` from ``pagepropstable``,
``redirect`` from ``redirecttable``). A run in progress, failed, or missing on a mirror is not ready there;
:func:`find_release` tries the sources in order and the runs newest first.

Pure module: the caller passes the functions that read a URL (:mod:`assets.wikipedia.fetch.download`
does HTTP).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assets.limits import FetchLimits
from assets.params import FETCH_FORM, FETCH_TABLES
from assets.snapshot_ids import DATE_PATTERN

__all__ = [
    "FORMS",
    "TABLES",
    "DumpStatus",
    "Release",
    "ReleaseFile",
    "ReleaseUnavailable",
    "find_release",
    "listed_runs",
    "on_source",
    "release_from_status",
    "run_dates",
    "runs_to_probe",
    "unavailable",
]

FORMS = ("multistream", "parts")
"""The dump forms a fetch takes: one multistream file, or the part files of ``articlesdump``."""
TABLES = {"page_props": "pagepropstable", "redirect": "redirecttable"}
"""The SQL tables a build reads beside the dump (``{snap}-<name>.sql.gz``) and the job that writes each."""
_ARTICLE_JOBS = {
    "multistream": ("articlesmultistreamdumprecombine", "articlesmultistreamdump"),
    "parts": ("articlesdump",),
}
_RUN_LINK = re.compile(rf'href="(?:\./)?({DATE_PATTERN})/?"')


class _Status(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, strict=True)


class StatusFile(_Status):
    """One file of a job in ``dumpstatus.json``."""

    size: int | None = Field(None, ge=0)
    url: str | None = Field(None, max_length=2048)
    md5: str | None = Field(None, pattern=r"^[0-9a-fA-F]{32}$")
    sha1: str | None = Field(None, pattern=r"^[0-9a-fA-F]{40}$")


class StatusJob(_Status):
    """One job of a run: its status and the files it wrote."""

    status: str | None = None
    updated: str | None = None
    files: dict[str, StatusFile] = Field(default_factory=dict)


class DumpStatus(_Status):
    """A run's ``dumpstatus.json`` as Wikimedia writes it (``jobs`` -> ``status``, ``files`` -> ``size``,
    ``url``, ``md5``, ``sha1``); other keys are allowed and ignored."""

    jobs: dict[str, StatusJob]
    version: str | None = None

    @classmethod
    def read(cls, value: Any) -> DumpStatus | str:
        """The model of a parsed status, or why it is not one (the first bad fields, by their path)."""
        try:
            return cls.model_validate(value)
        except ValidationError as error:
            problems = []
            for item in error.errors()[:3]:
                where = ".".join(str(part) for part in item["loc"]) or "the document"
                problems.append(f"{where}: {item['msg']} (got {_short(item.get('input'))})")
            return "its dumpstatus.json is not as Wikimedia writes it: " + "; ".join(problems)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class ReleaseUnavailable(LookupError):
    """No source has a run of the wiki that is ready (the message says what each source answered)."""


@dataclass(frozen=True, slots=True)
class ReleaseFile:
    """One file of a run, as its ``dumpstatus.json`` lists it (``url``: absolute)."""

    name: str
    url: str
    size: int
    md5: str | None
    sha1: str | None
    job: str


@dataclass(frozen=True, slots=True)
class Release:
    """A run of a wiki that is ready on ``source``, and the files a build of it needs."""

    wiki: str
    date: str
    source: str
    form: str
    files: tuple[ReleaseFile, ...]
    skipped: tuple[str, ...] = field(default=())
    """What the newer runs or the earlier sources answered (a mirror without the run, a job in progress)."""
    mirrors: tuple[str, ...] = field(default=())
    """The other sources, in order: where a file goes on when ``source`` stalls or refuses it."""
    folder: str = ""
    """The run's folder under a source (empty: ``<wiki>/<date>``, a wiki's dump run)."""

    @property
    def snapshot_id(self) -> str:
        return f"{self.wiki}-{self.date}"

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


def run_dates(index_html: str) -> list[str]:
    """The run dates a wiki's index page links to (``20240601/``), newest first, each once."""
    return sorted(set(_RUN_LINK.findall(index_html)), reverse=True)


def listed_runs(
    sources: Sequence[str], folder: str, read_text: Callable[[str], str], answers: list[str]
) -> list[str]:
    """The run dates the index pages ``<source>/<folder>/`` of ``sources`` list, newest first; a source
    that cannot be read adds its answer to ``answers``."""
    dates: list[str] = []
    for source in sources:
        index = f"{source.rstrip('/')}/{folder}/"
        try:
            dates += run_dates(read_text(index))
        except (OSError, LookupError, ValueError) as error:
            answers.append(f"{index}: {error}")
    return sorted(set(dates), reverse=True)


def _article_files(wiki: str, date: str, form: str, jobs: dict[str, Any]) -> tuple[str, list[str]]:
    """``(job, file names)`` of the articles in ``form``, or ``("", [])`` when no job lists them."""
    snapshot = f"{wiki}-{date}"
    if form == "multistream":
        wanted = re.compile(re.escape(snapshot) + r"-pages-articles-multistream\.xml\.bz2")
    else:
        wanted = re.compile(re.escape(snapshot) + r"-pages-articles\d+\.xml-p\d+p\d+\.bz2")
    for job in _ARTICLE_JOBS[form]:
        names = sorted(n for n in (jobs.get(job) or {}).get("files") or {} if wanted.fullmatch(n))
        if names:
            return job, names
    return "", []


def release_from_status(
    status: dict[str, Any],
    *,
    wiki: str,
    date: str,
    source: str,
    form: str = FETCH_FORM,
    tables: Sequence[str] = FETCH_TABLES,
) -> Release | str:
    """The :class:`Release` a run's ``dumpstatus.json`` describes on ``source``, or why it is not ready."""
    if form not in FORMS:
        raise ValueError(f"unknown dump form {form!r}: choose one of {', '.join(FORMS)}")
    model = DumpStatus.read(status)
    if isinstance(model, str):
        return model
    jobs = {name: job.model_dump() for name, job in model.jobs.items()}
    job, names = _article_files(wiki, date, form, jobs)
    if not names:
        return f"no job lists the articles as {form}"
    wanted = [(job, name) for name in names]
    snapshot = f"{wiki}-{date}"
    for table in tables:
        table_job = TABLES[table]
        name = f"{snapshot}-{table}.sql.gz"
        if name not in ((jobs.get(table_job) or {}).get("files") or {}):
            return f"job {table_job} lists no {name}"
        wanted.append((table_job, name))
    files = []
    base = source.rstrip("/") + "/"
    for job_name, name in wanted:
        job_status = model.jobs[job_name].status
        if job_status != "done":
            return f"job {job_name} is {job_status or 'without a status'}"
        entry = model.jobs[job_name].files[name]
        if entry.size is None or not (entry.md5 or entry.sha1):
            return f"{name} is listed without its size and checksum"
        url = urljoin(base, (entry.url or f"{wiki}/{date}/{name}").lstrip("/"))
        refused = _off_source(url, source, wiki, date, name)
        if refused:
            return f"jobs.{job_name}.files.{name}.url {entry.url!r} is refused: {refused}"
        files.append(ReleaseFile(name, url, entry.size, entry.md5, entry.sha1, job_name))
    return Release(wiki, date, source, form, tuple(files))


def _off_source(url: str, source: str, wiki: str, date: str, name: str) -> str:
    """Why ``url`` is not the file ``name`` of run ``date`` on ``source`` ("" when it is): another scheme,
    host or port, or another path (``..`` and percent-escapes resolved first)."""
    got, home = urlsplit(url), urlsplit(source.rstrip("/") + "/")
    if (got.scheme, got.netloc.lower()) != (home.scheme, home.netloc.lower()):
        return f"it leaves the source {home.scheme}://{home.netloc} (for {got.scheme}://{got.netloc})"
    if got.query or got.fragment:
        return "it carries a query or fragment"
    path = posixpath.normpath(unquote(got.path))
    expected = posixpath.normpath(f"{unquote(home.path).rstrip('/')}/{wiki}/{date}/{name}")
    if path != expected:
        return f"its path {path} is not {expected}, the run's file on this source"
    return ""


def on_source(release: Release, remote: ReleaseFile, source: str) -> str:
    """The URL of ``remote`` (a file of ``release``) on another ``source`` (a mirror laid out as
    Wikimedia's): the same run folder and name under that source's base."""
    return f"{source.rstrip('/')}/{release.folder or f'{release.wiki}/{release.date}'}/{remote.name}"


def runs_to_probe(dates: list[str], newer_than: str | None, limits: FetchLimits | None) -> list[str]:
    """The run dates worth looking into: newer than ``newer_than``, newest first, at most
    ``limits.max_runs_probed`` of them (``limits.fetch``'s defaults when None)."""
    wanted = sorted((d for d in dates if newer_than is None or d > newer_than), reverse=True)
    return wanted[: (limits or FetchLimits()).max_runs_probed]


def unavailable(what: str, answers: list[str], limits: FetchLimits | None) -> ReleaseUnavailable:
    """The error of a search that found no ready run: ``what``, and what the sources answered (at most
    ``limits.max_answers_told`` of them named, each cut to 300 characters, the rest counted)."""
    told = (limits or FetchLimits()).max_answers_told
    named = "".join(f"\n  {answer[:300]}" for answer in answers[:told])
    more = f"\n  ... and {len(answers) - told:,} more answers" if len(answers) > told else ""
    return ReleaseUnavailable(what + named + more)


def find_release(
    wiki: str,
    sources: Sequence[str],
    read_text: Callable[[str], str],
    read_json: Callable[[str], Any],
    *,
    date: str = "latest",
    form: str = FETCH_FORM,
    tables: Sequence[str] = FETCH_TABLES,
    newer_than: str | None = None,
    limits: FetchLimits | None = None,
) -> Release:
    """The newest run of ``wiki`` (or the run ``date``) that is ready on one of ``sources``, tried in
    order for each run; runs not newer than ``newer_than`` are not considered. ``read_text``/``read_json``
    read a URL and raise ``OSError`` (or ``LookupError``) when it is not there; at most
    ``limits.max_runs_probed`` runs are looked into (:func:`runs_to_probe`).
    :class:`ReleaseUnavailable` says what the sources answered when no run is ready."""
    answers: list[str] = []
    dates = listed_runs(sources, wiki, read_text, answers) if date == "latest" else [date]
    for candidate in runs_to_probe(dates, newer_than, limits):
        for source in sources:
            url = f"{source.rstrip('/')}/{wiki}/{candidate}/dumpstatus.json"
            try:
                status = read_json(url)
            except (OSError, LookupError, ValueError) as error:
                answers.append(f"{url}: {error}")
                continue
            found = release_from_status(
                status, wiki=wiki, date=candidate, source=source, form=form, tables=tables
            )
            if isinstance(found, Release):
                mirrors = tuple(other for other in sources if other != source)
                return dataclasses.replace(found, skipped=tuple(answers), mirrors=mirrors)
            answers.append(f"{url}: not ready ({found})")
    what = f"run {date}" if date != "latest" else "run" + (f" newer than {newer_than}" if newer_than else "")
    raise unavailable(f"no {what} of {wiki} is ready on {', '.join(sources)}", answers, limits)
