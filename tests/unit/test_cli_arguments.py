"""Every ``kiltpipe`` option is checked where it is parsed: a bad value is refused by argparse (exit 2)
naming the option, before anything runs; an empty string is never read as "not given"."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from orchestration.cli import build_parser


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["serve", "--port", "70000"], "argument --port: must be a port between 0 and 65535, not 70000"),
        (["serve", "--port", "-1"], "argument --port: must be a port between 0 and 65535"),
        (["serve", "--host", ""], "argument --host: must not be empty"),
        (["eval", "--ks", "0"], "argument --ks: '0' must be at least 1, not 0"),
        (["eval", "--ks", ""], "argument --ks: give comma-separated integers"),
        (["eval", "--ks", "1,x"], "argument --ks: 'x' must be an integer, not 'x'"),
        (["eval", "--depth", "0"], "argument --depth: must be at least 1, not 0"),
        (["eval", "--guess", "", "--gold", ""], "argument --guess: must not be empty"),
        (["build", "--data-dir", ""], "argument --data-dir: must not be empty"),
        (["build", "--select", ""], "argument --select: must not be empty"),
        (["build", "--as-of", ""], "argument --as-of: must not be empty"),
        (["build", "--snapshot", " "], "argument --snapshot: must not be empty"),
        (["build", "--workers", "-1"], "argument --workers: must be 0 or more, not -1"),
        (["build", "--dask-workers", "0"], "argument --dask-workers: must be at least 1, not 0"),
        (["search", "x", "--threads", "0"], "argument --threads: must be at least 1, not 0"),
        (["search", "x", "--threads", "-1"], "argument --threads: must be at least 1, not -1"),
        (["search", "x", "--k", "0"], "argument --k: must be at least 1, not 0"),
        (["search", ""], "argument query: must not be empty"),
        (["export-hf", "--out", "d", "--max-shard-mb", "0"], "argument --max-shard-mb: must be at least 1"),
        (["export-hf", "--out", "d", "--max-shard-mb", "-5"], "argument --max-shard-mb: must be at least 1"),
        (
            ["map", "f.jsonl", "--bleu-threshold", "nan"],
            "argument --bleu-threshold: must be a number between",
        ),
        (["map", "f.jsonl", "--bleu-threshold", "2"], "argument --bleu-threshold: must be a number between"),
        (["span", "12", "-1", "0", "0", "5"], "argument start_paragraph: must be 0 or more, not -1"),
        (["fetch-default", "--wheel", "/etc/passwd"], "argument --wheel: /etc/passwd is not a wheel"),
        (["fetch-default", "--wheel", "/nowhere/gensim.whl"], "argument --wheel: no such file: /nowhere"),
    ],
)
def test_a_bad_value_is_refused_naming_the_option(
    argv: list[str], message: str, capsys: pytest.CaptureFixture
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_good_values_parse(tmp_path: Path) -> None:
    wheel = tmp_path / "gensim-4.4.0-cp311-cp311-manylinux_2_24_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("gensim/__init__.py", "")
    parser = build_parser()
    assert parser.parse_args(["eval", "--ks", "1, 5,10"]).ks == [1, 5, 10]
    assert parser.parse_args(["eval"]).ks == [1, 5, 10, 20]  # KILT's default
    assert parser.parse_args(["serve", "--port", "0"]).port == 0
    assert parser.parse_args(["build", "--workers", "0"]).workers == 0
    assert parser.parse_args(["fetch-default", "--wheel", str(wheel)]).wheel == str(wheel)
    assert parser.parse_args(["map", "f.jsonl", "--bleu-threshold", "0.5"]).bleu_threshold == 0.5
