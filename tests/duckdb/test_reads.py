"""DuckDB reading as its users do, on memory and on a lake plain Spark wrote: statistics asked
and answered for every column type (and no query failing over a type DuckDB cannot read
statistics of), plans statistics change, scans split over several endpoints equal to the
one-endpoint scan (after UPDATE and DELETE, and at a version), and the answers always DuckDB's
own on the same rows."""

from __future__ import annotations

import decimal
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any

import msgpack
import pyarrow as pa
import pytest

from airport_contracts import flight_pb2
from pyairport.backends.memory import memory_table
from pyairport.backends.scan_parts import SPLIT
from pyairport.catalog import CatalogSchema, MutableCatalog
from pyairport.client import AirportClient

from ..backend.test_lake import lake_server
from ..protocol.conftest import serving
from .conftest import OpenSession
from .session import Session
from .sqllogic.clients import CLIENTS
from .wide import ask

pytestmark = pytest.mark.duckdb

TYPED_ROWS = pa.table(
    {
        "i": pa.array([3, -7, None, 12], pa.int32()),
        "big": pa.array([2**40, None, -5, 0], pa.int64()),
        "f": pa.array([1.5, -2.25, None, 8.0], pa.float64()),
        "d": pa.array(
            [decimal.Decimal("1.25"), None, decimal.Decimal("-9.99"), decimal.Decimal("0.01")],
            pa.decimal128(10, 2),
        ),
        "day": pa.array([date(2024, 1, 2), None, date(1999, 12, 31), date(2000, 2, 29)]),
        "ts": pa.array(
            [
                datetime(2024, 1, 1, 0, 0, 0, 123456),
                None,
                datetime(1970, 1, 1),
                datetime(2030, 5, 5),
            ],
            pa.timestamp("us"),
        ),
        "s": pa.array(["bo", "ann", None, "zoë"]),
        "b": pa.array([b"\x01", None, b"zz", b""]),
        "ok": pa.array([True, None, False, True]),
        "l": pa.array([[1], None, [], [2, 3]], pa.list_(pa.int64())),
    }
)
# Per column: predicates below, at and above its values, on nulls, and one that DuckDB's
# statistics decide alone (a bound outside the range).
PREDICATES = {
    "i": ["i > 12", "i >= 12", "i < -7", "i = 3", "i BETWEEN -7 AND 3", "i > 1000"],
    "big": ["big > 1099511627776", "big = 1099511627776", "big < -5", "big <= -5"],
    "f": ["f > 8.0", "f = -2.25", "f < -2.25"],
    "d": ["d > 1.25", "d = -9.99", "d < -9.99"],
    "day": ["day > DATE '2024-01-02'", "day = DATE '1999-12-31'", "day < DATE '1999-12-31'"],
    "ts": [
        "ts > TIMESTAMP '2030-05-05'",
        "ts >= TIMESTAMP '2030-05-05'",
        "ts < TIMESTAMP '1970-01-01'",
    ],
    "s": ["s > 'zoë'", "s = 'ann'", "s < 'ann'", "s LIKE 'z%'", "length(s) = 3"],
    "b": ["b > 'zz'::BLOB", "b = ''::BLOB"],
    "ok": ["ok", "NOT ok"],
    "l": ["len(l) = 2"],
}


@pytest.fixture
def split() -> Iterator[None]:
    """Every scan of more than one row split into up to 3 parts, for this test."""
    before = (SPLIT.max_parts, SPLIT.rows_per_part)
    SPLIT.max_parts, SPLIT.rows_per_part = 3, 1
    yield
    SPLIT.max_parts, SPLIT.rows_per_part = before


def _own(duck: Session, name: str, rows: pa.Table) -> None:
    """The rows as a table of DuckDB's own (the answers every query is held to)."""
    duck.connection.register("incoming", rows)
    duck.run(f"CREATE TABLE {name} AS SELECT * FROM incoming")
    duck.connection.unregister("incoming")


def _same_answers(duck: Session, served: str, own: str, queries: list[str]) -> None:
    for query in queries:
        through = sorted(duck.run(query.format(t=served)), key=repr)
        local = sorted(duck.run(query.format(t=own)), key=repr)
        assert through == local, query


