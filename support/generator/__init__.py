"""The enwiki-shaped generator: dumps of any size with Wikipedia's shape.

Real text: :mod:`.shape` reads the shape and the text pool from the real files of ``tests/data``,
:mod:`.pages` writes pages, :mod:`.dump` a whole dump with its SQL tables, :mod:`.month` a month of edits
for the next snapshot; datasets drawn from a built snapshot with their truth (:mod:`.dataset`), and what
the scale runs check them by (:mod:`.scale_runs`); Wikidata entity dumps with Wikidata's shape
(:mod:`.wikidata`). A library: ``benchmarks/gen_wiki_dump.py`` and
``gen_scale_dataset.py``, ``gen_wikidata_dump.py`` are its scripts; ``tests/unit/test_generator.py`` and
``tests/integration/test_generated_dump.py`` its tests.
"""
