"""Functions from a DuckDB prompt (protocol §6), on memory and on Spark: the demo catalog's
scalar, table and in-out functions called as a DuckDB user calls them, over a million rows,
filtered and projected, over a subquery, failing and mis-called."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from airport_contracts import Context
from pyairport.functions import scalar_function

from ..protocol.conftest import Running
from .conftest import OpenSession

pytestmark = pytest.mark.duckdb

MILLION = "range(1000000) t(i)"


@scalar_function(params=[pa.int64()], returns=pa.int64())
def checked_inverse(values: pa.Array) -> pa.Array:
    if pa.compute.any(pa.compute.equal(values, 0)).as_py():
        raise ZeroDivisionError("no inverse of 0")
    return pa.compute.divide(pa.scalar(1_000_000, pa.int64()), values)


@pytest.fixture
def served(lake: Running) -> Iterator[Running]:
    """The lake with one more scalar function, which raises on a 0."""
    demo = lake.catalog.schema(Context.background(), "demo_schema")
    demo.add_function(checked_inverse)
    try:
        yield lake
    finally:
        demo.drop_function("checked_inverse")


def test_a_scalar_function_in_select_where_and_group_by(
    served: Running, open_session: OpenSession
) -> None:
    db = open_session(served.server.location)
    domain = "lake.demo_schema.email_domain"
    assert db.run(
        f"SELECT count(*), count(DISTINCT {domain}('u' || i || '@d' || (i % 3) || '.org'))"
        f" FROM {MILLION}"
    ) == [(1_000_000, 3)]
    assert db.value(f"SELECT count(*) FROM {MILLION} WHERE {domain}('x@d' || (i % 4)) = 'd1'") == (
        250_000
    )
    assert db.run(
        f"SELECT {domain}('x@d' || (i % 3)) AS d, count(*) FROM {MILLION} GROUP BY d ORDER BY d"
    ) == [("d0", 333_334), ("d1", 333_333), ("d2", 333_333)]
    assert (
        db.run(
            f"SELECT {domain}(email), {domain}(NULL), {domain}('no at sign')"
            " FROM lake.demo_schema.readonly ORDER BY id"
        )
        == [("example.com", None, None)] * 3
    )


def test_a_table_function_with_parameters_filtered_and_projected(
    served: Running, open_session: OpenSession
) -> None:
    db = open_session(served.server.location)
    assert db.run(
        "SELECT n FROM lake.demo_schema.series(1, 100000) WHERE n % 1000 = 0 ORDER BY n LIMIT 3"
    ) == [(1000,), (2000,), (3000,)]
    assert db.run("SELECT count(*), sum(n) FROM lake.demo_schema.series(-5, 100000)") == [
        (100_006, 5_000_050_000 - 15)
    ]
    assert db.run("SELECT * FROM lake.demo_schema.series(3, 1)") == []


def test_an_in_out_function_over_a_subquery(served: Running, open_session: OpenSession) -> None:
    db = open_session(served.server.location)
    assert db.run(
        "SELECT * FROM lake.demo_schema.shouted("
        "(SELECT name, id FROM lake.demo_schema.readonly WHERE id > 1)) ORDER BY id"
    ) == [("BOB", 2), ("CAROL", 3)]
    # A table argument of many chunks: each answered in turn (DuckDB's lock-step).
    assert db.run(
        "SELECT count(*), count(DISTINCT s) FROM lake.demo_schema.shouted("
        "(SELECT 'v' || (i % 10) AS s FROM range(100000) t(i))) WHERE s LIKE 'V%'"
    ) == [(100_000, 10)]


def test_a_function_that_raises_fails_the_statement_in_one_line(
    served: Running, open_session: OpenSession
) -> None:
    db = open_session(served.server.location)
    error = db.fails("SELECT lake.demo_schema.checked_inverse(i) FROM range(-3, 3) t(i)")
    assert (
        "scalar function `demo_schema.checked_inverse` execution failed: no inverse of 0" in error
    )
    assert "Traceback" not in error and ".py" not in error
    error = db.fails("SELECT * FROM lake.demo_schema.series(1, 20000000)")
    assert "table function execution failed: series: at most 10000000 rows" in error
    # The session, and the server, go on.
    assert db.value("SELECT lake.demo_schema.checked_inverse(4)") == 250_000


def test_wrong_argument_types_are_refused(served: Running, open_session: OpenSession) -> None:
    """DuckDB binds calls against the signature the catalog lists, before any call reaches
    the server (a raw client's wrong types are refused by the server:
    tests/protocol/test_function_errors.py)."""
    db = open_session(served.server.location)
    error = db.fails("SELECT * FROM lake.demo_schema.series('one', 2)")
    assert "No function matches the given name and argument types" in error
    assert "lake.demo_schema.series(BIGINT, BIGINT)" in error
    error = db.fails("SELECT lake.demo_schema.email_domain([1, 2])")
    assert "No function matches the given name and argument types" in error
