"""Re2G's rerank stage: cross-encoder pairs/s and the cost per query at each candidate depth.

Candidates are real: for NQ dev questions (``tests/data/original/dpr_topics``), the union of the top
``depth`` BM25 and dense passages of the built excerpt (``make demo`` builds it under ``data/``). The
cross-encoder has the size of ``cross-encoder/ms-marco-MiniLM-L-6-v2`` (6 layers, hidden 384): the
packaged all-MiniLM-L6-v2 weights with a one-logit head (its scores mean nothing; its speed is the real
model's, and no cross-encoder can be downloaded where this runs in CI). ``--model`` takes a real one.

Ours (:class:`assets.indexes.rerank.CrossEncoderReranker`: all pairs of a batch of queries scored
together, longest first) is compared with the peer, sentence-transformers' ``CrossEncoder.predict`` of each
query's pairs in candidate order, at the same batch size and device.

    .venv/bin/python benchmarks/bench_rerank.py [--device auto] [--questions 5] [--depths 10,50]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from assets import params
from assets.indexes import IndexSettings, Retriever
from assets.indexes.dense.encoders import encode_devices, passage_text
from assets.indexes.rerank import CrossEncoderReranker
from assets.storage import resolve_snapshot
from benchmarks.common import format_table, machine_info, nq_questions, write_results
from support.workspace import WORK_DIR, log


def minilm_sized_cross_encoder() -> Path:
    """all-MiniLM-L6-v2's weights under a one-logit sequence-classification head, saved once."""
    target = WORK_DIR / "models" / "minilm-l6-cross-encoder"
    if (target / "config.json").is_file():
        return target
    import shutil

    import torch
    from transformers import BertForSequenceClassification

    from assets.indexes.dense.encoders import default_model_dir

    torch.manual_seed(0)
    source = default_model_dir()
    BertForSequenceClassification.from_pretrained(source, num_labels=1).save_pretrained(target)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (source / name).is_file():
            shutil.copyfile(source / name, target / name)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", help="a cross-encoder directory or hub name (default: MiniLM-L6-sized)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--questions", type=int, default=5, help="NQ dev questions")
    parser.add_argument("--depths", default="10,50", help="candidates from each of bm25 and dense")
    parser.add_argument("--batch-sizes", default="16,64")
    parser.add_argument("--data-dir", type=Path, default=None, help="default: params.yaml's data_dir")
    args = parser.parse_args()

    device = encode_devices(args.device)[0]
    model = args.model or str(minilm_sized_cross_encoder())
    paths = resolve_snapshot(args.data_dir or params.data_dir(), None)
    questions = nq_questions(args.questions)
    depths = [int(d) for d in args.depths.split(",")]
    defaults = IndexSettings.from_params(params.load_params().indexes)
    settings = defaults.replace(
        rerank=defaults.rerank.replace(model=model), dense=defaults.dense.replace(device=device)
    )
    rows = []
    with Retriever(paths, settings) as retriever:
        for batch_size in (int(b) for b in args.batch_sizes.split(",")):
            reranker = CrossEncoderReranker(model, device=device, batch_size=batch_size)
            for depth in depths:
                search = retriever.searcher("rerank")
                search.depth = depth
                pools = search.pools(questions)
                pairs = sum(len(pool) for pool in pools)
                reranker.rerank(questions[:1], pools[:1], 10)  # warm-up
                started = time.perf_counter()
                reranker.rerank(questions, pools, 10)
                ours = time.perf_counter() - started
                started = time.perf_counter()
                for question, pool in zip(questions, pools, strict=True):
                    reranker.model.predict(
                        [(question, passage_text(h.title, h.text)) for h in pool],
                        batch_size=batch_size,
                        show_progress_bar=False,
                    )
                peer = time.perf_counter() - started
                row = {
                    "batch_size": batch_size,
                    "depth": depth,
                    "pairs_per_query": round(pairs / len(questions), 1),
                    "pairs_per_second": round(pairs / ours, 1),
                    "peer_pairs_per_second": round(pairs / peer, 1),
                    "speedup_vs_peer": round(peer / ours, 2),
                    "ms_per_query": round(1000 * ours / len(questions), 1),
                }
                rows.append(row)
                log(f"batch {batch_size} depth {depth}: {row['pairs_per_second']} pairs/s")
    results = {
        "device": device,
        "model": model
        if args.model
        else "all-MiniLM-L6-v2 weights + one-logit head (ms-marco-MiniLM-L-6 size)",
        "questions": f"{len(questions)} NQ dev questions; candidates: union of bm25 and dense top depth",
        "peer": "sentence-transformers CrossEncoder.predict per query, candidate order, same batch size",
        "runs": rows,
        "machine": machine_info(),
    }
    path = write_results(f"rerank_{'gpu' if device.startswith('cuda') else 'cpu'}", results)
    headers = ["batch", "depth", "pairs/query", "pairs/s", "peer pairs/s", "ratio", "ms/query"]
    print(f"\nCross-encoder rerank on {device}:")
    print(
        format_table(
            headers,
            [[r["batch_size"], r["depth"], r["pairs_per_query"], r["pairs_per_second"],
              r["peer_pairs_per_second"], f"{r['speedup_vs_peer']}x", r["ms_per_query"]] for r in rows],
        )
    )  # fmt: skip
    print(f"results: {path}")


if __name__ == "__main__":
    main()