def _typed_queries() -> list[str]:
    queries = [
        "SELECT * FROM {t}",
        "SELECT count(*) FROM {t}",
        "SELECT min(i), max(i), min(s), max(s), min(ts), max(ts), min(d), max(d) FROM {t}",
    ]
    for column, predicates in PREDICATES.items():
        queries += [f"SELECT {column} FROM {{t}} WHERE {p}" for p in predicates]
        queries += [
            f"SELECT count(*) FROM {{t}} WHERE {column} IS NULL",
            f"SELECT count(*) FROM {{t}} WHERE {column} IS NOT NULL",
        ]
    return queries


def test_memory_statistics_of_every_type_give_duckdbs_own_answers(
    open_session: OpenSession,
) -> None:
    table = memory_table("typed", TYPED_ROWS.schema, rows=TYPED_ROWS)
    interval = memory_table(
        "spans",
        pa.schema([("id", pa.int64()), ("span", pa.month_day_nano_interval())]),
        rows=pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "span": pa.array([(1, 2, 3), None], pa.month_day_nano_interval()),
            }
        ),
    )
    with serving(MutableCatalog("", [CatalogSchema("s", tables=[table, interval])])) as running:
        duck = open_session(running.server.location)
        _own(duck, "typed", TYPED_ROWS)
        _same_answers(duck, "lake.s.typed", "typed", _typed_queries())
        # a type DuckDB has no statistics reader for: the table says it has none, and
        # queries over it work
        assert duck.run("SELECT id FROM lake.s.spans WHERE span IS NOT NULL") == [(1,)]
        assert duck.run("SELECT count(*) FROM lake.s.spans WHERE id > 1") == [(1,)]


def _plan(duck: Session, query: str) -> str:
    return "\n".join(row[1] for row in duck.run("EXPLAIN " + query))


def test_statistics_change_the_plan(open_session: OpenSession) -> None:
    """A filter outside a column's range and a join of disjoint keys: with statistics DuckDB
    knows before reading that nothing matches, and plans an empty result."""
    orders = memory_table(
        "orders",
        pa.schema([("id", pa.int64()), ("customer", pa.string())]),
        rows=pa.table({"id": pa.array(range(1000), pa.int64()), "customer": ["c"] * 1000}),
    )
    late = memory_table(
        "late",
        pa.schema([("id", pa.int64())]),
        rows=pa.table({"id": pa.array(range(5000, 5100), pa.int64())}),
    )
    with serving(MutableCatalog("", [CatalogSchema("s", tables=[orders, late])])) as running:
        duck = open_session(running.server.location)
        join = "SELECT count(*) FROM lake.s.orders o JOIN lake.s.late l ON o.id = l.id"
        assert "EMPTY_RESULT" in _plan(duck, join) and duck.run(join) == [(0,)]
        outside = "SELECT * FROM lake.s.orders WHERE id > 999"
        assert "EMPTY_RESULT" in _plan(duck, outside) and duck.run(outside) == []
        inside = "SELECT count(*) FROM lake.s.orders WHERE id > 998"
        assert "EMPTY_RESULT" not in _plan(duck, inside) and duck.run(inside) == [(1,)]
        # rows that change the range change the plan: no stale statistics
        duck.run("INSERT INTO lake.s.orders VALUES (5050, 'late')")
        assert "EMPTY_RESULT" not in _plan(duck, join) and duck.run(join) == [(1,)]


def test_memory_split_scans_equal_one_endpoint(open_session: OpenSession, split: None) -> None:
    table = memory_table("typed", TYPED_ROWS.schema, rows=TYPED_ROWS)
    with serving(MutableCatalog("", [CatalogSchema("s", tables=[table])])) as running:
        duck = open_session(running.server.location)
        _own(duck, "typed", TYPED_ROWS)
        _own(duck, "created", TYPED_ROWS)
        queries = [
            "SELECT * FROM {t}",
            "SELECT count(*), sum(i) FROM {t}",
            "SELECT s FROM {t} WHERE i > 0",
        ]
        _same_answers(duck, "lake.s.typed", "typed", queries)
        for statement in ("UPDATE {t} SET s = 'new' WHERE i > 0", "DELETE FROM {t} WHERE i < 0"):
            duck.run(statement.format(t="lake.s.typed"))
            duck.run(statement.format(t="typed"))
            _same_answers(duck, "lake.s.typed", "typed", queries)
        # the table as created, split as well
        _same_answers(duck, "lake.s.typed AT (VERSION => 0)", "created", queries)


# --- a lake plain Spark wrote ------------------------------------------------------------------

