"""KILT's tasks read from any format and remapped onto a snapshot.

``records`` (the typed records), ``formats/`` (one module per format, one registry), ``readers``
(detection, ``read_dataset``), ``span_search`` and ``mapping`` (KILT's mapping, offline: provenance spans
of the snapshot), ``outputs`` (the remapped files and tables), ``pipeline`` (the stage), ``queries`` (record
lookups).
"""
