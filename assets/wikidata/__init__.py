"""Wikidata beside the text: the entity dump read as a stream (``reader``), its entities and statements
aligned to a snapshot (``build``), their facts as passages of the ``kb`` collection (``facts``), an entity
linker (``linker``) and shortest paths between entities (``graph``); ``checks`` are what the asset checks
measure."""

from assets.wikidata import checks as kb_checks
from assets.wikidata.build import (
    ENTITIES_SCHEMA,
    LABELS_FILE,
    STATEMENTS_SCHEMA,
    WikidataReport,
    build_wikidata,
    embedded_entity_files,
    snapshot_wiki,
)
from assets.wikidata.facts import FACTS_SCHEMA, EntityLabels, FactsReport, build_kb_facts, entity_facts
from assets.wikidata.graph import (
    KbPath,
    PathFinder,
    PathSearch,
    UnknownEntity,
    edge_table,
    write_graph,
)
from assets.wikidata.kb import KB_PARQUET, KB_TABLES, KnowledgeBase, create_kb_tables, kb_sources
from assets.wikidata.linker import Candidate, EntityLinker, Mention, build_mentions, normalise
from assets.wikidata.oracle import OracleReport, answer_entities, build_kb_paths, question_entities
from assets.wikidata.reader import (
    Entity,
    EntityHead,
    EntityTerms,
    ReadReport,
    Statement,
    WikidataReadError,
    aliases,
    iter_entities,
    mapping,
    qualifier_snaks,
    sitelink_title,
    term,
)
from assets.wikidata.values import Value, render_value, row_value, snak_value, time_text

__all__ = [
    "ENTITIES_SCHEMA",
    "FACTS_SCHEMA",
    "KB_PARQUET",
    "KB_TABLES",
    "LABELS_FILE",
    "STATEMENTS_SCHEMA",
    "Candidate",
    "Entity",
    "EntityHead",
    "EntityLabels",
    "EntityLinker",
    "EntityTerms",
    "FactsReport",
    "KbPath",
    "KnowledgeBase",
    "Mention",
    "OracleReport",
    "PathFinder",
    "PathSearch",
    "ReadReport",
    "Statement",
    "UnknownEntity",
    "Value",
    "WikidataReadError",
    "WikidataReport",
    "aliases",
    "answer_entities",
    "build_kb_facts",
    "build_kb_paths",
    "build_mentions",
    "build_wikidata",
    "create_kb_tables",
    "edge_table",
    "embedded_entity_files",
    "entity_facts",
    "iter_entities",
    "kb_checks",
    "kb_sources",
    "mapping",
    "normalise",
    "qualifier_snaks",
    "question_entities",
    "render_value",
    "row_value",
    "sitelink_title",
    "snak_value",
    "snapshot_wiki",
    "term",
    "time_text",
    "write_graph",
]
