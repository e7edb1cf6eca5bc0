"""A row-tracked table's rows named by their values, worked out without Spark (commits.py
matches them so: Delta refuses `_metadata.row_id` in a statement's condition): whether columns
tell rows apart (all_distinct), a column's values as an `IN (…)` list of exact literals
(key_list) or every row's one value as one literal (one_literal), whether Arrow compares values
as Spark does (exactly_equal), and which rows hold them by the log (rows_skipped) and by the
version's files (holding)."""

from __future__ import annotations

import bisect
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airport_contracts import Context

from ..distinct_ids import distinct_count
from . import file_parts
from .sql import quote, sql_literal

# A row-tracked table's DELETE by up to this many values of its first column runs as Spark's
# own `DELETE … WHERE column IN (…)`, and Spark's count (where the server does not read the
# files) filters by them: Delta skips the files that hold none of them. On TPC-H SF 1's
# lineitem, 1,500 order keys: the DELETE 2.7 s against the MERGE's 5.8 s, Spark's count 0.8 s
# against its semi join's 1.6 s (counted in the files instead: no Spark job). On SF 3's
# (2026-11-30, warm rounds): 4,500 keys 2.8–5.0 s against the MERGE's 8.4–9.6 s, 18,000 keys
# 3.5–4.0 s, 36,000 keys 5.3 s against 9.3 s; 144,000 keys 16 s against the MERGE's 12 s.
INLINE_KEYS = 16_384


def key_list(keys: pa.Table, column: str, stored: pa.Schema) -> str | None:
    """`column IN (…)` of keys' one column's values as exact SQL literals, or None where they
    are too many (a long list costs Spark more to plan than a join), hold a null (which IN
    never matches) or a value of a type without an exact literal (sql_literal), or floating
    point (NaN)."""
    values = keys.column(0)
    data_type = stored.field(column).type
    if len(values) > INLINE_KEYS or values.null_count or pa.types.is_floating(data_type):
        return None
    try:
        literals = [sql_literal(value, data_type) for value in values.to_pylist()]
    except (ValueError, OverflowError):  # a date beyond Python's
        return None
    if not literals or any(literal is None for literal in literals):
        return None
    return f"{quote(column)} IN ({', '.join(str(literal) for literal in literals)})"


def exactly_equal(data_type: pa.DataType, features: frozenset[str]) -> bool:
    """Whether Arrow's is_in finds the values Spark's `=` (or `<=>` for a null) matches:
    where both compare the stored bytes. Not floating point (Spark: NaN = NaN, -0.0 = 0.0),
    nested values, nor strings in a table with collations (Spark may compare them without
    case or accents)."""
    strings = not any("collation" in feature.lower() for feature in features)
    return bool(
        pa.types.is_integer(data_type)
        or pa.types.is_boolean(data_type)
        or (strings and (pa.types.is_string(data_type) or pa.types.is_large_string(data_type)))
        or pa.types.is_binary(data_type)
        or pa.types.is_large_binary(data_type)
        or pa.types.is_decimal(data_type)
        or pa.types.is_date(data_type)
        or pa.types.is_timestamp(data_type)
    )


def one_literal(chunks: Iterator[pa.Array], data_type: pa.DataType) -> str | None:
    """The exact SQL literal (sql_literal) of the one value every row of chunks holds; None
    where they hold more than one, or none, or the type has no such literal. Equal means the
    same bits: a float's -0.0 is not its 0.0, as Arrow's comparisons would have it."""
    if sql_literal(None, data_type) is None:
        return None
    bits = None  # a float's values compared as their bits
    if pa.types.is_floating(data_type):
        bits = pa.int64() if data_type.bit_width == 64 else pa.int32()

    def comparable(values: pa.Array) -> pa.Array:
        return values if bits is None else values.view(bits)

    first: pa.Scalar | None = None
    reference: pa.Scalar | None = None
    for chunk in chunks:
        if not len(chunk):
            continue
        if first is None:
            first = chunk[0]
            reference = comparable(chunk.slice(0, 1))[0]
        if not first.is_valid:
            if chunk.null_count != len(chunk):
                return None
            continue
        if chunk.null_count:
            return None
        try:
            bounds = pc.min_max(comparable(chunk))
        except pa.ArrowNotImplementedError:
            return None
        if bounds["min"] != reference or bounds["max"] != reference:
            return None
    if first is None:
        return None
    try:
        return sql_literal(first.as_py(), data_type)
    except (ValueError, OverflowError):  # a date beyond Python's
        return None


