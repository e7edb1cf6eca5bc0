"""A Spark Connect scan cut into queries Delta confines to their own files (file_pieces.py):
which column the pieces go by, that every file is read once, and over a real Spark Connect
server, that the rows are the table's exactly whatever the column's type, nulls included."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airport_contracts import Context, ScanOptions
from pyairport.backends.spark.file_pieces import (
    MAX_COLUMNS,
    FileRange,
    Piece,
    candidates,
    plan,
    widened,
)
from pyairport.backends.spark.layout import Layout

MB = 1 << 20


def _file(name: str, **bounds: tuple[Any, Any, bool]) -> FileRange:
    return FileRange(name, 10 * MB, bounds)


def _read_once(files: list[FileRange], pieces: list[Piece]) -> None:
    named = [path for piece in pieces for path in piece.files]
    assert sorted(named) == sorted(f.path for f in files)


def test_pieces_go_by_the_column_whose_files_overlap_least() -> None:
    # ids written in order (each file its own range), a random value spread over every file
    files = [
        _file(f"part-{9 - i}", id=(i * 100, i * 100 + 99, False), r=(0.0, 1.0, False))
        for i in range(10)
    ]
    pieces = plan(files, ["r", "id"], 20 * MB)
    _read_once(files, pieces)
    assert {p.column for p in pieces} == {"id"} and len(pieces) == 5
    assert [(p.low, p.high) for p in pieces][:2] == [(0, 199), (200, 399)]
    assert not any(p.nulls for p in pieces)


def test_no_column_that_confines_the_files_leaves_the_pieces_by_path() -> None:
    files = [_file(f"part-{i}", r=(0, 1000 - i, False)) for i in range(6)]
    pieces = plan(files, ["r"], 20 * MB)
    _read_once(files, pieces)
    assert [p.column for p in pieces] == [None] * 3
    assert [p.files for p in pieces][0] == ("part-0", "part-1")
    # a table of one group is one piece, whatever its columns
    assert plan(files[:2], ["r"], 20 * MB) == [Piece(("part-0", "part-1"))]


def test_a_piece_asks_for_the_nulls_of_its_files() -> None:
    files = [
        _file("a", d=(date(2024, 1, 1), date(2024, 1, 31), True)),
        _file("b", d=(date(2024, 2, 1), date(2024, 2, 28), False)),
        _file("c", d=(None, None, True)),  # every value null
        _file("e", d=(date(2024, 3, 1), date(2024, 3, 31), False)),
    ]
    pieces = plan(files, ["d"], 10 * MB)
    _read_once(files, pieces)
    assert [(p.files, p.low, p.nulls) for p in pieces] == [
        (("a",), date(2024, 1, 1), True),
        (("b",), date(2024, 2, 1), False),
        (("e",), date(2024, 3, 1), False),
        (("c",), None, True),  # the files without a value last: only their nulls asked for
    ]


def test_a_timestamp_range_is_widened_by_two_days_and_a_calendar_edge_left_open() -> None:
    low, high = datetime(2024, 3, 31, 2, 30), datetime(2024, 10, 27, 2, 30)
    assert widened(Piece(("a",), "t", low, high)) == (
        low - timedelta(days=2),
        high + timedelta(days=2),
    )
    edge = Piece(("a",), "t", datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59))
    assert widened(edge) == (None, None)
    exact = Piece(("a",), "n", Decimal("-1.50"), Decimal("2.25"))
    assert widened(exact) == (Decimal("-1.50"), Decimal("2.25"))


def _layout(properties: dict[str, str], partitions: tuple[str, ...] = ()) -> Layout:
    empty = pa.schema([])
    return Layout("t", None, None, empty, empty, partitions, frozenset(), frozenset(), properties)


@pytest.mark.spark
def test_candidates_are_the_ordered_columns_delta_skips_files_by() -> None:
    from pyspark.sql.types import (
        DateType,
        DecimalType,
        DoubleType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampNTZType,
        TimestampType,
    )

    schema = StructType(
        [
            StructField("name", StringType()),
            StructField("id", LongType()),
            StructField("point", StructType([StructField("x", DoubleType())] * 2)),
            StructField("at", TimestampType()),
            StructField("amount", DecimalType(12, 2)),
            StructField("score", DoubleType()),  # NaN has no place in a range
            StructField("day", DateType()),
            StructField("local", TimestampNTZType()),
        ]
    )
    assert candidates(schema, _layout({})) == ["id", "at", "amount", "day", "local"]
    assert candidates(schema, _layout({}, ("day",))) == ["day", "id", "at", "amount", "local"]
    by_name = _layout({}, ("name", "score"))  # a string partition's values are whole
    assert candidates(schema, by_name) == ["name", "id", "at", "amount", "day", "local"]
    # the log keeps bounds of the first four leaves: name, id and the struct's two fields
    narrow = _layout({"delta.dataSkippingNumIndexedCols": "4"}, ("day",))
    assert candidates(schema, narrow) == ["day", "id"]
    listed = _layout({"delta.dataSkippingStatsColumns": "`amount`, local"})
    assert candidates(schema, listed) == ["amount", "local"]
    wide = StructType([StructField(f"c{i}", IntegerType()) for i in range(40)])
    assert len(candidates(wide, _layout({"delta.dataSkippingNumIndexedCols": "-1"}))) == (
        MAX_COLUMNS
    )


@pytest.mark.spark
def test_a_spark_connect_scan_reads_each_piece_by_its_range_and_every_row_exactly(
    spark_connect_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over a real Spark Connect server, with the table's files read by Spark (forced here:
    the server's folder is this machine's): a file per piece, the pieces by the column whose
    files do not overlap, each column type's range asked for as Spark Connect sends it."""
    from pyairport.backends.spark import SparkBackend, file_pieces, scans
    from pyairport.backends.spark.planning import DeltaScanPlanning
    from pyairport.backends.spark.table import SparkTable

    spark = spark_connect_backend.spark
    folder = tmp_path / "pieces" / "events"  # the Connect server's machine's
    ident = f"delta.`{folder}`"
    spark.sql(
        f"CREATE TABLE {ident} (`the id` BIGINT, day DATE, at TIMESTAMP, amount DECIMAL(12, 2),"
        " note STRING, region STRING) USING delta PARTITIONED BY (region)"
        " TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"
    )
    for batch in range(4):  # files of their own ranges of every column but note
        spark.sql(
            f"INSERT INTO {ident} SELECT {batch} * 100 + id,"
            f" date_add(DATE'2024-03-01', {batch} * 10 + int(id % 10)),"
            f" TIMESTAMP'2024-10-27 00:30:00' + make_interval(0, 0, 0, {batch}, int(id), 0, 0),"
            f" CAST({batch} * 100 + id AS DECIMAL(12, 2)) / 4,"
            " CASE WHEN id % 7 = 0 THEN NULL ELSE cast(id AS STRING) END,"
            f" 'r{batch // 2}' FROM range(50)"
        )
    spark.sql(f"INSERT INTO {ident} VALUES (NULL, NULL, NULL, NULL, 'no values', NULL)")
    monkeypatch.setattr(scans, "SCAN_GROUP_BYTES", 1)  # a file per piece
    monkeypatch.setattr(DeltaScanPlanning, "part_files", lambda *args: None)
    monkeypatch.setattr(SparkTable, "direct_snapshot", lambda *args, **kwargs: None)
    planned: list[list[Piece]] = []
    chosen = file_pieces.plan

    def recorded(files: Any, columns: Any, group_bytes: int) -> list[Piece]:
        planned.append(chosen(files, columns, group_bytes))
        return planned[-1]

    monkeypatch.setattr(file_pieces, "plan", recorded)
    expected = spark.sql(f"SELECT * FROM {ident}").toArrow()

    def rows(read: pa.Table) -> list[str]:
        read = read.select(expected.column_names).cast(expected.schema)
        return sorted(json.dumps(r, sort_keys=True, default=str) for r in read.to_pylist())

    backend = SparkBackend(spark, tmp_path, remote="sc://127.0.0.1")
    try:
        ctx = Context.background()
        schema: Any = backend.catalog.schema(ctx, "pieces")
        table = schema.table(ctx, "events")
        assert rows(table.scan(ctx, ScanOptions()).read_all()) == rows(expected)
        pieces = planned[-1]
        files = spark.sql(f"SELECT count(DISTINCT _metadata.file_path) FROM {ident}").first()[0]
        assert len(pieces) == files > 5 and all(len(p.files) == 1 for p in pieces)
        assert {p.column for p in pieces} == {"the id"}  # the first candidate that confines
        assert pieces[-1].low is None and pieces[-1].nulls  # the row without values
        # the same by each other type's range
        for column in ("day", "at", "amount", "region"):
            monkeypatch.setattr(
                file_pieces, "plan", lambda files, _, size, c=column: recorded(files, [c], size)
            )
            assert rows(table.scan(ctx, ScanOptions()).read_all()) == rows(expected), column
            assert {p.column for p in planned[-1]} == {column}
    finally:
        backend.close()
