"""KILT's tasks read from any format and remapped onto a snapshot.

Datasets: KILT's tasks read from any format, remapped onto a snapshot with provenance spans of it.

``records`` (the typed records), ``formats/`` (one module per format, one registry), ``readers``
(detection, ``read_dataset``), ``span_search`` and ``mapping`` (KILT's mapping, offline), ``outputs`` (the
remapped files and tables), ``pipeline`` (the stage), ``queries`` (record lookups).
"""