def holding(
    files: file_parts.PartFiles,
    column: str,
    values: pa.ChunkedArray,
    indexes: list[int] | None = None,
) -> int:
    """How many live rows of files (those at indexes, or every one) hold one of values in
    column (a null matching a null): one column of the files read, no Spark job."""
    wanted = pc.unique(values)
    chosen = list(range(files.files.num_rows)) if indexes is None else indexes
    reader = file_parts.read(Context.background(), files, chosen, [column], None, 0)
    return sum(
        pc.sum(pc.is_in(batch.column(column), value_set=wanted), min_count=0).as_py()
        for batch in reader
    )


def rows_skipped(files: file_parts.PartFiles, column: str, values: pa.ChunkedArray) -> int | None:
    """The rows of the files that hold none of values (non-null) in column, as the log tells
    (a partition value not among them, or min/max bounds no value falls within): those Delta
    skips for `column IN (values)`. None where the log's values do not compare with them."""
    keys = sorted(v for v in values.to_pylist() if v is not None)
    records = files.files.column("num_records").to_pylist()
    try:
        if column in files.partitions:
            held = set(keys)
            partition = files.files.column(f"partition.{column}").to_pylist()
            return sum(n or 0 for n, v in zip(records, partition, strict=True) if v not in held)
        lows = files.files.column(f"min.{column}").to_pylist()
        highs = files.files.column(f"max.{column}").to_pylist()
        skipped = 0
        for rows, low, high in zip(records, lows, highs, strict=True):
            if low is None or high is None:
                continue  # no bounds: Delta reads the file
            at = bisect.bisect_left(keys, low)
            if at == len(keys) or keys[at] > high:
                skipped += rows or 0
        return skipped
    except (KeyError, TypeError):  # no such statistics column; bounds of another type
        return None


def all_distinct(keys: pa.Table) -> bool | None:
    """Whether no two of keys' rows are equal, or None where Arrow cannot group them (nested
    values, maps). Columns of integers, dates and timestamps without nulls whose ranges
    multiply within 63 bits are folded into one integer a row and sorted: on SF 1's lineitem
    (6M rows) 0.09-0.18 s a try against Arrow's group_by's 0.36-0.53 s and up to 0.75 GiB
    (docs/benchmarks.md); other columns are grouped by Arrow."""
    folded = folded_rows(keys)
    if folded is not None:
        return distinct_count(folded) == len(folded)
    distinct = distinct_rows(keys)
    return None if distinct is None else distinct.num_rows == keys.num_rows


def folded_rows(keys: pa.Table) -> np.ndarray | None:
    """Each row of keys as one integer, equal only for equal rows and ordered as the rows are
    by their columns in turn (each column's offset from its least value, times the product of
    the ranges after it), or None where a column is not integral, holds a null, or the ranges'
    product passes 63 bits. The first column leads because a table's rows mostly come in runs
    of it (files written in key order): then the folds do too, which distinct_count's stable
    sort takes as they are (SF 1's row-tracked lineitem, in three runs of l_orderkey: 0.07 s
    a try against 0.37-0.49 s with the first column folded last)."""
    if not keys.num_rows:
        return np.zeros(0, dtype=np.int64)
    folded: np.ndarray | None = None
    span = 1
    for column in reversed(keys.columns):
        if column.null_count:
            return None
        if pa.types.is_date32(column.type):
            column = column.cast(pa.int32())
        elif pa.types.is_date64(column.type) or pa.types.is_timestamp(column.type):
            column = column.cast(pa.int64())
        elif not pa.types.is_integer(column.type):
            return None
        values = column.to_numpy()
        low, high = int(values.min()), int(values.max())
        if span * (high - low + 1) >= 2**63:
            return None
        # Each column's offsets in an int64 array of their own, shifted and scaled in place
        # (to_numpy's copy of a chunked column is writable, and kept): new arrays for each
        # step took twice the time, 6M rows of 4 columns 0.12 s against 0.06 s.
        if np.issubdtype(values.dtype, np.unsignedinteger):  # offsets below 2**63 (above)
            offsets = (values - values.dtype.type(low)).astype(np.int64)
        else:
            offsets = values.astype(np.int64, copy=not values.flags.writeable)
            offsets -= low
        if folded is None:
            folded = offsets
        else:
            offsets *= span
            folded += offsets
        span *= high - low + 1
    return folded


def distinct_rows(keys: pa.Table) -> pa.Table | None:
    """keys' distinct rows, or None for a type Arrow cannot group by (nested, maps)."""
    try:
        return keys.group_by(keys.column_names).aggregate([])
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
