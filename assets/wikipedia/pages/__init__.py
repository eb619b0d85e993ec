"""The knowledge source: a dump parsed in steps, redirects and anchors resolved, pages published.

* :mod:`~assets.wikipedia.pages.build`: the whole build (:func:`build_knowledge_source`);
* :mod:`~assets.wikipedia.pages.plan`: a dump cut into parse steps, its form told once;
  :mod:`~assets.wikipedia.pages.parse_steps`: each step read by its form's reader (:mod:`.readers`:
  :mod:`.xml_steps`, :mod:`.enterprise_steps`) into a :mod:`.stage1` sink, converted in worker processes
  (:mod:`~assets.wikipedia.pages.conversion`);
* :mod:`~assets.wikipedia.pages.resolve`: redirect chains and anchors resolved;
* :mod:`~assets.wikipedia.pages.reuse`: pages of an unchanged revision taken from the previous snapshot;
* :mod:`~assets.wikipedia.pages.kilt_jsonl` and :mod:`~assets.wikipedia.pages.kilt_compare`: KILT's own
  JSONL in and out, and how close two knowledge sources' paragraphs are.
"""

from assets.wikipedia.pages.build import (
    assemble_knowledge_source,
    build_knowledge_source,
    progress_bar,
    replacement_problem,
)
from assets.wikipedia.pages.conversion import ConversionSettings, convert_batch
from assets.wikipedia.pages.kilt_compare import (
    identical_share,
    match_paragraphs,
    near_identical,
    read_kilt_pages,
)
from assets.wikipedia.pages.kilt_jsonl import export_kilt_jsonl, import_kilt_jsonl, iter_pages
from assets.wikipedia.pages.parse_steps import parse_dump_part
from assets.wikipedia.pages.plan import DumpPart, DumpPlan, ParseSettings, plan_dump_parts, read_parsed_part
from assets.wikipedia.pages.readers import READERS, reader_for

__all__ = [
    "READERS",
    "ConversionSettings",
    "DumpPart",
    "DumpPlan",
    "ParseSettings",
    "assemble_knowledge_source",
    "build_knowledge_source",
    "convert_batch",
    "export_kilt_jsonl",
    "identical_share",
    "import_kilt_jsonl",
    "iter_pages",
    "match_paragraphs",
    "near_identical",
    "parse_dump_part",
    "plan_dump_parts",
    "progress_bar",
    "read_kilt_pages",
    "read_parsed_part",
    "reader_for",
    "replacement_problem",
]