SPARK_TYPED = (
    "(i INT, big BIGINT, f DOUBLE, d DECIMAL(10,2), day DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ,"
    " s STRING, b BINARY, ok BOOLEAN, l ARRAY<BIGINT>, part STRING) USING delta"
    " PARTITIONED BY (part) TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
)


@pytest.fixture(scope="module")
def spark_lake(
    spark_backend: Any, tmp_path_factory: pytest.TempPathFactory, airport_extension_path: str
) -> Iterator[tuple[Any, str, str]]:
    """A table plain Spark wrote in several files and partitions, with deletion vectors after
    a DELETE and an UPDATE; yields (spark, its SQL name, the server's location). The tests
    only read it: they share it (and its server)."""
    spark = spark_backend.spark
    lake = tmp_path_factory.mktemp("lake")
    ident = f"delta.`{lake / 'sales' / 'typed'}`"
    spark.sql(f"CREATE TABLE {ident} {SPARK_TYPED}")
    spark.sql(
        f"INSERT INTO {ident} SELECT /*+ REPARTITION(3) */ CAST(id AS INT) - 50, id * 1099511627,"
        " id / 4, CAST(id / 3 AS DECIMAL(10,2)), DATE '2020-01-01' + CAST(id AS INT),"
        " TIMESTAMP '2024-01-01 00:00:00.123456' + make_interval(0, 0, 0, 0, 0, 0, id),"
        " TIMESTAMP_NTZ '2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, id, 0, 0),"
        " CASE WHEN id % 7 = 0 THEN NULL ELSE concat('s', id, CASE WHEN id % 5 = 0 THEN 'é' ELSE '' END) END,"
        " CAST(concat('b', id) AS BINARY), id % 2 = 0, array(id, id + 1),"
        " CASE WHEN id % 3 = 0 THEN 'eu' WHEN id % 3 = 1 THEN 'us' ELSE NULL END"
        " FROM range(0, 300)"
    )
    spark.sql(f"DELETE FROM {ident} WHERE i % 10 = 0")
    spark.sql(f"UPDATE {ident} SET s = 'upd' WHERE i % 10 = 1")
    with lake_server(spark, lake) as location:
        yield spark, ident, location


def _endpoints(location: str, schema: str, table: str) -> int:
    """How many endpoints a scan of every column gets, asked as DuckDB asks."""
    descriptor = flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=[schema, table]
    ).SerializeToString()
    request = {"descriptor": descriptor, "parameters": {"column_ids": [], "json_filters": ""}}
    with AirportClient(location) as client:
        (body,) = client.action("endpoints", msgpack.packb(request))
    return len(msgpack.unpackb(body, raw=True))


def _spark_rows(spark: Any, ident: str) -> pa.Table:
    return spark.sql(f"SELECT * FROM {ident}").toArrow()


@pytest.mark.spark
def test_a_spark_lakes_statistics_give_duckdbs_own_answers(
    spark_lake: tuple[Any, str, str], open_session: OpenSession
) -> None:
    spark, ident, location = spark_lake
    duck = open_session(location)
    _own(duck, "typed", _spark_rows(spark, ident))
    queries = [
        "SELECT * FROM {t}",
        "SELECT count(*) FROM {t}",
        "SELECT min(i), max(i), min(ts), max(ts), min(ntz), max(ntz), min(s), max(s), min(d) FROM {t}",
        "SELECT count(*) FROM {t} WHERE i > 249",
        "SELECT count(*) FROM {t} WHERE i >= 249",
        "SELECT count(*) FROM {t} WHERE ts >= (SELECT max(ts) FROM {t})",
        "SELECT count(*) FROM {t} WHERE ntz >= (SELECT max(ntz) FROM {t})",
        "SELECT count(*) FROM {t} WHERE s = 'upd'",
        "SELECT count(*) FROM {t} WHERE s > 's99'",
        "SELECT count(*) FROM {t} WHERE s IS NULL",
        "SELECT count(*) FROM {t} WHERE part IS NULL",
        "SELECT part, count(*) FROM {t} GROUP BY part",
        "SELECT count(*) FROM {t} WHERE day = DATE '2020-01-02'",
        "SELECT count(*) FROM {t} WHERE d > 99.0",
        "SELECT count(*) FROM {t} WHERE length(s) = 5",
    ]
    _same_answers(duck, "lake.sales.typed", "typed", queries)
    # the log's bounds: a filter beyond the largest i is planned empty
    assert "EMPTY_RESULT" in _plan(duck, "SELECT * FROM lake.sales.typed WHERE i > 1000")


