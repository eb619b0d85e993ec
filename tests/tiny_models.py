"""Small transformer checkpoints built in code for the encoder-family, rerank and server tests.

Random weights from tiny configs (2 layers, hidden size 32), seeded, saved with the real tokenizer of the
packaged all-MiniLM-L6-v2 (BERT's uncased WordPiece vocabulary): what the tests check is the code path,
the manifests and the query/passage asymmetry, not retrieval quality. Nothing is downloaded.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")


def _bert_config(**extra: object):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        **extra,
    )


def _copy_tokenizer(target: Path) -> None:
    from assets.indexes.dense.encoders import default_model_dir

    source = default_model_dir()
    for name in TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copyfile(source / name, target / name)


def _save(model: object, target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target)  # type: ignore[attr-defined]
    _copy_tokenizer(target)
    return target


def tiny_bert(target: Path, seed: int = 0) -> Path:
    """A plain BERT checkpoint (``AutoModel``)."""
    import torch
    from transformers import BertModel

    torch.manual_seed(seed)
    return _save(BertModel(_bert_config()).eval(), target)


def tiny_sentence_transformer(target: Path, prompts: dict[str, str] | None = None, seed: int = 0) -> Path:
    """A sentence-transformers model (Transformer + mean Pooling + Normalize) with E5-style prompts in its
    config (``query: `` / ``passage: ``), as E5's published sentence-transformers configs have them."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    bert = tiny_bert(target.parent / f"{target.name}-bert", seed)
    transformer = Transformer(str(bert), max_seq_length=128)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")
    model = SentenceTransformer(
        modules=[transformer, pooling, Normalize()],
        prompts=prompts if prompts is not None else {"query": "query: ", "passage": "passage: "},
        device="cpu",
    )
    model.save(str(target))
    return target


def tiny_dpr(directory: Path, seed: int = 0) -> tuple[Path, Path]:
    """DPR's two towers: ``(context encoder, question encoder)`` checkpoints with different weights."""
    import torch
    from transformers import DPRConfig, DPRContextEncoder, DPRQuestionEncoder

    config = DPRConfig(**_bert_config().to_dict())
    torch.manual_seed(seed)
    context = _save(DPRContextEncoder(config).eval(), directory / "ctx")
    torch.manual_seed(seed + 1)
    question = _save(DPRQuestionEncoder(config).eval(), directory / "question")
    return context, question


def tiny_cross_encoder(target: Path, seed: int = 0) -> Path:
    """A cross-encoder checkpoint (BERT with a one-logit sequence-classification head)."""
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(seed)
    model = BertForSequenceClassification(_bert_config(num_labels=1, initializer_range=0.5))  # spread scores
    _save(model.eval(), target)
    config = json.loads((target / "config.json").read_text())
    config["sentence_transformers"] = {"activation_fn": "torch.nn.modules.linear.Identity"}
    (target / "config.json").write_text(json.dumps(config, indent=2))
    return target
