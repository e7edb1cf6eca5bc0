"""A MERGE's source over VIEW_INLINE_BYTES reaches Spark as a staged Parquet file rather than
inside its statement (backend.py: Spark holds a DataFrame made from Arrow data whole in its
driver, and an UPDATE of every row of a large table ran the driver out of heap), and an
UPDATE's values past SPILL_BYTES go to staged files as they come, not held until the commit
(staging.py). UPDATE and DELETE through such files land exactly, for the column types a lake
holds, on a row-tracked table (matched by every column's value) and on a table with
pyairport's rowid column, and leave no file behind. A source with a nested value that holds
no null stays inline; spilled values whose rowids repeat, or whose calls set other columns,
are read back and applied as held ones are (the last value of a row wins)."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from pyairport.client import AirportClient
from pyairport.transactions import MemoryTransactionManager

from ..protocol.conftest import serving

pytestmark = pytest.mark.spark

ROWS = 300
COLUMNS = (
    "k BIGINT, `a b` STRING, amount DECIMAL(18,2), at TIMESTAMP, local TIMESTAMP_NTZ,"
    " day DATE, tags MAP<STRING, INT>, s STRUCT<x: INT, `y z`: STRING>, arr ARRAY<BIGINT>,"
    " bin BINARY, f DOUBLE, small TINYINT, flag BOOLEAN"
)
# k repeats (three rows a value), so a row-tracked table's rows are matched by every column.
VALUES = (
    "id DIV 3",
    "IF(id % 7 = 0, NULL, concat('name ', id))",
    "CAST(id * 1.25 AS DECIMAL(18,2))",
    "timestamp_micros(1700000000000000 + id)",
    "CAST(timestamp_micros(1600000000000000 + id * 1000) AS TIMESTAMP_NTZ)",
    "date_add(DATE'1500-01-01', CAST(id AS INT))",  # before the Gregorian calendar
    "IF(id % 5 = 0, NULL, map('k', CAST(id AS INT)))",
    "named_struct('x', CAST(id AS INT), 'y z', concat('v', id))",
    "array(id, IF(id % 4 = 0, NULL, id + 1))",
    "CAST(concat('b', id) AS BINARY)",
    "IF(id = 5, double('NaN'), id / 3.0)",
    "CAST(id % 100 AS TINYINT)",
    "id % 2 = 0",
)
TRACKED = (
    "'delta.enableRowTracking' = 'true', 'delta.enableDeletionVectors' = 'true',"
    " 'delta.columnMapping.mode' = 'name'"
)


@contextlib.contextmanager
def _served(
    spark: Any, lake: Path, monkeypatch: pytest.MonkeyPatch, spills: list[int] | None = None
) -> Iterator[tuple[AirportClient, list[Path]]]:
    """A client of lake, every view of its statements staged as a file (the files made);
    with spills, every UPDATE call's values spilled to a file (each spill's rows noted)."""
    from pyairport.backends.spark import SparkBackend, backend, staging

    monkeypatch.setattr(backend, "VIEW_INLINE_BYTES", 0)
    if spills is not None:
        monkeypatch.setattr(staging, "SPILL_BYTES", 0)
        spill = staging.spill

        def noted(pending: Any, stored: pa.Schema) -> bool:
            rows = sum(len(ids) for ids, _ in pending.updates)
            done = spill(pending, stored)
            spills.append(rows if done else 0)
            return done

        monkeypatch.setattr(staging, "spill", noted)
    served = SparkBackend(spark, lake)
    made: list[Path] = []
    view_file = served._view_file

    def recorded(name: str) -> Path:
        path = view_file(name)
        if path not in made:
            made.append(path)
        return path

    monkeypatch.setattr(served, "_view_file", recorded)
    try:
        with serving(served.catalog, MemoryTransactionManager()) as running:
            yield running.client, made
            assert not list(served.staging.glob("*.parquet"))
    finally:
        served.close()


def _rows(spark: Any, ident: str) -> list[dict[str, Any]]:
    rows = spark.sql(f"SELECT * FROM {ident}").toArrow().to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _changed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """rows as the UPDATE below leaves them."""
    return [r | {"a b": f"changed {r['k']}", "amount": r["amount"] + 1} for r in rows]


def _same(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> bool:
    """Equal, NaN equal to NaN."""

    def key(row: dict[str, Any]) -> str:
        f = row["f"]
        return json.dumps(row | {"f": "NaN" if f is not None and math.isnan(f) else f}, default=str)

    return sorted(map(key, left)) == sorted(map(key, right))


def _update_and_delete(client: AirportClient, name: str, batch_rows: int | None = None) -> None:
    """UPDATE every row as DuckDB sends it (every column and the rowid), then DELETE the
    rows of odd k."""
    scanned = client.scan("sales", name).read_all()
    names = scanned.schema.names
    a_b, amount = names.index("a b"), names.index("amount")
    changed = scanned.set_column(
        a_b, "a b", pa.array([f"changed {k}" for k in scanned.column("k").to_pylist()])
    )
    raised = pa.array([v + 1 for v in scanned.column("amount").to_pylist()], changed["amount"].type)
    changed = changed.set_column(amount, "amount", raised)
    assert client.update("sales", name, changed, batch_rows=batch_rows).total_changed == ROWS
    odd = [r["rowid"] for r in scanned.select(["rowid", "k"]).to_pylist() if r["k"] % 2]
    assert client.delete("sales", name, odd).total_changed == len(odd)


SPILLED = pytest.mark.parametrize("spilled", [False, True], ids=["held", "spilled"])


@SPILLED
def test_a_row_tracked_tables_rows_change_through_staged_views(
    spark_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spilled: bool
) -> None:
    spark = spark_backend.spark
    lake = tmp_path / "lake"
    ident = f"delta.`{lake / 'sales' / 'tracked'}`"
    spark.sql(f"CREATE TABLE {ident} ({COLUMNS}) USING delta TBLPROPERTIES ({TRACKED})")
    spark.sql(f"INSERT INTO {ident} SELECT {', '.join(VALUES)} FROM range({ROWS})")
    before = _rows(spark, ident)
    spills: list[int] | None = [] if spilled else None
    with _served(spark, lake, monkeypatch, spills) as (client, made):
        _update_and_delete(client, "tracked", 64 if spilled else None)
    assert made  # the MERGEs' sources went as files
    if spills is not None:  # each call's rows (at most 64) to a file as they came
        assert sum(spills) == ROWS and len(spills) > 1 and all(spills)
    expected = [r for r in _changed(before) if r["k"] % 2 == 0]
    assert _same(_rows(spark, ident), expected)


@SPILLED
def test_a_rowid_tables_rows_change_through_staged_views(
    spark_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spilled: bool
) -> None:
    """pyairport's own table (a rowid column): more rows than its statements list inline, so
    each is a MERGE against the rowids and values sent."""
    spark = spark_backend.spark
    lake = tmp_path / "lake"
    rows = spark.sql(f"SELECT {', '.join(VALUES)} FROM range({ROWS})").toArrow()
    lake.mkdir()
    spills: list[int] | None = [] if spilled else None
    with _served(spark, lake, monkeypatch, spills) as (client, made):
        client.create_schema("sales")
        typed = spark.createDataFrame([], COLUMNS).toArrow().schema
        client.create_table("sales", "own", typed)
        assert (
            client.insert(
                "sales", "own", rows.rename_columns(typed.names).cast(typed)
            ).total_changed
            == ROWS
        )
        before = client.scan("sales", "own").read_all().drop_columns(["rowid"]).to_pylist()
        _update_and_delete(client, "own", 64 if spilled else None)
        after = client.scan("sales", "own").read_all().drop_columns(["rowid"]).to_pylist()
    assert made
    if spills is not None:
        assert sum(spills) == ROWS and len(spills) > 1 and all(spills)
    assert _same(after, [r for r in _changed(before) if r["k"] % 2 == 0])


def test_a_source_with_a_nested_value_that_holds_no_null_stays_in_its_statement() -> None:
    """Spark reads every file's values as nullable; a MERGE cannot set such a struct into a
    column whose field is NOT NULL (DATATYPE_MISMATCH), so that source goes inline."""
    from pyairport.backends.spark.staging import kept_by_files

    item = pa.field("item", pa.int32(), nullable=False)
    assert kept_by_files(pa.schema([pa.field("k", pa.int64(), nullable=False)]))
    assert kept_by_files(pa.schema([("m", pa.map_(pa.string(), pa.int32()))]))
    for nested in (
        pa.struct([pa.field("a", pa.int32(), nullable=False)]),
        pa.list_(item),
        pa.large_list(item),
        pa.list_(item, 2),
        pa.map_(pa.string(), item),
        pa.struct([("outer", pa.struct([pa.field("a", pa.int32(), nullable=False)]))]),
    ):
        assert not kept_by_files(pa.schema([("c", nested)])), nested


def test_spilled_values_with_a_repeated_rowid_or_other_columns_are_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """staging alone (no Spark): calls that set the same columns of distinct rows stay in
    their files, in the stored types; a rowid set twice, or a call setting other columns,
    brings every file back ahead of what is held, and the last value of a row wins."""
    from pyairport.backends.spark import staging

    monkeypatch.setattr(staging, "SPILL_BYTES", 0)
    stored = pa.schema([("rowid", pa.int64()), ("n", pa.int64()), ("d", pa.decimal128(18, 2))])
    served = pa.schema([("rowid", pa.int64()), ("n", pa.int64()), ("d", pa.decimal64(18, 2))])

    def call(pending: Any, ids: list[int], **columns: list[Any]) -> None:
        values = {k: pa.array(v, served.field(k).type) for k, v in columns.items()}
        staging.stage_update(pending, np.array(ids, np.int64), values, stored)

    def at(pending: Any) -> dict[int, dict[str, Any]]:
        frame = staging.update_frame(pending.updates, stored, "rowid").to_pylist()
        return {r.pop("rowid"): r for r in frame}

    apart = staging.Pending(tmp_path / "apart")
    call(apart, [3, 1], n=[30, 10], d=[3, 1])
    call(apart, [2], n=[20], d=[2])
    spilled = staging.spilled_update(apart, stored)
    assert spilled is not None and spilled.columns == ("n", "d")
    assert spilled.ids.tolist() == [1, 2, 3] and len(spilled.files()) == 2  # ascending
    import pyarrow.parquet as pq

    first = pq.read_table(spilled.files()[0])
    assert first.schema.field("d").type == pa.decimal128(18, 2)
    assert first.column("rowid").to_pylist() == [3, 1]  # the files keep the rows as they came

    repeated = staging.Pending(tmp_path / "repeated")
    call(repeated, [1, 2], n=[10, 20], d=[1, 2])
    call(repeated, [2], n=[21], d=[5])
    assert staging.spilled_update(repeated, stored) is None
    assert not repeated.spilled
    assert at(repeated)[2] == {"n": 21, "d": 5, "__set_n": True, "__set_d": True}

    other = staging.Pending(tmp_path / "other")
    call(other, [1], n=[10], d=[1])
    call(other, [1, 2], n=[11, 22])  # only n: held, not spilled
    assert len(other.spilled) == 1 and len(other.updates) == 1
    assert staging.spilled_update(other, stored) is None
    frame = at(other)
    assert frame[1]["n"] == 11 and frame[1]["d"] == 1
    assert frame[2]["n"] == 22 and frame[2]["__set_d"] is False
