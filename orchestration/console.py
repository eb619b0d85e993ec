"""The console logger of kilt-pipeline's runs: Dagster's own lines, except that a step that failed for want
of disk space is one line naming the file (its traceback says nothing a user can act on, and Dagster's
event log in the UI keeps it). With ``log_level: DEBUG`` (``kiltpipe build --verbose``) every traceback is
printed as Dagster prints it."""

from __future__ import annotations

import logging
import sys

from dagster import Field, InitLoggerContext, logger
from dagster._core.log_manager import LOG_RECORD_EVENT_ATTR

from assets.disk_space import DISK_FULL
from orchestration.build_guard import error_line

FORMAT = "%(asctime)s - %(name)s - %(levelname)s - %(message)s"


class _DiskFullInOneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        event = getattr(record, LOG_RECORD_EVENT_ATTR, None)
        error = None
        if event is not None and event.is_step_failure:
            error = event.step_failure_data.error
        elif event is not None and event.is_job_failure and event.job_failure_data is not None:
            error = event.job_failure_data.error  # the run's failure repeats its first step's error
        if error is not None:
            line = error_line(error)
            if line.startswith(f"{DISK_FULL}:"):
                said = f"step {event.step_key} failed: {line}" if event.is_step_failure else event.message
                record = logging.makeLogRecord({**record.__dict__, "msg": said, "args": ()})
        return super().format(record)


@logger(
    {
        "log_level": Field(str, is_required=False, default_value="INFO", description="The threshold."),
        "name": Field(str, is_required=False, default_value="dagster", description="The logger's name."),
    },
    description="Dagster's console lines on stderr; a step failed for want of disk space in one line.",
)
def console_logger(init_context: InitLoggerContext) -> logging.Logger:
    config = init_context.logger_config
    level = logging.getLevelName(str(config["log_level"]).upper())
    log = logging.Logger(config["name"], level=level)
    handler = logging.StreamHandler(sys.stderr)
    verbose = level <= logging.DEBUG
    handler.setFormatter(logging.Formatter(FORMAT) if verbose else _DiskFullInOneLine(FORMAT))
    log.addHandler(handler)
    return log
