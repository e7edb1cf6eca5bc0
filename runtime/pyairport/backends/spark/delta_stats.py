"""What a Delta version's log says of its files, read by delta-rs without opening them: the
column statistics DuckDB plans with (StatisticsTable), whether a filter rules any file or
row group out (rules_out_none, with the files' footers: row_groups_of) and whether delta-rs
reads the version's timestamps exactly (misread_timestamps).

The log's per-file statistics are bounds of the rows each file was written with: deletion
vectors only remove rows, so they still hold (the counts of nulls and rows are upper bounds,
and only what holds for a subset is claimed from them). Delta writes a timestamp's bounds in
milliseconds, the lower one rounded down and the upper one cut (below the real value): the
upper is widened by a millisecond. A float's bounds leave NaN out, which DuckDB orders above
every number: no float bounds are given.
"""

from __future__ import annotations

import functools
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airport_contracts import ColumnStats

from ...filters.model import And, Between, Compare, In, IsNull, Or, Predicate


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


# An IN list longer than this is not held against the bounds: the answer only chooses how a
# filter runs (direct.read), never which rows it keeps.
_IN_VALUES_CHECKED = 64


def rules_out_none(bounds: pa.Table, predicate: Predicate) -> bool:
    """Whether bounds (a row per file: files_of; or per row group: row_groups_of) show
    predicate keeping every one of them: True only where every term is one bounds decide (a
    comparison, BETWEEN, a short IN, IS [NOT] NULL, under AND and OR) and every row has the
    bounds of every column it names; False where one is ruled out or the bounds cannot
    tell."""
    ruled_out = _ruled_out(bounds, predicate)
    return ruled_out is not None and not pc.any(ruled_out).as_py()


def row_groups_of(footers: list[Any], columns: list[str]) -> pa.Table | None:
    """The row groups of a version's files as their Parquet footers (pyarrow's FileMetaData)
    bound them, a row each, in files_of's columns for the columns named; None where one is
    not a top-level column of every file (nested, or renamed by column mapping) or a row
    group lacks its bounds."""
    rows: dict[str, list[Any]] = {"num_records": []}
    for name in columns:
        rows |= {f"null_count.{name}": [], f"min.{name}": [], f"max.{name}": []}
    for footer in footers:
        at = {footer.schema.column(i).path: i for i in range(footer.num_columns)}
        if any(name not in at for name in columns):
            return None
        for index in range(footer.num_row_groups):
            group = footer.row_group(index)
            rows["num_records"].append(group.num_rows)
            for name in columns:
                stats = group.column(at[name]).statistics
                if stats is None or not stats.has_min_max or not stats.has_null_count:
                    return None
                rows[f"null_count.{name}"].append(stats.null_count)
                rows[f"min.{name}"].append(stats.min)
                rows[f"max.{name}"].append(stats.max)
    try:
        return pa.table({name: pa.array(values) for name, values in rows.items()})
    except (pa.ArrowException, TypeError, ValueError):
        return None  # bounds of mixed types


def _ruled_out(bounds: pa.Table, predicate: Predicate) -> Any:
    """Per row of bounds, whether they show none of its rows matching predicate; None where
    they cannot tell for some row."""
    if isinstance(predicate, And | Or):
        parts = [_ruled_out(bounds, child) for child in predicate.children]
        if not parts or any(part is None for part in parts):
            return None
        # out of an AND where any term rules it out, of an OR where every term does
        return functools.reduce(pc.or_ if isinstance(predicate, And) else pc.and_, parts)
    if isinstance(predicate, IsNull):
        nulls = _column(bounds, f"null_count.{predicate.column}")
        records = bounds.column("num_records")
        if nulls is None or nulls.null_count or records.null_count:
            return None
        return pc.equal(nulls, records) if predicate.negated else pc.equal(nulls, 0)
    if not isinstance(predicate, Compare | Between | In):
        return None  # LIKE and NOT: not decided by bounds here
    lows = _column(bounds, f"min.{predicate.column}")
    highs = _column(bounds, f"max.{predicate.column}")
    if lows is None or highs is None or lows.null_count or highs.null_count:
        return None
    if not _bounded(lows.type) or not _bounded(highs.type):
        return None
    try:
        return _outside(lows, highs, predicate)
    except (pa.ArrowException, TypeError, ValueError):
        return None  # a constant the bounds' type does not compare with


def _outside(lows: pa.ChunkedArray, highs: pa.ChunkedArray, predicate: Predicate) -> Any:
    def apart(value: Any) -> Any:
        return pc.or_(pc.less(highs, value), pc.greater(lows, value))

    if isinstance(predicate, Compare) and predicate.value is not None:
        value = predicate.value
        by_op = {
            "==": lambda: apart(value),
            "<": lambda: pc.greater_equal(lows, value),
            "<=": lambda: pc.greater(lows, value),
            ">": lambda: pc.less_equal(highs, value),
            ">=": lambda: pc.less(highs, value),
        }
        return by_op[predicate.op]() if predicate.op in by_op else None
    if isinstance(predicate, Between) and None not in (predicate.lower, predicate.upper):
        below = (pc.less if predicate.lower_inclusive else pc.less_equal)(highs, predicate.lower)
        above = (pc.greater if predicate.upper_inclusive else pc.greater_equal)(
            lows, predicate.upper
        )
        return pc.or_(below, above)
    if (
        isinstance(predicate, In)
        and not predicate.negated
        and 0 < len(predicate.values) <= _IN_VALUES_CHECKED
        and None not in predicate.values
    ):
        return functools.reduce(pc.and_, [apart(value) for value in predicate.values])
    return None


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
