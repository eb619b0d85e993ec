"""A MediaWiki XML dump made into the KILT knowledge source and its passages.

Wikipedia: a MediaWiki XML dump read, its wikitext converted, the KILT knowledge source and its passages.

``dump_reader`` streams pages, ``wikitext`` converts them, ``dump_parts``/``resolve``/``knowledge_source``
build the knowledge source in parse steps, ``passages``/``passage_build`` cut it into 100-word passages,
``landing`` watches for new dumps, ``checks`` are what the asset checks measure.
"""
