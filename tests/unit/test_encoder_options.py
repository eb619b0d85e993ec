"""Encoder settings: families, devices (every GPU, one, none), precision, and the query-side check."""

from __future__ import annotations

import pytest

from assets.indexes.dense.encoders import (
    DeviceUnavailable,
    EncoderOptions,
    device_for_shard,
    encode_devices,
    query_side_mismatch,
    resolve_precision,
)
from assets.indexes.dense.encoders import options as encoder_options


@pytest.fixture
def two_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encoder_options, "cuda_count", lambda: 2)


def test_auto_takes_every_gpu_and_spreads_shards_round_robin(two_gpus) -> None:
    devices = encode_devices("auto")
    assert devices == ["cuda:0", "cuda:1"] == encode_devices("cuda")
    assert [device_for_shard(devices, shard) for shard in range(5)] == [
        "cuda:0", "cuda:1", "cuda:0", "cuda:1", "cuda:0",
    ]  # fmt: skip
    assert encode_devices("cuda:1") == ["cuda:1"] and encode_devices("cuda:0, cuda:1") == devices
    with pytest.raises(DeviceUnavailable, match="cuda:2 asked for, but torch sees 2 CUDA"):
        encode_devices("cuda:2")
    assert encode_devices("cpu") == ["cpu"]


def test_this_machine_without_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encoder_options, "_mps_available", lambda: False)
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert encode_devices("auto") == ["cpu"]
    with pytest.raises(DeviceUnavailable, match="sees no CUDA device"):
        encode_devices("cuda")
    with pytest.raises(DeviceUnavailable, match="no Apple MPS"):
        encode_devices("mps")
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        encode_devices("tpu")


def test_precision_is_fp16_on_a_gpu_and_fp32_on_the_cpu() -> None:
    assert resolve_precision("auto", "cuda:0") == "fp16" == resolve_precision("auto", "mps")
    assert resolve_precision("auto", "cpu") == "fp32"
    assert resolve_precision("bf16", "cuda:1") == "bf16" and resolve_precision("fp32", "cuda:0") == "fp32"
    with pytest.raises(ValueError, match="unknown precision"):
        resolve_precision("int4", "cpu")


def test_options_are_checked_and_round_trip_through_a_manifest() -> None:
    assert EncoderOptions(family="st").family == "sentence-transformers"
    for bad in ({"family": "colbert"}, {"pooling": "max"}, {"precision": "fp8"}, {"max_length": 1}):
        with pytest.raises(ValueError):
            EncoderOptions(**bad)
    described = {
        "family": "dpr", "model": "ctx", "query_model": "question", "query_prompt": "", "passage_prompt": "",
        "pooling": "cls", "normalize": False, "max_length": 256, "precision": "fp16",
    }  # fmt: skip
    options = EncoderOptions.from_description(described, device="cpu")
    assert (options.family, options.query_model, options.pooling, options.normalize, options.max_length) == (
        "dpr", "question", "cls", False, 256,
    )  # fmt: skip
    assert options.precision == "auto" and options.on("cuda:1").device == "cuda:1"
    # precision and device may differ between the index and its queries; the query side may not
    assert query_side_mismatch(described, {**described, "precision": "fp32"}) == []
    assert query_side_mismatch(described, {**described, "query_prompt": "query: "}) == [
        "query_prompt: '' != 'query: '"
    ]
