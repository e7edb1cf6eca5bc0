"""A row-tracked table's key values (commits.py), without Spark: which rows Delta skips for an
UPDATE's `key IN (…)`, as the log tells (the files whose partition value or min/max bounds
hold none of the keys; the log's file table made here as delta-rs gives it), and which key
types the server may count itself (where Arrow's equality is Spark's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa


def _files(columns: dict[str, list[object]], partitions: tuple[str, ...] = ()) -> Any:
    from pyairport.backends.spark.file_parts import PartFiles

    return PartFiles(
        location=Path("/nowhere"),
        schema=pa.schema([("k", pa.int64())]),
        partitions=partitions,
        files=pa.table(columns),
        masks={},
    )


def test_files_whose_bounds_hold_no_key_are_skipped() -> None:
    from pyairport.backends.spark.row_values import rows_skipped

    files = _files(
        {
            "num_records": [100, 50, 10, 7],
            "min.k": [1, 200, 500, None],  # the last file has no statistics: read
            "max.k": [99, 299, 500, None],
        }
    )
    skipped = rows_skipped(files, "k", pa.chunked_array([[250, 260, None]]))
    assert skipped == 100 + 10
    assert rows_skipped(files, "k", pa.chunked_array([[1, 250, 500]])) == 0
    assert rows_skipped(files, "k", pa.chunked_array([[1000]])) == 160


def test_partition_values_decide_for_a_partition_column() -> None:
    from pyairport.backends.spark.row_values import rows_skipped

    files = _files({"num_records": [5, 6, 7], "partition.k": ["eu", "us", None]}, partitions=("k",))
    assert rows_skipped(files, "k", pa.chunked_array([["eu"]])) == 6 + 7


def test_statistics_the_keys_do_not_compare_with_decide_nothing() -> None:
    from pyairport.backends.spark.row_values import rows_skipped

    no_stats = _files({"num_records": [5]})
    assert rows_skipped(no_stats, "k", pa.chunked_array([[1]])) is None
    other_type = _files({"num_records": [5], "min.k": ["a"], "max.k": ["z"]})
    assert rows_skipped(other_type, "k", pa.chunked_array([[1]])) is None


def test_keys_counted_by_arrow_only_where_its_equality_is_sparks() -> None:
    from pyairport.backends.spark.row_values import exactly_equal

    plain: frozenset[str] = frozenset({"rowTracking", "deletionVectors"})
    for exact in (pa.int64(), pa.string(), pa.decimal128(10, 2), pa.date32(), pa.binary()):
        assert exactly_equal(exact, plain), exact
    for inexact in (
        pa.float64(),
        pa.float32(),
        pa.list_(pa.int64()),
        pa.struct([("a", pa.int8())]),
    ):
        assert not exactly_equal(inexact, plain), inexact
    # strings Spark may compare without case: a collation
    assert not exactly_equal(pa.string(), plain | {"collations-preview"})
    assert exactly_equal(pa.int64(), plain | {"collations-preview"})