@pytest.mark.spark
def test_a_delta_tables_statistics_are_worked_out_once_a_version_and_follow_its_commits(
    spark_backend: Any,
    tmp_path: Path,
    open_session: OpenSession,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DuckDB asks for each column's statistics twice a query and keeps no answer: the server
    works a version's out once. A commit by another writer, or by DuckDB itself, gives the
    next query the new version's bounds: a filter outside the old ones is not planned empty."""
    from deltalake import write_deltalake

    from pyairport.backends.spark import delta_stats

    folder = tmp_path / "sales" / "events"
    write_deltalake(str(folder), pa.table({"id": pa.array(range(100), pa.int64())}))
    worked_out: list[str] = []
    column_stats = delta_stats.column_stats

    def counted(files: pa.Table, field: pa.Field) -> Any:
        worked_out.append(field.name)
        return column_stats(files, field)

    monkeypatch.setattr(delta_stats, "column_stats", counted)
    outside = "SELECT id FROM lake.sales.events WHERE id > 99 ORDER BY id"
    with lake_server(spark_backend.spark, tmp_path) as location:
        duck = open_session(location)
        for _ in range(3):
            assert "EMPTY_RESULT" in _plan(duck, outside) and duck.run(outside) == []
        assert worked_out == ["id"]  # once for version 0, however often DuckDB asks
        write_deltalake(
            str(folder), pa.table({"id": pa.array([100, 101], pa.int64())}), mode="append"
        )
        assert "EMPTY_RESULT" not in _plan(duck, outside)
        assert duck.run(outside) == [(100,), (101,)]
        duck.run("INSERT INTO lake.sales.events VALUES (500)")
        assert duck.run(outside) == [(100,), (101,), (500,)]
        assert duck.run("SELECT max(id) FROM lake.sales.events WHERE id > 101") == [(500,)]
        assert worked_out == ["id"] * 3  # once a version: 0, 1 and 2


@pytest.mark.spark
def test_a_spark_lakes_dates_timestamps_decimals_and_likes_are_filtered_by_the_server(
    spark_lake: tuple[Any, str, str], open_session: OpenSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB's filters on DATE, TIMESTAMP [WITH TIME ZONE] and DECIMAL columns (TPC-H's on
    dates, discounts, quantities; a lake's on event times) and its LIKEs run in the server:
    only the matching rows cross the wire, and the answers are DuckDB's own."""
    from pyairport.backends.spark import direct

    spark, ident, location = spark_lake
    sent: list[int] = []
    read = direct.read

    def counted(*args: Any, **kwargs: Any) -> pa.RecordBatchReader:
        rows = read(*args, **kwargs).read_all()
        sent.append(rows.num_rows)
        return pa.RecordBatchReader.from_batches(rows.schema, rows.to_batches())

    monkeypatch.setattr(direct, "read", counted)
    duck = open_session(location)
    _own(duck, "typed", _spark_rows(spark, ident))
    queries = [
        f"SELECT i, d, day, ts, ntz FROM {{t}} WHERE {where}"
        for where in (
            "day >= DATE '2020-09-01'",
            "ts >= TIMESTAMPTZ '2024-01-01 00:02:30.123456+00'",
            "ts BETWEEN TIMESTAMPTZ '2024-01-01 01:00:00+01' AND '2024-01-01 00:00:20+00'",
            "ts IN (TIMESTAMPTZ '2024-01-01 00:00:07.123456+00', '2024-01-01 00:00:08+00')",
            "ntz < TIMESTAMP '2024-01-01 00:30:00' AND i > 0",
            "ntz = TIMESTAMP '2024-01-03 00:01:00' OR ntz IS NULL",
            "day BETWEEN DATE '2020-02-01' AND DATE '2020-02-29'",
            "day IN (DATE '2020-01-02', DATE '2020-03-03') OR day IS NULL",
            "d IN (1.00, 33.33, 50.67)",
            "d >= 50 AND d < 60.5",
            "d <> 2.33 AND day < DATE '2020-01-20'",
            "NOT (d BETWEEN 0.05 AND 90)",
            "s LIKE 's1%'",
            "s LIKE '%é' OR s LIKE '%3'",
            "s LIKE '%9%' AND i < 200",
            "s LIKE 's_5%'",
            "s NOT LIKE 's%5' AND s NOT LIKE '%9%'",
            "s LIKE 'up!_' ESCAPE '!' OR starts_with(s, 'upd')",
            "s LIKE 's\\%'",  # no escape in DuckDB's LIKE: a backslash, which no s has
        )
    ]
    for query in queries:
        sent.clear()
        mine = sorted(duck.run(query.format(t="typed")))
        assert sorted(duck.run(query.format(t="lake.sales.typed"))) == mine, query
        assert sent == [len(mine)], query  # the filter ran in the server, not in DuckDB
    # split into parts, each part's files read by pyarrow with the filter as its expression
    monkeypatch.setattr(SPLIT, "max_parts", 3)
    monkeypatch.setattr(SPLIT, "rows_per_part", 1)
    parts = open_session(location)
    _own(parts, "typed", _spark_rows(spark, ident))
    _same_answers(parts, "lake.sales.typed", "typed", queries)


@pytest.mark.spark
def test_a_spark_lakes_counts_read_no_data(
    spark_lake: tuple[Any, str, str], open_session: OpenSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB's count(*) of a table without rowids names its first column, with no binding
    (deviation scan_needs_no_columns): the server counts the version's rows from the log
    (deletion vectors subtracted) and reads no file, in one part or several; where the
    column or a filter is used, it is read."""
    from pyairport.backends.spark import direct, file_parts

    spark, ident, location = spark_lake
    reads: list[str] = []
    for module in (direct, file_parts):  # a version whole, and a part's files
        monkeypatch.setattr(module, "read", _noted(module.read, reads))
    duck = open_session(location)
    _own(duck, "typed", _spark_rows(spark, ident))
    unread = [
        "SELECT count(*) FROM {t}",
        "SELECT count(*) FROM {t} a, {t} b",  # DuckDB copies the named column's vector
        "SELECT 42 FROM {t} LIMIT 3",
    ]
    read_ones = ["SELECT count(i) FROM {t}", "SELECT count(*) FROM {t} WHERE i > 100"]
    for parts in (1, 3):
        monkeypatch.setattr(SPLIT, "max_parts", parts)
        monkeypatch.setattr(SPLIT, "rows_per_part", 1)
        for query in unread:
            reads.clear()
            _same_answers(duck, "lake.sales.typed", "typed", [query])
            assert reads == [], (parts, query)
        for query in read_ones:
            reads.clear()
            _same_answers(duck, "lake.sales.typed", "typed", [query])
            assert reads, (parts, query)
        reads.clear()  # the version before the DELETE's deletion vectors
        assert duck.run("SELECT count(*) FROM lake.sales.typed AT (VERSION => 1)") == [
            (spark.sql(f"SELECT count(*) FROM {ident} VERSION AS OF 1").first()[0],)
        ]
        assert reads == [], parts
    total = spark.sql(f"SELECT count(*) FROM {ident}").first()[0]
    assert duck.run("SELECT count(*) FROM lake.sales.typed") == [(total,)]
    # DuckDB 1.5's Airport (main) counts as 1.4's does: by the first column, nothing read
    for client in CLIENTS:
        reads.clear()
        for query, expected in ((unread[0], total), (unread[1], total * total)):
            counted = ask(client, location, query.format(t="lake.sales.typed"), catalog="")
            assert counted == [str(expected)], (client.name, query)
        assert reads == [], client.name


def _noted(read: Any, reads: list[str]) -> Any:
    def noted(*args: Any, **kwargs: Any) -> Any:
        reads.append(read.__module__)
        return read(*args, **kwargs)

    return noted


@pytest.mark.spark
def test_a_spark_lakes_scans_take_filters_larger_than_its_engines_do(
    spark_lake: tuple[Any, str, str], open_session: OpenSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB's `IN` of 20,000 values crashed the server (DataFusion's stack overflowed), and
    300 ANDed comparisons failed its scan (DataFusion's SQL parser nests 50 levels at most):
    both answer as DuckDB does, read whole (delta-rs) and in parts (pyarrow)."""
    spark, ident, location = spark_lake
    listed = ", ".join(str(k * 7) for k in range(-10, 20_000))
    ands = " AND ".join(f"i <> {-k}" for k in range(1, 301))
    queries = [
        f"SELECT i, s FROM {{t}} WHERE i IN ({listed})",
        f"SELECT i, s FROM {{t}} WHERE {ands}",
        f"SELECT count(*) FROM {{t}} WHERE i IN ({listed}) AND {ands}",
    ]
    whole = open_session(location)
    _own(whole, "typed", _spark_rows(spark, ident))
    _same_answers(whole, "lake.sales.typed", "typed", queries)
    monkeypatch.setattr(SPLIT, "max_parts", 3)
    monkeypatch.setattr(SPLIT, "rows_per_part", 1)
    parts = open_session(location)
    _own(parts, "typed", _spark_rows(spark, ident))
    _same_answers(parts, "lake.sales.typed", "typed", queries)


@pytest.mark.spark
def test_a_spark_lakes_split_scans_equal_one_endpoint(
    spark_lake: tuple[Any, str, str], open_session: OpenSession
) -> None:
    spark, ident, location = spark_lake
    queries = [
        "SELECT * FROM {t}",
        "SELECT count(*) FROM {t}",
        "SELECT part, count(*), sum(i) FROM {t} GROUP BY part",
        "SELECT s FROM {t} WHERE i BETWEEN 20 AND 120",
        "SELECT * FROM {t} AT (VERSION => 1)",
    ]
    whole = open_session(location)
    assert _endpoints(location, "sales", "typed") == 1
    answers = {q: sorted(whole.run(q.format(t="lake.sales.typed")), key=repr) for q in queries}
    before = (SPLIT.max_parts, SPLIT.rows_per_part)
    SPLIT.max_parts, SPLIT.rows_per_part = 3, 1
    try:
        assert _endpoints(location, "sales", "typed") == 3  # groups of the version's files
        parts = open_session(location)
        for query in queries:
            assert sorted(parts.run(query.format(t="lake.sales.typed")), key=repr) == answers[query]
    finally:
        SPLIT.max_parts, SPLIT.rows_per_part = before
    assert answers["SELECT count(*) FROM {t}"] == [
        (spark.sql(f"SELECT count(*) FROM {ident}").first()[0],)
    ]


@pytest.mark.spark
def test_a_spark_lakes_timestamps_far_from_today_read_as_spark_wrote_them(
    spark_backend: Any, tmp_path: Path, open_session: OpenSession
) -> None:
    """A "valid until 9999-12-31" and a year-1 TIMESTAMP Spark wrote (Parquet's INT96, which
    read through nanoseconds wraps around to 1816 and 1754) reach DuckDB as Spark reads them,
    and DuckDB's filters on them run in the server."""
    spark = spark_backend.spark
    ident = f"delta.`{tmp_path / 'hr' / 'contracts'}`"
    spark.sql(
        f"CREATE TABLE {ident} (id INT, valid_from TIMESTAMP, valid_to TIMESTAMP) USING delta"
    )
    spark.sql(
        f"INSERT INTO {ident} VALUES (1, TIMESTAMP '0001-01-01 00:00:00Z', TIMESTAMP '2020-01-01 00:00:00Z'),"
        " (2, TIMESTAMP '2020-01-01 00:00:00Z', TIMESTAMP '9999-12-31 23:59:59.999999Z')"
    )
    spark_text = spark.sql(
        f"SELECT id, string(valid_from), string(valid_to) FROM {ident} ORDER BY id"
    ).collect()
    with lake_server(spark, tmp_path) as location:
        duck = open_session(location)
        duck.run("SET TimeZone = 'UTC'")
        served = duck.run(
            "SELECT id, strftime(valid_from, '%Y-%m-%d %H:%M:%S.%f'),"
            " strftime(valid_to, '%Y-%m-%d %H:%M:%S.%f') FROM lake.hr.contracts ORDER BY id"
        )
        assert served == [
            (1, "0001-01-01 00:00:00.000000", "2020-01-01 00:00:00.000000"),
            (2, "2020-01-01 00:00:00.000000", "9999-12-31 23:59:59.999999"),
        ]
        assert [tuple(r) for r in spark_text] == [
            (1, "0001-01-01 00:00:00", "2020-01-01 00:00:00"),
            (2, "2020-01-01 00:00:00", "9999-12-31 23:59:59.999999"),
        ]
        current = (
            "SELECT id FROM lake.hr.contracts WHERE valid_to > TIMESTAMPTZ '2026-01-01 00:00:00+00'"
        )
        assert duck.run(current) == [(2,)]
