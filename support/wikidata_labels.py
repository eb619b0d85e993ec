"""Make ``assets/wikidata/fixtures/labels.tsv.xz`` (the labels shipped for entities and properties an entity
file does not label) from the real files in ``../shared/data/wikidata/labels/``: the English label of every
property (12,983) and of 494 common items and units that kif-lib 0.13.0 generated from live Wikidata, with
each property's datatype from entitybase's list. kif-lib's vocabulary is Python source: it is parsed as
text by :mod:`ast`, never imported.

    .venv/bin/python -m support.wikidata_labels [../shared/data/wikidata/labels]
"""

from __future__ import annotations

import ast
import csv
import lzma
import sys
from pathlib import Path

from assets.wikidata import LABELS_FILE

ENTITY_URI = "http://www.wikidata.org/entity/"
SOURCES = tuple(
    f"kif-lib-0.13.0_wd_{name}.py" for name in ("property", "item", "item_continent", "item_country")
)


def kif_labels(path: Path) -> dict[str, str]:
    """``{id: English label}`` of every ``Property(IRI(...)).register(labels=[Text(label, 'en')])``,
    ``Item(...)`` and ``Q(number, label)`` of one kif-lib vocabulary file."""
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Q" and len(node.args) == 2:
            number, label = (arg.value if isinstance(arg, ast.Constant) else None for arg in node.args)
            if isinstance(number, int) and isinstance(label, str):  # Q(11229, 'percent')
                found[f"Q{number}"] = label
            continue
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "register"):
            continue
        made = node.func.value  # Property(IRI('...'), ...) or Item(IRI('...'))
        if not (isinstance(made, ast.Call) and made.args and isinstance(made.args[0], ast.Call)):
            continue
        iri = made.args[0].args[0].value if made.args[0].args else ""
        labels = next((k.value for k in node.keywords if k.arg == "labels"), None)
        if not (isinstance(iri, str) and iri.startswith(ENTITY_URI) and isinstance(labels, ast.List)):
            continue
        for text in labels.elts:
            if isinstance(text, ast.Call) and [a.value for a in text.args][1:] == ["en"]:
                found[iri[len(ENTITY_URI) :]] = text.args[0].value
    return found


def main(folder: Path) -> Path:
    labels: dict[str, str] = {}
    for name in SOURCES:
        labels.update(kif_labels(folder / name))
    with open(folder / "entitybase_properties_datatypes.csv", encoding="utf-8") as handle:
        datatypes = {row["property_id"]: row["datatype"] for row in csv.DictReader(handle)}
    out = Path(str(LABELS_FILE))
    ordered = sorted(labels, key=lambda key: (key[0], int(key[1:])))
    lines = "".join(f"{key}\t{' '.join(labels[key].split())}\t{datatypes.get(key, '')}\n" for key in ordered)
    with lzma.open(out, "wt", encoding="utf-8", preset=9) as handle:
        handle.write("id\tlabel\tdatatype\n" + lines)
    print(
        f"{len(labels):,} labels ({sum(k[0] == 'P' for k in labels):,} properties) -> {out}", file=sys.stderr
    )
    return out


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/wikidata/labels"))
