"""TPC-H as a lake (issue #45): DuckDB's `tpch` extension generates a scale factor, delta-rs
writes each table as a plain Delta table and Spark copies them as row-tracked tables with
deletion vectors, and DuckDB runs the 22 queries and the refresh functions through pyairport
beside its own copy. Shared by tests/duckdb/test_tpch.py (SF 0.1 in `make test`) and
bench/tpch.py (SF 1 and 3)."""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")
SCHEMA = "tpch"
TRACKED = (
    "'delta.enableRowTracking' = 'true', 'delta.enableDeletionVectors' = 'true',"
    " 'delta.checkpointInterval' = '5'"
)
# The refresh functions, as a DuckDB user runs them against a catalog `{db}` (TPC-H's RF1 and
# RF2 and an UPDATE, on one order in every `STEP` so that each scale factor changes 0.1%), with
# the values `refresh_values` gives for a round.
STEP = 1000
NEW_KEYS = 100_000_000  # past every generated order key
REFRESH = (
    (
        "RF1 orders",
        "INSERT INTO {db}.orders SELECT o_orderkey + {new} AS o_orderkey, * EXCLUDE (o_orderkey)"
        " FROM memory.main.orders WHERE o_orderkey % {step} = {insert}",
    ),
    (
        "RF1 lineitem",
        "INSERT INTO {db}.lineitem SELECT l_orderkey + {new} AS l_orderkey, * EXCLUDE (l_orderkey)"
        " FROM memory.main.lineitem WHERE l_orderkey % {step} = {insert}",
    ),
    (
        "RF2 lineitem",
        "DELETE FROM {db}.lineitem WHERE l_orderkey IN"
        " (SELECT o_orderkey FROM memory.main.orders WHERE o_orderkey % {step} = {delete})",
    ),
    (
        "RF2 orders",
        "DELETE FROM {db}.orders WHERE o_orderkey IN"
        " (SELECT o_orderkey FROM memory.main.orders WHERE o_orderkey % {step} = {delete})",
    ),
    (
        "UPDATE orders",
        "UPDATE {db}.orders SET o_comment = 'refreshed', o_totalprice = o_totalprice + 1"
        " WHERE o_orderkey % {step} = {update}",
    ),
)


def generate(connection: Any, scale: float) -> None:
    """The TPC-H tables of scale factor scale in connection's in-memory database."""
    connection.execute("LOAD tpch")
    connection.execute(f"CALL dbgen(sf={scale})")


def write_plain(connection: Any, warehouse: Path) -> None:
    """Each table as a plain Delta table written by delta-rs: warehouse/tpch/<table>."""
    from deltalake import write_deltalake

    for table in TABLES:
        rows = connection.execute(f"SELECT * FROM memory.main.{table}").fetch_arrow_table()
        write_deltalake(str(warehouse / SCHEMA / table), rows)


def write_tracked(spark: Any, plain: Path, warehouse: Path) -> None:
    """Each plain table copied by Spark as a row-tracked table with deletion vectors."""
    for table in TABLES:
        source = f"delta.`{plain / SCHEMA / table}`"
        target = f"delta.`{warehouse / SCHEMA / table}`"
        spark.sql(
            f"CREATE TABLE {target} USING delta TBLPROPERTIES ({TRACKED}) AS SELECT * FROM {source}"
        )


def queries(connection: Any) -> list[tuple[int, str]]:
    return [
        (int(n), str(q))
        for n, q in connection.execute("SELECT query_nr, query FROM tpch_queries()").fetchall()
    ]


def reference(connection: Any, scale: float, number: int) -> list[list[str]] | None:
    """The answer DuckDB ships for a query at a scale factor (rows of cells), or None."""
    found = connection.execute(
        "SELECT answer FROM tpch_answers() WHERE scale_factor = ? AND query_nr = ?", [scale, number]
    ).fetchone()
    if found is None:
        return None
    lines = str(found[0]).splitlines()[1:]
    return [line.split("|") for line in lines]


def run(connection: Any, database: str, query: str) -> list[tuple[Any, ...]]:
    connection.execute(f"USE {database}")
    try:
        return list(connection.execute(query).fetchall())
    finally:
        connection.execute("USE memory.main")


def _same(got: Any, want: Any) -> bool:
    if isinstance(got, float) or isinstance(want, float):
        return math.isclose(float(got), float(want), rel_tol=1e-9, abs_tol=1e-9)
    return bool(got == want)


def differences(got: Sequence[tuple[Any, ...]], want: Sequence[tuple[Any, ...]]) -> str:
    """ "" when two answers are equal (floats to 1e-9), else what differs first."""
    if len(got) != len(want):
        return f"{len(got)} rows, expected {len(want)}"
    for index, (row, expected) in enumerate(zip(got, want, strict=True)):
        if len(row) != len(expected) or not all(map(_same, row, expected)):
            return f"row {index}: {row!r}, expected {expected!r}"
    return ""


def _cell(value: Any, text: str) -> bool:
    if value is None:
        return text in ("", "NULL")
    if isinstance(value, float):
        return math.isclose(value, float(text), rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(value, (int, decimal.Decimal)):
        return decimal.Decimal(value) == decimal.Decimal(text)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat() == text
    return str(value) == text


def differences_from_reference(got: Sequence[tuple[Any, ...]], want: list[list[str]]) -> str:
    """ "" when an answer equals the reference cell by cell, else what differs first."""
    if len(got) != len(want):
        return f"{len(got)} rows, the reference has {len(want)}"
    for index, (row, cells) in enumerate(zip(got, want, strict=True)):
        if len(row) != len(cells) or not all(map(_cell, row, cells)):
            return f"row {index}: {row!r}, the reference has {cells!r}"
    return ""


def refresh_values(round_: int = 0) -> dict[str, int]:
    """What REFRESH's statements are formatted with in round round_ (0 first): each round
    inserts keys of its own and deletes and updates orders no other round touches (orders
    whose key leaves its own remainder by STEP), so that rounds may follow one another."""
    return {
        "new": NEW_KEYS * (round_ + 1),
        "step": STEP,
        "insert": 3 * round_ + 1,
        "delete": 3 * round_ + 2,
        "update": 3 * round_ + 3,
    }


def refresh(connection: Any, database: str, rounds: int = 1) -> None:
    """The refresh functions against database (the attached lake, or DuckDB's own copy), rounds
    times. They read DuckDB's own copy for their rows and keys: refresh the lake first."""
    for round_ in range(rounds):
        for _, statement in REFRESH:
            connection.execute(statement.format(db=database, **refresh_values(round_)))


TOTALS = (
    "SELECT count(*), sum(o_orderkey), sum(o_totalprice), count(DISTINCT o_comment) FROM orders",
    "SELECT count(*), sum(l_orderkey), sum(l_quantity), sum(l_extendedprice) FROM lineitem",
)
"""Whole-table checks after the refresh functions: what each changed, summed."""
