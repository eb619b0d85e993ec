"""Japanese, Chinese and Thai Wikipedia text through the pipeline (issue 62's figures), on the real pages
shipped in ``tests/data/wikipedia_multilingual`` (the head of a 2022 jawiki dump, 168 articles; the zhwiki
and thwiki "Berlin" pages, whose dumps call themselves enwiki), all in one run:

* **passage length**: median characters of the passages written mostly in the script (``words``: 100
  segmenter words; the references, 100 segmenter tokens measured on these pages with SudachiPy mode C, jieba
  and PyThaiNLP newmm: ja ~170, zh ~187, th ~447 characters; target within ±40 %), the longest and the 95th
  percentile of the full passages against their median (target: 2x), the ``characters`` unit (target
  100 ± 10 non-blank characters), and the same pages cut by whitespace words as before (the peer: what the
  chunker did, and what DuckDB's ``\\s+`` recount made of it);
* **segmentation speed**: :func:`assets.segmentation.count_words` over the jawiki text and the plain text
  of 100 zhwiki articles (ReadWiki-ZH), one core, MB/s of UTF-8 (target >= 1), beside jieba 0.42.1's
  ``lcut`` (CORA/mDPR's Chinese segmenter) on the same Chinese text, and ICU's own segments alone (the
  floor under any counter built on it);
* **knowledge source -> passages** of the jawiki head against an English dump of the same text bytes (the
  embedded excerpt's articles, replicated), same settings, same run (target <= 1.5x the English time);
* **BM25**: Thai with ICU's words (pre-tokenized) against Anserini's own Thai analyzer (the peer: on this JRE
  it indexes nothing), a clause of each Thai passage asked, its passage in the top 5 (the questions figure
  needs a public set of Thai questions about Thai Wikipedia articles; none installs from PyPI, so it is
  not measured here); Japanese: each article's title asked, the article first (target >= 0.9); Chinese:
  MKQA's zh_cn and zh_tw forms of its 11 shipped questions, and sentences of the page asked in Traditional
  and Simplified characters, top-10 overlap with and without the Simplified normalization (target >= 0.8).

    .venv/bin/python benchmarks/bench_unspaced_scripts.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from assets.indexes.bm25 import Bm25IndexError, Bm25Searcher, build_bm25_index
from assets.params import KnowledgeSourceParams, PassagesParams
from assets.segmentation import UNSPACED, count_words
from assets.storage import SnapshotPaths
from assets.wikipedia.pages import ParseSettings, build_knowledge_source
from assets.wikipedia.passages import build_passages
from benchmarks.common import format_table, machine_info, write_results
from support.dump_variants import (
    JAWIKI_HEAD,
    MULTILINGUAL_BERLIN,
    complete_pages,
    first_articles,
    read_xml,
    replicated,
    with_siteinfo,
    write_dump,
)
from support.real_data import excerpt_dump, real_file
from support.workspace import WORK_DIR, log

WORK = WORK_DIR / "unspaced-scripts"
READWIKI_ZH = ("wikipedia_multilingual", "zh", "readwiki-zh-zhwiki20200220-words_txt-100.tar")
REFERENCE_CHARACTERS = {"ja": 170, "zh": 187, "th": 447}
"""Characters of 100 segmenter tokens on these pages (SudachiPy C, jieba, PyThaiNLP newmm)."""


def _snapshot(name: str, xml: bytes, unit: str = "words") -> SnapshotPaths:
    """``xml`` built into a knowledge source and passages under ``WORK/<name>`` (rebuilt each run)."""
    folder = WORK / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    dump = write_dump(folder / f"{name}-pages-articles.xml", xml)
    settings = ParseSettings(KnowledgeSourceParams(workers=0, snapshot=name))
    build_knowledge_source(dump, folder / "data", settings, progress=False)
    paths = SnapshotPaths(folder / "data", name)
    build_passages(paths, PassagesParams(workers=0, unit=unit), progress=False)
    return paths


def _passages(paths: SnapshotPaths) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return [
        row
        for part in sorted(paths.passages_parquet.glob("*.parquet"))
        for row in pq.read_table(part).to_pylist()
    ]


def _own(passages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in passages if len(UNSPACED.findall(p["text"])) > 0.5 * len(p["text"])]


def _lengths(language: str, paths: SnapshotPaths, by_characters: SnapshotPaths) -> dict[str, Any]:
    """Passage lengths in characters of the passages mostly in the script, by words and by characters."""
    own = _own(_passages(paths))
    full = sorted(len(p["text"]) for p in own if p["word_count"] == 100)
    median = statistics.median(len(p["text"]) for p in own)
    characters = [
        len("".join(p["text"].split())) for p in _own(_passages(by_characters)) if p["word_count"] == 100
    ]
    return {
        "passages": len(own),
        "median_chars": median,
        "reference_chars": REFERENCE_CHARACTERS[language],
        "median_vs_reference": round(median / REFERENCE_CHARACTERS[language], 2),
        "full_passages": len(full),
        "full_median_chars": statistics.median(full) if full else None,
        "full_p95_vs_median": round(full[int(0.95 * (len(full) - 1))] / statistics.median(full), 2)
        if full
        else None,
        "full_max_vs_median": round(full[-1] / statistics.median(full), 2) if full else None,
        "characters_unit_median": statistics.median(characters) if characters else None,
    }


def _text(paths: SnapshotPaths) -> str:
    """The body text of a snapshot's pages (paragraphs, headers dropped)."""
    import pyarrow.parquet as pq

    return "\n".join(
        paragraph
        for part in sorted(paths.pages_dir.glob("*.parquet"))
        for text in pq.read_table(part, columns=["text"]).column(0).to_pylist()
        for paragraph in text[1:]
        if not paragraph.startswith("Section::::")
    )


