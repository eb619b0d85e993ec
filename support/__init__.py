"""What tests and benchmarks share (neither imports the other).

The real public files of ``tests/data`` (:mod:`.real_data`), variants of real dumps derived from them in
code (:mod:`.dump_variants`), MediaWiki SQL table dumps written in the real tables' layout
(:mod:`.sql_dumps`), the exhaustive span-search reference with its pair generator
(:mod:`.span_reference`), the fake dump site and the hostile inputs.
"""
