"""The torch encoder of every family, on any device: tokenized once, length-sorted batches, fp16/bf16 on GPU.

:class:`TransformerEncoder` holds one or two Hugging Face transformers (a query tower and a passage tower,
the same model for a sentence-transformers encoder) with the pooling, normalisation, maximum length and
prompts of :class:`~assets.indexes.dense.encoders.options.EncoderOptions`. Per call it tokenizes every text in
one fast-tokenizer call (no padding), sorts the rows by token count, pads each batch only to its longest
row, copies the batch to the device from pinned memory, and keeps the pooled vectors on the device until
the call ends (one transfer back). sentence-transformers' ``encode`` sorts by characters, tokenizes per
batch and copies every batch back: ``benchmarks/bench_dense.py --device`` compares the two.

A sentence-transformers model is run here when it is Transformer + Pooling (mean or CLS, prompt tokens
pooled) + optional Normalize, and gives the same vectors as its own ``encode`` (tested to 1e-5); any other
module stack runs through sentence-transformers itself
(:class:`~assets.indexes.dense.encoders.loading.SentenceTransformerEncoder`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from assets.indexes.dense.encoders.base import JOINED_PASSAGE_INPUT, PAIR_PASSAGE_INPUT, SingleTowerEncoder
from assets.indexes.dense.encoders.options import EncoderOptions, resolve_precision, torch_dtype


class Tower:
    """One transformer with its tokenizer: what encodes one side (queries or passages)."""

    def __init__(self, model: Any, tokenizer: Any, *, lower_case: bool = False) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.lower_case = lower_case
        self.is_dpr = type(model).__name__.startswith("DPR")  # pooler_output = CLS (+ projection)
        names = tokenizer.model_input_names
        self.uses_token_types = "token_type_ids" in names
        self.pad_id = tokenizer.pad_token_id or 0
        self.left_padding = getattr(tokenizer, "padding_side", "right") == "left"

    def model_max_length(self) -> int:
        limits = [getattr(self.tokenizer, "model_max_length", None)]
        limits.append(getattr(self.model.config, "max_position_embeddings", None))
        return int(min(v for v in limits if isinstance(v, int) and 0 < v < 1_000_000) or 512)


class TransformerEncoder(SingleTowerEncoder):
    """Queries and passages through torch transformers on ``options.device`` at ``options.precision``.

    ``pair_passages``: a passage is tokenized as the pair (title, text), DPR's input; otherwise as
    ``passage_prompt + title + " " + text``. Vectors come back as float32 numpy arrays.
    """

    backend = "torch"

    def __init__(
        self,
        *,
        name: str,
        passage_tower: Tower,
        query_tower: Tower,
        options: EncoderOptions,
        pair_passages: bool,
        batch_size: int | None = None,
    ) -> None:
        """``options``: resolved (the model's own pooling, normalisation, prompts and length filled in
        where the settings leave them to the model); ``pair_passages``: title and text as two segments."""
        device = options.device
        self.name = name
        self.family = options.family
        self.query_model = options.query_model
        self.pooling = options.pooling
        self.normalize = options.normalize
        self.query_prompt = options.query_prompt or ""
        self.passage_prompt = options.passage_prompt or ""
        self.pair_passages = pair_passages
        max_length, precision = options.max_length, options.precision
        self.passage_input = PAIR_PASSAGE_INPUT if pair_passages else JOINED_PASSAGE_INPUT
        self.device = device
        self.precision = resolve_precision(precision, device)
        self.batch_size = batch_size or (256 if device.startswith("cuda") else 32)
        self.max_length = int(max_length or passage_tower.model_max_length())
        dtype = torch_dtype(self.precision)
        self.towers = {"passage": passage_tower, "query": query_tower}
        for tower in {id(t): t for t in self.towers.values()}.values():
            tower.model.to(device=device, dtype=dtype).eval()
        self.dimension = int(self._run(query_tower, ["dimension probe"], None, 1).shape[1])

    # ---------------------------------------------------------------------------------- public API
    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Raw texts through the passage tower (no prompt): what a single-tower model gives any text."""
        return self._run(self.towers["passage"], list(texts), None, batch_size or self.batch_size)

    def encode_queries(self, queries: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        texts = [self.query_prompt + q for q in queries]
        return self._run(self.towers["query"], texts, None, batch_size or self.batch_size)

    def encode_passages(
        self, titles: Sequence[str | None], texts: Sequence[str | None], batch_size: int | None = None
    ) -> np.ndarray:
        from assets.indexes.dense.encoders.base import passage_text

        tower = self.towers["passage"]
        if self.pair_passages:
            first = [self.passage_prompt + (t or "").strip() for t in titles]
            return self._run(tower, first, [x or "" for x in texts], batch_size or self.batch_size)
        joined = [self.passage_prompt + passage_text(t, x) for t, x in zip(titles, texts, strict=True)]
        return self._run(tower, joined, None, batch_size or self.batch_size)

    # ---------------------------------------------------------------------------------- the loop
    def _run(self, tower: Tower, first: list[str], second: list[str] | None, batch_size: int) -> np.ndarray:
        import torch

        count = len(first)
        if not count:
            return np.zeros((0, getattr(self, "dimension", 0)), dtype=np.float32)
        first = [_prepare(t, tower.lower_case) for t in first]
        if second is not None:
            second = [_prepare(t, tower.lower_case) for t in second]
        encoded = tower.tokenizer(
            first,
            second,
            padding=False,
            truncation=True,
            max_length=self.max_length,
            return_attention_mask=False,
            return_token_type_ids=tower.uses_token_types,
        )
        ids = encoded["input_ids"]
        types = encoded.get("token_type_ids") if tower.uses_token_types else None
        lengths = np.fromiter((len(row) for row in ids), dtype=np.int64, count=count)
        order = np.argsort(-lengths, kind="stable")
        pin = self.device.startswith("cuda")
        pooled = []
        with torch.inference_mode():
            for start in range(0, count, batch_size):
                rows = order[start : start + batch_size]
                feed = _padded(ids, types, lengths, rows, tower.pad_id, tower.left_padding)
                tensors = {}
                for key, array in feed.items():
                    tensor = torch.from_numpy(array)
                    if pin:
                        tensor = tensor.pin_memory()
                    tensors[key] = tensor.to(self.device, non_blocking=pin)
                pooled.append(self._pool(tower, tower.model(**tensors), tensors["attention_mask"]))
            vectors = torch.cat(pooled).float().cpu().numpy()
        out = np.empty_like(vectors)
        out[order] = vectors
        return out

    def _pool(self, tower: Tower, output: Any, mask: Any) -> Any:
        import torch

        if self.pooling == "cls":
            vectors = output.pooler_output if tower.is_dpr else output.last_hidden_state[:, 0]
            vectors = vectors.float()
        else:
            hidden = output.last_hidden_state.float()
            weights = mask.unsqueeze(-1).float()
            vectors = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
        if self.normalize:
            vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
        return vectors

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.spec}, {self.family}, dim={self.dimension}, "
            f"{self.device} {self.precision})"
        )