def _readwiki_text() -> str:
    """The plain text of the first 100 articles of zhwiki-20200220 (ReadWiki-ZH's extraction, Simplified)."""
    import tarfile

    with tarfile.open(real_file(*READWIKI_ZH)) as archive:
        members = [m for m in archive.getmembers() if m.isfile() and m.name.endswith(".txt")]
        return "\n".join(archive.extractfile(m).read().decode("utf-8") for m in members)


def _best(repeat: int, work: Any) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def _speed(texts: dict[str, str], repeat: int) -> dict[str, Any]:
    """count_words MB/s per language (one core) and jieba's lcut on the Chinese text."""
    import jieba
    from icu4py.breakers import WordBreaker

    jieba.setLogLevel(60)
    jieba.initialize()
    out: dict[str, Any] = {}
    for language, text in texts.items():
        paragraphs = text.split("\n")
        size = len(text.encode()) / 1e6
        seconds = _best(repeat, lambda p=paragraphs: [count_words(x) for x in p])
        icu = _best(repeat, lambda p=paragraphs: [list(WordBreaker(x, "und").segments()) for x in p])
        out[language] = {
            "mb": round(size, 2),
            "ours_mb_per_s": round(size / seconds, 2),
            "icu_segments_alone_mb_per_s": round(size / icu, 2),
            "str_split_mb_per_s": round(size / _best(repeat, lambda p=paragraphs: [x.split() for x in p]), 1),
        }
        if language == "zh":
            peer = _best(repeat, lambda p=paragraphs: [jieba.lcut(x) for x in p])
            out[language]["jieba_mb_per_s"] = round(size / peer, 2)
            out[language]["ours_vs_jieba"] = round(peer / seconds, 2)
    return out


def _passages_time(japanese: SnapshotPaths, repeat: int) -> dict[str, Any]:
    """Knowledge source -> passages of the jawiki head against English pages of the same text bytes."""
    ja_bytes = len(_text(japanese).encode())
    excerpt = read_xml(excerpt_dump())
    english = _snapshot("enwiki-20160501", excerpt)
    en_bytes = len(_text(english).encode())
    copies = max(1, round(ja_bytes / en_bytes))
    if copies > 1:
        english = _snapshot("enwiki-20160501", replicated(excerpt, copies))
        en_bytes = len(_text(english).encode())

    def run(paths: SnapshotPaths) -> float:
        return _best(repeat, lambda: build_passages(paths, PassagesParams(workers=0), progress=False))

    ja_seconds, en_seconds = run(japanese), run(english)
    ja_rate, en_rate = ja_seconds / (ja_bytes / 1e6), en_seconds / (en_bytes / 1e6)
    return {
        "ja_text_mb": round(ja_bytes / 1e6, 2),
        "en_text_mb": round(en_bytes / 1e6, 2),
        "ja_seconds": round(ja_seconds, 3),
        "en_seconds": round(en_seconds, 3),
        "ja_s_per_mb": round(ja_rate, 3),
        "en_s_per_mb": round(en_rate, 3),
        "ja_vs_en": round(ja_rate / en_rate, 2),
    }


def _index(paths: SnapshotPaths, name: str, language: str, analysis: str | None) -> tuple[Path, dict]:
    """A BM25 index of the snapshot's passages (``analysis`` None: the language's own); what it indexed
    (0 and Anserini's error when it indexed nothing)."""
    index = paths.root / "indexes" / name
    try:
        report = build_bm25_index(
            paths.passages_collection, index, language=language, analysis=analysis, progress=False
        )
    except Bm25IndexError as error:
        return index, {"documents": 0, "error": str(error).split(";")[0][-300:]}
    built = {"documents": report.documents_indexed, "of": report.collection_documents}
    return index, {**built, "analyzer": report.language, "analysis": report.analysis}


def _thai_bm25(thai: SnapshotPaths) -> dict[str, Any]:
    """A clause of each Thai passage asked: its passage in the top 5, ours and Anserini's Thai analyzer."""
    passages = [p for p in _own(_passages(thai)) if len(p["text"]) > 100]
    out: dict[str, Any] = {}
    for name, analysis in (("ours", None), ("anserini_thai", "none")):
        index, built = _index(thai, f"bm25-{name}", "th", analysis)
        found = 0
        if built["documents"]:
            with Bm25Searcher(index) as searcher:
                for passage in passages:
                    hits = searcher.search(passage["text"].split(" ")[0][:80], k=5)
                    found += any(h.passage_id == passage["passage_id"] for h in hits)
        out[name] = {**built, "questions": len(passages), "in_top5": round(found / len(passages), 3)}
    return out


