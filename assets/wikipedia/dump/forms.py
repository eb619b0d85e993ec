"""A dump's form told from its first file, once per build (by the dump plan): each form
(:mod:`assets.input_forms`) with how it is recognized (``knowledge_source.input: auto``) and how a file
declared that form is confirmed to be one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from assets.input_forms import ENTERPRISE_FORM, XML_FORM
from assets.params import INPUT_FORM
from assets.wikipedia.dump.enterprise import EnterpriseDumpError, holds_records, is_enterprise_dump

__all__ = ["FORMS", "InputForm", "dump_form"]


@dataclass(frozen=True, slots=True)
class InputForm:
    """One form a dump comes in: ``recognizes`` tells it from the file (its name, its first bytes) for
    ``auto``; ``confirm`` refuses a file declared this form that is not one, naming the file and the
    setting."""

    name: str
    recognizes: Callable[[Path], bool]
    confirm: Callable[[Path], None]


def _confirm_enterprise(path: Path) -> None:
    if not holds_records(path):
        raise EnterpriseDumpError(
            f"{path}: knowledge_source.input is {ENTERPRISE_FORM}, but the file is not a gzip'd tar of "
            f"ndjson records (set knowledge_source.input to auto or {XML_FORM} for a MediaWiki XML dump)"
        )


FORMS: tuple[InputForm, ...] = (
    InputForm(ENTERPRISE_FORM, is_enterprise_dump, _confirm_enterprise),
    # the XML reader is the last resort of ``auto``: it names what is wrong with a file that is neither
    InputForm(XML_FORM, lambda path: True, lambda path: None),
)
"""The forms ``auto`` tries, in order."""


def dump_form(path: Path, declared: str = INPUT_FORM) -> str:
    """The form of the dump whose first file is ``path``: what ``knowledge_source.input`` (``declared``)
    says (checked against the file), or the first of :data:`FORMS` that recognizes it (``auto``)."""
    if declared == "auto":
        return next(form.name for form in FORMS if form.recognizes(Path(path)))
    form = next((form for form in FORMS if form.name == declared), None)
    if form is None:
        raise ValueError(
            f"knowledge_source.input {declared!r}: choose auto, {' or '.join(f.name for f in FORMS)}"
        )
    form.confirm(Path(path))
    return form.name