def _prepare(text: str, lower_case: bool) -> str:
    """As sentence-transformers prepares a text for its tokenizer: stripped, lower-cased when asked."""
    text = str(text).strip()
    return text.lower() if lower_case else text


def _padded(
    ids: list[list[int]],
    types: list[list[int]] | None,
    lengths: np.ndarray,
    rows: np.ndarray,
    pad_id: int,
    left: bool,
) -> dict[str, np.ndarray]:
    """int64 ``input_ids``, ``attention_mask`` (and ``token_type_ids``) of ``rows``, padded to the longest."""
    width = int(lengths[rows].max())
    input_ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    token_types = np.zeros((len(rows), width), dtype=np.int64) if types is not None else None
    for j, i in enumerate(rows.tolist()):
        size = int(lengths[i])
        span = slice(width - size, width) if left else slice(0, size)
        input_ids[j, span] = ids[i]
        mask[j, span] = 1
        if token_types is not None:
            token_types[j, span] = types[i]
    feed = {"input_ids": input_ids, "attention_mask": mask}
    if token_types is not None:
        feed["token_type_ids"] = token_types
    return feed


# ------------------------------------------------------------------------------------------- loading
def load_tower(path: str, side: str) -> Tower:
    """A Hugging Face checkpoint as one tower: DPR classes for DPR checkpoints (the question or context
    encoder its config names, else the one of ``side``), ``AutoModel`` for any other."""
    import transformers
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    config = AutoConfig.from_pretrained(path)
    if config.model_type == "dpr":
        named = [a for a in (config.architectures or []) if a.startswith("DPR")]
        default = "DPRQuestionEncoder" if side == "query" else "DPRContextEncoder"
        model = getattr(transformers, named[0] if named else default).from_pretrained(path)
    else:
        model = AutoModel.from_pretrained(path)
    return Tower(model, AutoTokenizer.from_pretrained(path))


