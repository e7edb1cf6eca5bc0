"""What a Delta version's log says of its files, read by delta-rs without opening them: the
column statistics DuckDB plans with (StatisticsTable), and whether delta-rs reads the
version's timestamps exactly (misread_timestamps).

The log's per-file statistics are bounds of the rows each file was written with: deletion
vectors only remove rows, so they still hold (the counts of nulls and rows are upper bounds,
and only what holds for a subset is claimed from them). Delta writes a timestamp's bounds in
milliseconds, the lower one rounded down and the upper one cut (below the real value): the
upper is widened by a millisecond. A float's bounds leave NaN out, which DuckDB orders above
every number: no float bounds are given.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airport_contracts import ColumnStats


def files_of(snapshot: Any) -> pa.Table:
    """The version's data files, a row each: path, num_records and the flattened statistics
    (null_count.<column>, min.<column>, max.<column>)."""
    return pa.table(snapshot.get_add_actions(flatten=True))


def _column(files: pa.Table, name: str) -> pa.ChunkedArray | None:
    return files.column(name) if name in files.column_names else None


def _bounded(type_: pa.DataType) -> bool:
    """Types whose log bounds hold as DuckDB compares values (see the module's doc)."""
    t = pa.types
    return bool(
        t.is_integer(type_)
        or t.is_decimal(type_)
        or t.is_date(type_)
        or t.is_timestamp(type_)
        or t.is_boolean(type_)
        or t.is_string(type_)
        or t.is_large_string(type_)
    )


def column_stats(files: pa.Table, field: pa.Field) -> ColumnStats:
    """One column's statistics from the log (unknown where any file lacks them)."""
    nulls = _column(files, f"null_count.{field.name}")
    records = files.column("num_records")
    has_null = has_not_null = None
    if nulls is not None and not nulls.null_count and not records.null_count:
        has_null = bool(pc.any(pc.greater(nulls, 0)).as_py()) if len(nulls) else False
        has_not_null = bool(pc.any(pc.less(nulls, records)).as_py()) if len(nulls) else False
    low = high = None
    lows, highs = _column(files, f"min.{field.name}"), _column(files, f"max.{field.name}")
    if (
        lows is not None
        and highs is not None
        and len(files)
        and _bounded(field.type)
        and not lows.null_count
        and not highs.null_count
    ):
        low, high = pc.min(lows), pc.max(highs)
        if pa.types.is_timestamp(field.type):
            # in Arrow's integers: 9999-12-31 23:59:59.999 plus a millisecond is past
            # Python's datetimes
            high = pc.add(high, pa.scalar(timedelta(milliseconds=1), pa.duration(high.type.unit)))
        low, high = low.cast(field.type), high.cast(field.type)
    return ColumnStats(has_not_null=has_not_null, has_null=has_null, min=low, max=high)


# The years 64-bit nanoseconds since 1970 reach (1677-09-21 to 2262-04-11), with a margin.
_NANOSECOND_YEARS = (datetime(1678, 1, 1), datetime(2262, 1, 1))


def misread_timestamps(files: pa.Table, schema: pa.Schema) -> bool:
    """Whether delta-rs may misread a version's TIMESTAMP columns. Spark writes them as
    Parquet's INT96 (its default), which delta-rs 1.6 reads through nanoseconds: a value
    outside 1677–2262 wraps around (9999-12-31, a common "valid until", reads as 1816).
    True unless the log's bounds put every such column's values within those years (the
    files are then read by pyarrow, which reads INT96 as microseconds: file_parts)."""
    for field in schema:
        if not _holds_zoned_timestamp(field.type):
            continue
        lows, highs = _column(files, f"min.{field.name}"), _column(files, f"max.{field.name}")
        if not pa.types.is_timestamp(field.type) or lows is None or highs is None:
            return True  # nested, or no bounds in the log
        if not pa.types.is_timestamp(lows.type) or not pa.types.is_timestamp(highs.type):
            return True  # bounds delta-rs did not read as times
        if lows.null_count or highs.null_count:
            return True
        if not len(files):
            continue
        # compared as Arrow values: a bound past year 9999 is no Python datetime
        first, last = pa.array(_NANOSECOND_YEARS, pa.timestamp("us")).cast(lows.type)
        if pc.less(pc.min(lows), first).as_py() or pc.greater_equal(pc.max(highs), last).as_py():
            return True
    return False


def _holds_zoned_timestamp(type_: pa.DataType) -> bool:
    """A TIMESTAMP (with a time zone: Spark's TimestampType), alone or nested. Spark writes
    TIMESTAMP_NTZ as 64-bit microseconds, which every reader reads exactly."""
    if pa.types.is_timestamp(type_):
        return type_.tz is not None
    if pa.types.is_struct(type_):
        return any(_holds_zoned_timestamp(type_.field(i).type) for i in range(type_.num_fields))
    if pa.types.is_map(type_):
        return _holds_zoned_timestamp(type_.key_type) or _holds_zoned_timestamp(type_.item_type)
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return _holds_zoned_timestamp(type_.value_type)
    return False
