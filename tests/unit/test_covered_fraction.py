"""The covered fraction of a span by a passage has one rule, used by span lookups (Python) and by the
precomputed datasets tables (SQL): both forms agree on every overlapping case, empty spans included."""

from __future__ import annotations

import itertools

import duckdb

from assets.provenance_store import covered_fraction, covered_fraction_sql


def test_python_and_sql_forms_agree() -> None:
    cases = [
        (ps, pe, ss, se)
        for ps, pe, ss, se in itertools.product(range(0, 12, 2), range(1, 14, 3), range(0, 12), range(0, 14))
        if ps < pe and ss <= se and pe > ss and ps < max(se, ss + 1)  # the passage overlaps the span
    ]
    assert len(cases) > 300
    con = duckdb.connect()
    con.execute("CREATE TABLE c (ps INTEGER, pe INTEGER, ss INTEGER, se INTEGER)")
    con.executemany("INSERT INTO c VALUES (?, ?, ?, ?)", cases)
    rows = con.execute(
        f"SELECT ps, pe, ss, se, {covered_fraction_sql('ps', 'pe', 'ss', 'se')} FROM c"
    ).fetchall()
    for ps, pe, ss, se, in_sql in rows:
        assert abs(covered_fraction(ps, pe, ss, se) - in_sql) < 1e-12, (ps, pe, ss, se)


def test_the_rule() -> None:
    assert covered_fraction(0, 10, 0, 10) == 1.0
    assert covered_fraction(0, 5, 0, 10) == 0.5
    assert covered_fraction(8, 20, 0, 10) == 0.2
    assert covered_fraction(3, 9, 5, 5) == 1.0  # an empty span inside the passage
