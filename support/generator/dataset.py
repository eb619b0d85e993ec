"""A KILT-format dataset drawn from a built snapshot's knowledge source (issue 28, part 4): every task shape
KILT has, with provenance spans sampled from the snapshot's own pages and answers the span text.

Records, by task (the KILT dataset name says how the mapping treats them):

* ``nq`` (question answering, 40 %): a span of 2-10 words is the answer and the provenance; the input is
  the span blanked out of its context (4 words each side: about as long as an NQ question, ~9 words);
* ``fever`` (fact checking, 25 %): a span of 6-16 words is the claim (FEVER's are ~8 words) and the
  provenance, answer ``SUPPORTS`` (a label: the mapping takes the evidence from the source snapshot,
  never the answer);
* ``aidayago2`` (entity linking, 20 %): one link's anchor marked ``[START_ENT] .. [END_ENT]`` in 25 words
  of its paragraph each side; the answer is the linked page's title and the provenance that whole page;
* ``hotpotqa`` (multi-evidence, 15 %): two spans of 6-12 words on two pages; the answer is the first span's
  text, the input the first's blanked context followed by the second span (~18 words, as HotpotQA's).

Inputs are as long as KILT's because the retrieval evaluation searches every one of them: BM25's cost per
query grows with its terms.

Pages are drawn uniformly over the snapshot's articles (disambiguation pages skipped; a page that cannot
give a record passes its draw to the next page), so popular and stub pages are cited as often as they
exist. A span is kept only where its words occur first on its page at that place: KILT's rule maps a
text to its best (first, on ties) span, so a span repeated earlier on its page could never map to itself.
Deterministic for a seed. Written as ``{task}-dev-kilt.jsonl`` with ``dataset.json`` (counts, skips).

    .venv/bin/python benchmarks/gen_scale_dataset.py --data-dir DATA --snapshot ID --out DIR \\
        [--records 100000] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from assets.datasets import TargetPage, content_start, find_best_span, prepare_page, searched_paragraph_ids
from assets.files import atomic_path, write_json_atomic
from assets.storage import SnapshotPaths
from support.workspace import log

TASKS: dict[str, float] = {"nq": 0.40, "fever": 0.25, "aidayago2": 0.20, "hotpotqa": 0.15}
SPAN_WORDS: dict[str, tuple[int, int]] = {"nq": (2, 10), "fever": (6, 16), "hotpotqa": (6, 12)}
QUESTION_CONTEXT_WORDS = 4  # words of context each side of a blanked answer
MENTION_CONTEXT_WORDS = 25  # words of context each side of a marked mention
DATASET_VERSION = 2  # bump when the records drawn for the same arguments change
TRIES = 8  # spans tried on a page before its draw passes to the next page
BLANK = "[BLANK]"
_WORD = re.compile(r"\S+")


@dataclass(frozen=True, slots=True)
class Draw:
    """One provenance a record needs: ``slot`` 0 (or 1, a multi-evidence record's second page)."""

    record: int
    task: str
    slot: int


def plan_draws(pages: int, records: int, seed: int) -> dict[int, list[Draw]]:
    """Page index -> the provenance drawn on it, for ``records`` records over ``pages`` articles."""
    rng = np.random.default_rng(seed)
    names = list(TASKS)
    tasks = rng.choice(len(names), size=records, p=list(TASKS.values()))
    draws: dict[int, list[Draw]] = defaultdict(list)
    for record, task_index in enumerate(tasks.tolist()):
        task = names[task_index]
        for slot in range(2 if task == "hotpotqa" else 1):
            draws[int(rng.integers(pages))].append(Draw(record, task, slot))
    return draws


def _span(page: dict[str, Any], prepared: Any, rng: random.Random, words: tuple[int, int]) -> dict | None:
    """A span of ``words`` words on the page whose text maps back to itself, with its context."""
    text = page["text"]
    pids = [i for i in searched_paragraph_ids(text) if len(text[i].split()) >= words[0]]
    if not pids:
        return None
    for _ in range(TRIES):
        pid = rng.choice(pids)
        tokens = list(_WORD.finditer(text[pid], content_start(text[pid])))
        if len(tokens) < words[0]:
            continue
        length = rng.randint(words[0], min(words[1], len(tokens)))
        first = rng.randrange(len(tokens) - length + 1)
        start, end = tokens[first].start(), tokens[first + length - 1].end()
        span_text = text[pid][start:end]
        found = find_best_span(span_text, prepared)
        if found is None or (found.paragraph_id, found.start_character, found.end_character) != (
            pid,
            start,
            end,
        ):
            continue  # its words occur earlier on the page
        context = QUESTION_CONTEXT_WORDS
        before = " ".join(t.group() for t in tokens[max(0, first - context) : first])
        after = " ".join(t.group() for t in tokens[first + length : first + length + context])
        return {
            "text": span_text,
            "blanked": f"{before} {BLANK} {after}".strip(),
            "provenance": {
                "wikipedia_id": page["wikipedia_id"],
                "title": page["wikipedia_title"],
                "section": TargetPage(page["wikipedia_id"], page["wikipedia_title"], text).section_of(pid),
                "start_paragraph_id": pid,
                "start_character": start,
                "end_paragraph_id": pid,
                "end_character": end,
                "bleu_score": 1.0,
            },
        }
    return None


def _mention(page: dict[str, Any], rng: random.Random, articles: set[str]) -> dict | None:
    """A link of the page to an article of the snapshot, as an entity-linking input."""
    anchors = [a for a in page["anchors"] or [] if a["wikipedia_id"] in articles and a["text"].strip()]
    if not anchors:
        return None
    anchor = rng.choice(anchors)
    paragraph = page["text"][anchor["paragraph_id"]]
    before = paragraph[content_start(paragraph) : anchor["start"]].split()[-MENTION_CONTEXT_WORDS:]
    after = paragraph[anchor["end"] :].split()[:MENTION_CONTEXT_WORDS]
    mention = paragraph[anchor["start"] : anchor["end"]]
    return {
        "input": " ".join([*before, "[START_ENT]", mention, "[END_ENT]", *after]),
        "answer": anchor["wikipedia_title"],
        "provenance": {"wikipedia_id": anchor["wikipedia_id"], "title": anchor["wikipedia_title"]},
    }


def _record(task: str, record: int, seed: int, parts: list[dict[str, Any]], snapshot: str) -> dict[str, Any]:
    meta = {"generated_from": snapshot, "seed": seed}
    if task == "aidayago2":
        (part,) = parts
        return {
            "id": f"{task}-{seed}-{record}",
            "input": part["input"],
            "output": [{"answer": part["answer"], "provenance": [part["provenance"]]}],
            "meta": meta,
        }
    first = parts[0]
    if task == "fever":
        claim, answer = first["text"], "SUPPORTS"
    elif task == "nq":
        claim, answer = first["blanked"], first["text"]
    else:
        claim, answer = f"{first['blanked']} {parts[1]['text']}", first["text"]
    return {
        "id": f"{task}-{seed}-{record}",
        "input": claim,
        "output": [{"answer": answer, "provenance": [p["provenance"] for p in parts]}],
        "meta": meta,
    }


def _pages_twice(shards: list[Path]) -> Iterator[dict[str, Any]]:
    for round_ in range(2):
        for shard in shards:
            frame = pl.read_parquet(shard, columns=["wikipedia_id", "wikipedia_title", "text", "anchors"])
            yield from frame.iter_rows(named=True)
            log(f"{shard.name} (round {round_ + 1}) read")
    raise RuntimeError("draws were left after two rounds over the pages")


def generate_dataset(snapshot: SnapshotPaths, out: Path, *, records: int, seed: int) -> dict[str, Any]:
    """Write the dataset of ``records`` records drawn from the snapshot's knowledge source."""
    started = time.perf_counter()
    shards = sorted(snapshot.pages_dir.glob("*.parquet"))
    if not shards:
        raise FileNotFoundError(f"{snapshot.pages_dir}: no knowledge-source shards")
    kinds = pl.scan_parquet(shards).select("wikipedia_id", "is_disambiguation").collect()
    articles = set(kinds.filter(~pl.col("is_disambiguation"))["wikipedia_id"].to_list())
    draws = plan_draws(len(kinds), records, seed)
    parts: dict[int, list[dict[str, Any] | None]] = {}
    tasks: dict[int, str] = {}
    pending: list[Draw] = []
    passed = Counter()
    index = 0
    for page in _pages_twice(shards):  # draws left after the last page pass on to the first ones
        wanted = pending + draws.pop(index, [])
        index += 1
        pending = []
        if not wanted:
            continue
        if page["wikipedia_id"] not in articles:
            passed["disambiguation page"] += len(wanted)
            pending = wanted
            continue
        prepared = None
        for draw in wanted:
            rng = random.Random(f"{seed}:{draw.record}:{draw.slot}:{page['wikipedia_id']}")
            if draw.task == "aidayago2":
                part = _mention(page, rng, articles)
            else:
                prepared = prepared or prepare_page(page["text"])
                part = _span(page, prepared, rng, SPAN_WORDS[draw.task])
            if part is None:
                passed["no span that maps to itself" if draw.task != "aidayago2" else "no link"] += 1
                pending.append(draw)
                continue
            tasks[draw.record] = draw.task
            parts.setdefault(draw.record, [None, None][: 2 if draw.task == "hotpotqa" else 1])
            parts[draw.record][draw.slot] = part
        if not draws and not pending:
            break
    out.mkdir(parents=True, exist_ok=True)
    counts: Counter = Counter()
    files = {task: out / f"{task}-dev-kilt.jsonl" for task in TASKS}
    with ExitStack() as stack:
        writers = {
            task: stack.enter_context(open(stack.enter_context(atomic_path(path)), "w", encoding="utf-8"))
            for task, path in files.items()
        }
        for record in sorted(parts):
            task = tasks[record]
            line = _record(task, record, seed, parts[record], snapshot.snapshot_id)
            writers[task].write(json.dumps(line, ensure_ascii=False) + "\n")
            counts[task] += 1
    summary = {
        "snapshot": snapshot.snapshot_id,
        "records": records,
        "seed": seed,
        "version": DATASET_VERSION,
        "by_task": dict(counts),
        "provenance": sum(len(p) for p in parts.values()),
        "pages_cited": len({p["provenance"]["wikipedia_id"] for ps in parts.values() for p in ps}),
        "draws_passed_to_next_page": dict(passed),
        "files": {task: path.name for task, path in files.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_json_atomic(out / "dataset.json", summary)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="the pipeline's data_dir")
    parser.add_argument("--snapshot", required=True, help="the snapshot id")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    summary = generate_dataset(
        SnapshotPaths(args.data_dir, args.snapshot), args.out, records=args.records, seed=args.seed
    )
    log(json.dumps(summary, indent=2))
