"""A column's statistics computed from its values (the memory table's StatisticsTable): exact,
or None where an exact answer is not to be had cheaply."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from airport_contracts import ColumnStats

DISTINCT_COUNT_ROWS = 1 << 20
"""Columns longer than this get no distinct count: DuckDB asks for statistics whenever it
plans a scan, and a committed change makes them anew, so an exact count of a long column
(hundreds of milliseconds of strings) would be paid by the next query after every write."""


def _ordered(type_: pa.DataType) -> bool:
    """Types whose values Arrow's min_max orders as DuckDB does (numbers, times, decimals,
    booleans; strings and bytes byte by byte)."""
    t = pa.types
    return bool(
        t.is_integer(type_)
        or t.is_floating(type_)
        or t.is_boolean(type_)
        or t.is_decimal(type_)
        or t.is_temporal(type_)
        and not t.is_interval(type_)
        and not t.is_duration(type_)
        or t.is_string(type_)
        or t.is_large_string(type_)
        or t.is_binary(type_)
        or t.is_large_binary(type_)
    )


def arrow_column_stats(column: pa.ChunkedArray) -> ColumnStats:
    rows, nulls = len(column), column.null_count
    type_ = column.type
    low = high = None
    if rows > nulls and _ordered(type_):
        # DuckDB orders NaN above every number: bounds that skip it would not hold
        has_nan = pa.types.is_floating(type_) and pc.any(pc.is_nan(column)).as_py()
        if not has_nan:
            bounds = pc.min_max(column)
            low, high = bounds["min"], bounds["max"]
    distinct = None
    if _ordered(type_) and rows <= DISTINCT_COUNT_ROWS:
        distinct = pc.count_distinct(column).as_py()
    longest = unicode = None
    text = pa.types.is_string(type_) or pa.types.is_large_string(type_)
    if text or pa.types.is_binary(type_) or pa.types.is_large_binary(type_):
        longest = pc.max(pc.binary_length(column)).as_py() or 0
    if text:
        unicode = rows > nulls and not pc.all(pc.string_is_ascii(column)).as_py()
    return ColumnStats(
        has_not_null=rows > nulls,
        has_null=nulls > 0,
        distinct_count=distinct,
        min=low,
        max=high,
        max_string_length=longest,
        contains_unicode=unicode,
    )
