"""From Wikimedia's servers to the landing folder: the release sensor and the ``fetch_dump`` job.

``dump_release_sensor`` reads each watched wiki's run list and ``dumpstatus.json`` on the sources of
``snapshots.releases`` (Wikimedia's dump site and mirrors, in order; for ``form: enterprise-html``, the
Enterprise HTML runs' listings). When a run newer than the last one
it requested has every job the build needs ``done`` on some source, and its snapshot is neither built nor
in the landing folder, it requests one ``fetch_dump`` run for it (run key ``fetch-<snapshot>``: never
twice). The fetch puts the verified files and their checksum list into the landing folder, where the
landing sensor (:mod:`orchestration.sensors`) finds the dump and requests its build.
"""

import json
from pathlib import Path

from dagster import (
    Config,
    DefaultSensorStatus,
    Nothing,
    OpExecutionContext,
    Out,
    Output,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    job,
    op,
    sensor,
)

from assets import params
from assets.storage import SnapshotPaths
from assets.wikipedia.fetch import (
    ENTITY_WIKI,
    Fetcher,
    FetchSettings,
    Release,
    ReleaseUnavailable,
    find_entity_release,
    find_wiki_release,
)
from orchestration.resources import PipelineSettings, dagster_metadata

__all__ = ["FETCH_JOB", "FetchConfig", "build_release_sensor", "fetch_dump"]

FETCH_JOB = "fetch_dump"


class FetchConfig(Config):
    """Which run of which wiki to fetch (defaults: ``snapshots.releases`` of params.yaml)."""

    wiki: str
    date: str = "latest"  # YYYYMMDD, or the newest ready run
    source: str | None = None  # tried first, before the configured sources
    landing_dir: str | None = None  # None: snapshots.landing_dir


@op(
    description="Fetch a dump run's files into the landing folder: resumed, verified, then published.",
    out=Out(Nothing),  # the files are the result; the report is the output's metadata (no IO manager)
)
def fetch_release(context: OpExecutionContext, config: FetchConfig, pipeline: PipelineSettings) -> Output:
    section = pipeline.params.snapshots.releases
    sources = list(dict.fromkeys([*([config.source] if config.source else []), *section.sources]))
    fetcher = Fetcher(FetchSettings.from_params(section, pipeline.params.limits.fetch))
    release = find_wiki_release(
        config.wiki,
        sources,
        fetcher.read_text,
        fetcher.read_json,
        date=config.date,
        form=section.form,
        tables=section.tables,
        limits=pipeline.params.limits.fetch,
    )
    landing = Path(config.landing_dir) if config.landing_dir else params.landing_dir()
    landing.mkdir(parents=True, exist_ok=True)
    report = fetcher.fetch(release, landing, on_progress=context.log.info)
    context.log.info(json.dumps(report.to_dict()))
    if section.wikidata:  # the entity dump beside it (wikidata.files: [landing] reads it)
        try:
            entities = find_entity_release(sources, fetcher.read_text)
        except ReleaseUnavailable as error:
            context.log.warning(f"no Wikidata entity dump fetched: {error}")
        else:
            folder = landing / ENTITY_WIKI
            folder.mkdir(exist_ok=True)
            if not _landed(folder, entities):
                fetched = fetcher.fetch(entities, folder, on_progress=context.log.info)
                context.log.info(json.dumps(fetched.to_dict()))
    return Output(None, metadata=dagster_metadata(report.metadata()))


@job(name=FETCH_JOB, description="Fetch a Wikimedia dump run into the landing folder (kiltpipe fetch).")
def fetch_dump() -> None:
    fetch_release()


def _landed(landing: Path, release: Release) -> bool:
    """Whether the landing folder already holds the run's checksum list (fetched, or copied by hand)."""
    return any((landing / f"{release.snapshot_id}-{kind}sums.txt").is_file() for kind in ("sha1", "md5"))


def build_release_sensor(
    section: params.ReleasesParams | None = None, landing_dir: Path | None = None
) -> SensorDefinition:
    """The release sensor over ``section`` (``snapshots.releases``; default: the built-in defaults)."""
    section = section or params.ReleasesParams()

    @sensor(
        name="dump_release_sensor",
        job_name=FETCH_JOB,
        minimum_interval_seconds=section.interval_seconds,
        default_status=DefaultSensorStatus.RUNNING if section.sensor_running else DefaultSensorStatus.STOPPED,
        description=(
            "Polls the dump sites of snapshots.releases (params.yaml) and fetches each new run of the "
            "watched wikis once every job the build needs is done; the landing sensor then builds it."
        ),
    )
    def dump_release_sensor(
        context: SensorEvaluationContext, pipeline: PipelineSettings
    ) -> SensorResult | SkipReason:
        settings = pipeline.params.snapshots.releases
        if not settings.wikis:
            return SkipReason("no wiki to watch: set snapshots.releases.wikis in params.yaml (e.g. [enwiki])")
        landing = (landing_dir or params.landing_dir()).absolute()
        cursor: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
        fetcher = Fetcher(FetchSettings.from_params(settings, pipeline.params.limits.fetch))
        requests, notes = [], []
        for wiki in settings.wikis:
            try:
                release = find_wiki_release(
                    wiki,
                    settings.sources,
                    fetcher.read_text,
                    fetcher.read_json,
                    form=settings.form,
                    tables=settings.tables,
                    newer_than=cursor.get(wiki),
                    limits=pipeline.params.limits.fetch,
                )
            except ReleaseUnavailable as error:
                notes.append(str(error).splitlines()[0])
                continue
            cursor[wiki] = release.date
            built = SnapshotPaths(pipeline.data_path, release.snapshot_id).knowledge_source.is_dir()
            if built or _landed(landing, release):
                notes.append(f"{release.snapshot_id} is already {'built' if built else 'in ' + str(landing)}")
                continue
            context.log.info(f"{release.snapshot_id} is ready on {release.source}: fetching it")
            requests.append(
                RunRequest(
                    run_key=f"fetch-{release.snapshot_id}",
                    run_config={
                        "ops": {
                            "fetch_release": {
                                "config": {
                                    "wiki": wiki,
                                    "date": release.date,
                                    "source": release.source,
                                    "landing_dir": str(landing),
                                }
                            }
                        }
                    },
                    tags={"kilt/snapshot": release.snapshot_id, "kilt/source": release.source},
                )
            )
        if not requests:
            return SensorResult(skip_reason="; ".join(notes) or "no new run", cursor=json.dumps(cursor))
        return SensorResult(run_requests=requests, cursor=json.dumps(cursor))

    return dump_release_sensor