def load_dpr_encoder(
    name: str,
    passage_path: str,
    query_name: str,
    query_path: str,
    options: EncoderOptions,
    device: str,
    batch_size: int | None,
) -> TransformerEncoder:
    """DPR's two towers: ``passage_path`` (context encoder) and ``query_path`` (question encoder)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        passage = load_tower(passage_path, "passage")
        query = passage if query_path == passage_path else load_tower(query_path, "query")
    resolved = options.model_copy(
        update={
            "family": "dpr",
            "query_model": query_name,
            "pooling": options.pooling or "cls",
            "normalize": bool(options.normalize) if options.normalize is not None else False,
            "query_prompt": options.query_prompt or "",
            "passage_prompt": options.passage_prompt or "",
            "device": device,
        }
    )
    return TransformerEncoder(
        name=name,
        passage_tower=passage,
        query_tower=query,
        options=resolved,
        pair_passages=True,
        batch_size=batch_size,
    )


def sentence_transformer_layout(model: Any) -> dict[str, Any] | None:
    """Pooling, normalisation, prompts and lower-casing of a sentence-transformers model that
    :class:`TransformerEncoder` runs exactly (Transformer + Pooling mean/CLS + optional Normalize), or
    None for any other module stack."""
    modules = [type(m).__name__ for m in model]
    if modules[:2] != ["Transformer", "Pooling"] or any(m != "Normalize" for m in modules[2:]):
        return None
    pooling_module = model[1]
    config = pooling_module.get_config_dict() if hasattr(pooling_module, "get_config_dict") else {}
    mode = getattr(pooling_module, "pooling_mode", None) or next(
        (k.removeprefix("pooling_mode_") for k, v in config.items() if k.startswith("pooling_mode_") and v),
        "",
    )
    mode = {"mean_tokens": "mean", "cls_token": "cls"}.get(str(mode), str(mode))
    if mode not in ("mean", "cls") or not config.get("include_prompt", True):
        return None
    query_prompt, passage_prompt = model_prompts(model)
    return {
        "pooling": mode,
        "normalize": "Normalize" in modules,
        "query_prompt": query_prompt,
        "passage_prompt": passage_prompt,
        "lower_case": bool(getattr(model[0], "do_lower_case", False)),
        "max_length": int(model.max_seq_length) if model.max_seq_length else None,
    }


def model_prompts(model: Any) -> tuple[str, str]:
    """The query and passage prompts of a sentence-transformers model's config ("" when it has none)."""
    prompts = dict(getattr(model, "prompts", None) or {})
    return prompts.get("query", ""), prompts.get("passage", prompts.get("document", ""))


def sentence_transformer_encoder(
    st_model: Any,
    name: str,
    layout: dict[str, Any],
    options: EncoderOptions,
    device: str,
    batch_size: int | None,
) -> TransformerEncoder:
    """A sentence-transformers model (its ``layout``) as a :class:`TransformerEncoder`, options applied."""
    transformer = st_model[0]
    hf_model = transformer.model if hasattr(transformer, "model") else transformer.auto_model
    tower = Tower(hf_model, st_model.tokenizer, lower_case=layout["lower_case"])
    resolved = options.model_copy(
        update={
            "family": "sentence-transformers",
            "query_model": None,
            "pooling": options.pooling or layout["pooling"],
            "normalize": layout["normalize"] if options.normalize is None else options.normalize,
            "max_length": options.max_length or layout["max_length"],
            "query_prompt": layout["query_prompt"] if options.query_prompt is None else options.query_prompt,
            "passage_prompt": (
                layout["passage_prompt"] if options.passage_prompt is None else options.passage_prompt
            ),
            "device": device,
        }
    )
    return TransformerEncoder(
        name=name,
        passage_tower=tower,
        query_tower=tower,
        options=resolved,
        pair_passages=False,
        batch_size=batch_size,
    )
