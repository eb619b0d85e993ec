"""One reader per form a dump comes in (:mod:`assets.wikipedia.dump.forms`), behind one interface: a
parse step hands its part and its stage-1 sink to the reader of the form the plan told, whatever the form.
A third form (a KILT JSONL import, a ZIM file) is its reading module, its :class:`InputForm` and one line
here."""

from __future__ import annotations

from typing import Protocol

from assets.input_forms import ENTERPRISE_FORM, XML_FORM
from assets.wikipedia.dump import FORMS, SiteInfo
from assets.wikipedia.pages import conversion, enterprise_steps
from assets.wikipedia.pages.enterprise_steps import read_enterprise_part
from assets.wikipedia.pages.plan import DumpPart
from assets.wikipedia.pages.stage1 import Stage1Sink, StepWork
from assets.wikipedia.pages.xml_steps import read_xml_part

__all__ = ["CONVERSION_MODULES", "READERS", "PartReader", "reader_for"]


class PartReader(Protocol):
    """Reads one part of a dump into ``sink`` (every converted batch through :meth:`Stage1Sink.add`, its
    counters into ``sink.report``) as ``work`` says (its pool, its progress); returns the wiki's
    :class:`SiteInfo`, the newest revision timestamp read and the ``(page id, revision)`` rows a newer
    record of the same page superseded."""

    def __call__(
        self, part: DumpPart, sink: Stage1Sink, work: StepWork
    ) -> tuple[SiteInfo, str | None, list[tuple[str, int]]]: ...


READERS: dict[str, PartReader] = {XML_FORM: read_xml_part, ENTERPRISE_FORM: read_enterprise_part}
"""The reader of each form, by the form's one name."""

CONVERSION_MODULES = (conversion.__name__, enterprise_steps.__name__)
"""Where the functions the readers run in a conversion pool live: what the pool's fork server imports once."""


def reader_for(form: str) -> PartReader:
    """The reader of ``form``; a form without one is a ValueError naming the forms that have one."""
    try:
        return READERS[form]
    except KeyError:
        raise ValueError(
            f"no reader for the input form {form!r} (readers: {', '.join(READERS)}; forms: "
            f"{', '.join(f.name for f in FORMS)})"
        ) from None
