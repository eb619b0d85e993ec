"""A MediaWiki XML dump made into the KILT knowledge source and its passages.

A package per job: ``fetch/`` (releases fetched into the landing folder), ``dump/`` (XML dumps and SQL side
tables read), ``wikitext/`` (wikitext converted; tables and infoboxes), ``pages/`` (the knowledge source
built), ``passages/`` (text and structured passages), over ``schema`` (the knowledge source's schemas and
report); ``checks`` are what the asset checks measure.
"""
