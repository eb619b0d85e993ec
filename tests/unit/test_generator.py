"""The enwiki-shaped generator (``support/generator/``) as a library, in seconds: real text only,
deterministic by seed, and a dump the reader takes page for page with the statistics it reports.
``tests/integration/test_generated_dump.py`` builds and maps what it makes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from assets.wikipedia.dump import DumpReader
from support.generator.dump import generate
from support.generator.shape import Shape, load_pool


def test_the_text_pool_is_real_text_from_the_shipped_dumps() -> None:
    """Every piece of a lead paragraph between its links is text of a real page of the shipped dumps."""
    from support.real_data import real_file

    pool = load_pool()
    sources = (
        "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
        "wikipedia2vec_enwiki-pages-articles-sample.xml.bz2",
        "gensim_enwiki-table-markup.xml.bz2",
    )
    real_text = "\n".join(page.text for name in sources for page in DumpReader(real_file("wikipedia", name)))
    pieces = [t for block in pool.lead_paragraphs for t in block.texts if len(t) > 40]
    assert len(pool.lead_paragraphs) > 50 and len(pieces) > 200
    assert [t for t in pieces[:: max(1, len(pieces) // 200)] if t not in real_text] == []
    assert pool.titles and pool.categories


def test_a_small_dump_is_the_same_for_a_seed_and_reads_as_its_statistics(tmp_path: Path) -> None:
    first = generate(60, tmp_path / "a", seed=1, workers=1)
    again = generate(60, tmp_path / "b", seed=1, workers=1)
    other = generate(60, tmp_path / "c", seed=2, workers=1)
    name = "enwiki-20260101-pages-articles-multistream.xml.bz2"
    dump = (tmp_path / "a" / name).read_bytes()
    assert dump == (tmp_path / "b" / name).read_bytes() and dump != (tmp_path / "c" / name).read_bytes()
    assert {k: v for k, v in first.items() if k != "generation_seconds"} == {
        k: v for k, v in again.items() if k != "generation_seconds"
    }
    assert other["articles"] == 60
    pages = list(DumpReader(tmp_path / "a" / name))
    kinds = Counter("redirect" if p.redirect_target else "page" for p in pages)
    assert len(pages) == first["pages"] and kinds["redirect"] == first["redirects"]
    assert first["articles"] + first["disambiguation_pages"] <= kinds["page"]
    assert Shape().size_quantiles  # the published size distribution the generator aims at