def _japanese_titles(japanese: SnapshotPaths) -> dict[str, Any]:
    index, built = _index(japanese, "bm25", "ja", None)
    titles = sorted({p["title"] for p in _passages(japanese)})
    with Bm25Searcher(index) as searcher:
        first = sum(1 for t in titles if (hits := searcher.search(t, k=1)) and hits[0].title == t)
    return {**built, "titles": len(titles), "first": round(first / len(titles), 3)}


def _mkqa_questions() -> list[dict[str, str]]:
    with gzip.open(real_file("original", "mkqa", "test_mkqa.jsonl.gz"), "rt") as handle:
        records = [json.loads(line) for line in handle]
    dummy = real_file("original", "mkqa", "hf_dummy_mkqa_first5.jsonl").read_text().splitlines()
    return [r["queries"] for r in records + [json.loads(line) for line in dummy if line.strip()]]


def _chinese_variants(chinese: SnapshotPaths) -> dict[str, Any]:
    """Top-10 overlap of zh_cn and zh_tw forms (MKQA's, and the page's own sentences converted by OpenCC),
    with the Simplified normalization (ours) and without (Anserini's CJK bigrams on the raw text)."""
    import opencc

    to_tw, to_cn = opencc.OpenCC("s2twp.json").convert, opencc.OpenCC("t2s.json").convert
    sentences = [p["text"][:40] for p in _passages(chinese) if len(p["text"]) > 60][:50]
    pairs = {
        "mkqa": [(q["zh_cn"], q["zh_tw"]) for q in _mkqa_questions()],
        "page_sentences": [(to_cn(s), to_tw(s)) for s in sentences],
    }
    out: dict[str, Any] = {}
    for name, analysis in (("ours", None), ("anserini_raw", "none")):
        index, built = _index(chinese, f"bm25-{name}", "zh", analysis)
        row: dict[str, Any] = dict(built)
        with Bm25Searcher(index) as searcher:
            for kind, questions in pairs.items():
                overlaps = []
                for cn, tw in questions:
                    a = {h.passage_id for h in searcher.search(cn, k=10)}
                    b = {h.passage_id for h in searcher.search(tw, k=10)}
                    overlaps.append(len(a & b) / max(len(a | b), 1) if a or b else 1.0)
                row[f"{kind}_overlap"] = round(statistics.mean(overlaps), 3)
                row[f"{kind}_questions"] = len(questions)
        out[name] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timings: best of N")
    parser.add_argument("--articles", type=int, default=None, help="first N jawiki articles (all)")
    parser.add_argument("--skip-bm25", action="store_true", help="no BM25 figures (no JVM)")
    args = parser.parse_args()
    log("building the ja, zh and th snapshots from the shipped real pages")
    xml = {
        "ja": (
            first_articles(read_xml(real_file(*JAWIKI_HEAD)), args.articles)
            if args.articles
            else complete_pages(read_xml(real_file(*JAWIKI_HEAD)))
        ),
        "zh": with_siteinfo(read_xml(real_file(*MULTILINGUAL_BERLIN["zh"])), "zhwiki", "zh"),
        "th": with_siteinfo(read_xml(real_file(*MULTILINGUAL_BERLIN["th"])), "thwiki", "th"),
    }
    names = {"ja": "jawiki-20220720", "zh": "zhwiki-20210914", "th": "thwiki-20210902"}
    words = {language: _snapshot(names[language], data) for language, data in xml.items()}
    chars = {
        language: _snapshot(names[language] + "-chars", data, "characters") for language, data in xml.items()
    }
    lengths = {language: _lengths(language, words[language], chars[language]) for language in xml}
    log("segmentation speed")
    speed = _speed({"ja": _text(words["ja"]), "zh": _readwiki_text()}, args.repeat)
    log("knowledge source -> passages, ja against en of the same bytes")
    timing = _passages_time(words["ja"], args.repeat)
    results: dict[str, Any] = {
        "machine": machine_info(),
        "lengths": lengths,
        "speed": speed,
        "passages": timing,
    }
    if not args.skip_bm25:
        log("BM25: th, ja, zh")
        results["bm25"] = {
            "th": _thai_bm25(words["th"]),
            "ja": _japanese_titles(words["ja"]),
            "zh": _chinese_variants(words["zh"]),
        }
    print(
        format_table(
            ["lang", "passages", "median chars", "ref", "ratio", "p95/med", "max/med", "chars unit"],
            [
                [
                    language, row["passages"], row["median_chars"], row["reference_chars"],
                    f"{row['median_vs_reference']:.2f}x", row["full_p95_vs_median"],
                    row["full_max_vs_median"], row["characters_unit_median"],
                ]
                for language, row in lengths.items()
            ],
        )
    )  # fmt: skip
    print(
        json.dumps(
            {"speed": speed, "passages": timing, "bm25": results.get("bm25")}, indent=2, ensure_ascii=False
        )
    )
    write_results("unspaced_scripts", results)


if __name__ == "__main__":
    main()
