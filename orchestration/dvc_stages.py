"""The DVC stages of the indices, generated from the index and collection registries.

One stage per index type that builds its own index over the text passages (its asset: ``bm25_index``,
``dense_index``), one per other collection (its index asset: ``structured_indexes``, with every type that
builds in one call), and ``retrieval_evaluation`` over all of them: their outputs are the registered types'
``dvc_outs`` under each collection's ``indexes/`` folder, their code dependencies the types' ``sources``.
They are the end of ``dvc.yaml``, below :data:`MARKER`; ``tests/unit/test_dvc_stages.py`` fails when they
differ from what the registries say.

    python -m orchestration.dvc_stages           # print the generated stages
    python -m orchestration.dvc_stages --write   # replace them in dvc.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from assets.indexes import TEXT, Collection, collection_view, indexed_collections, searcher_types
from assets.storage import SnapshotPaths

__all__ = ["MARKER", "index_stages", "write_index_stages"]

MARKER = (
    "  # the index stages below are generated from the registries: python -m orchestration.dvc_stages --write"
)
SNAPSHOT = "${data_dir}/snapshots/${knowledge_source.snapshot}"
COMMON = ("assets/storage", "assets/files.py")
"""What every stage that writes into a snapshot depends on."""
LAYOUT = SnapshotPaths(Path("data"), "enwiki-20160501")
"""Any snapshot's paths: the stages' paths are these relative to its root, under ``SNAPSHOT``."""
PERSIST = "persist: true  # an interrupted encode resumes from its finished shards"
SEARCH_CODE = (
    "assets/indexes/registry.py",
    "assets/indexes/retriever.py",
    "assets/indexes/collections.py",
    "assets/indexes/settings.py",
    "assets/indexes/evaluation",
    "assets/reading",
)
"""What the evaluation searches and scores with (opened through the read package), besides the index
types' own code."""


def _in_snapshot(path: Path, paths: SnapshotPaths) -> str:
    return f"{SNAPSHOT}/{path.relative_to(paths.root).as_posix()}"


def _outs(collection: Collection, names: list[str]) -> list[str]:
    """The outputs of the index types ``names`` over ``collection`` (``/``-ended ones persist)."""
    paths = LAYOUT
    indexes = collection_view(paths, collection.name).indexes
    kinds = {kind.name: kind for kind in searcher_types()}
    return [
        _in_snapshot(indexes / out, paths) + ("/" if out.endswith("/") else "")
        for n in names
        for out in kinds[n].dvc_outs
    ]


def _stage(asset: str, deps: list[str], params: list[str], outs: list[str]) -> list[str]:
    lines = [
        f"  {asset}:",
        "    cmd: >-",
        "      .venv/bin/kiltpipe build --data-dir ${data_dir} --snapshot ${knowledge_source.snapshot}",
        f'      --select "key:{asset}" --quiet',
        "    deps:",
        *(f"      - {dep}" for dep in dict.fromkeys(deps)),
        "    params:",
        *(f"      - {param}" for param in params),
        "    outs:",
    ]
    for out in outs:
        if out.endswith("/"):
            lines += [f"      - {out.rstrip('/')}:", f"          {PERSIST}"]
        else:
            lines.append(f"      - {out}")
    return lines


def index_stages() -> str:
    """The index stages of ``dvc.yaml`` as the registries describe them (the text below :data:`MARKER`)."""
    paths = LAYOUT
    own = [kind for kind in searcher_types() if kind.asset and kind.dvc_outs]
    lines = [MARKER]
    for kind in own:  # the text passages' index of each type, built by the type's own asset
        deps = [*COMMON, _in_snapshot(TEXT.passages(paths), paths), *kind.sources, "assets/process_env.py"]
        lines += _stage(kind.asset, deps, [f"indexes.{kind.name}"], _outs(TEXT, [kind.name]))
    buildable = [kind for kind in own if kind.build]
    for collection in indexed_collections():  # each other collection's indices, built by one asset
        deps = [
            *COMMON,
            _in_snapshot(collection.passages(paths), paths),
            *(source for kind in buildable for source in kind.sources),
            "assets/indexes/collections.py",
            "assets/indexes/collection_indexes.py",
            "assets/process_env.py",
        ]
        params = ["indexes.build", *(f"indexes.{kind.name}" for kind in buildable)]
        lines += _stage(collection.index_asset, deps, params, _outs(collection, [k.name for k in buildable]))
    searched = [  # what the evaluation reads of every collection's indices (not the resumable vectors)
        out
        for collection in [TEXT, *indexed_collections()]
        if collection.in_all  # the QA KB's questions are no passages the evaluation ranks
        for out in _outs(collection, [kind.name for kind in own])
        if not out.endswith("/")
    ]
    others = [kind for kind in searcher_types() if not kind.asset]
    deps = [
        *COMMON,
        *searched,
        f"{SNAPSHOT}/datasets",
        *SEARCH_CODE,
        *(source for kind in others for source in kind.sources),
        "assets/languages.py",
    ]
    params = [*(f"indexes.{kind.name}" for kind in others), "indexes.evaluation", "limits.input"]
    lines += _stage(
        "retrieval_evaluation",
        deps,
        params,
        ["${data_dir}/${datasets.reports_dir}/${knowledge_source.snapshot}/retrieval"],
    )
    return "\n".join(lines) + "\n"


def write_index_stages(dvc_yaml: Path) -> bool:
    """Replace the generated stages of ``dvc_yaml`` (everything below :data:`MARKER`); whether it changed."""
    text = dvc_yaml.read_text(encoding="utf-8")
    if MARKER not in text:
        raise ValueError(f"{dvc_yaml}: no line {MARKER.strip()!r} above the index stages")
    new = text[: text.index(MARKER)] + index_stages()
    if new != text:
        dvc_yaml.write_text(new, encoding="utf-8")
    return new != text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the generated stages in dvc.yaml")
    parser.add_argument("--dvc-yaml", type=Path, default=Path("dvc.yaml"))
    args = parser.parse_args(argv)
    if args.write:
        print(f"{args.dvc_yaml}: {'rewritten' if write_index_stages(args.dvc_yaml) else 'unchanged'}")
    else:
        sys.stdout.write(index_stages())
    return 0


if __name__ == "__main__":
    sys.exit(main())
