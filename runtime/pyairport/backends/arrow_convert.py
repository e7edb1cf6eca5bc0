"""Converting a column between two Arrow types that hold the same values: a cast, plus the
conversions pyarrow has no cast for (an extension type to and from its storage, an interval to
and from the struct of its parts). Used where a backend stores a type as another
(spark/stored_types.py) and where a read is made the served schema (shaping.full_width)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

INTERVAL_PARTS = pa.struct(
    [("months", pa.int32()), ("days", pa.int32()), ("nanoseconds", pa.int64())]
)
"""How an interval is kept where no interval type exists: its three parts, as Arrow's
month_day_nano interval has them."""

_INTERVAL_LAYOUT = np.dtype([("months", "<i4"), ("days", "<i4"), ("nanoseconds", "<i8")])


def convert(column: Any, to_type: pa.DataType) -> Any:
    """column (an Array or ChunkedArray) as to_type, exactly; pyarrow's errors where the
    values do not fit (a safe cast)."""
    if column.type.equals(to_type):
        return column
    if isinstance(column, pa.ChunkedArray):
        chunks = [convert(chunk, to_type) for chunk in column.chunks]
        return pa.chunked_array(chunks, type=to_type)
    if isinstance(to_type, pa.BaseExtensionType):
        storage = convert(column, to_type.storage_type)
        return pa.ExtensionArray.from_storage(to_type, storage)
    if isinstance(column.type, pa.BaseExtensionType):
        return convert(column.storage, to_type)
    if pa.types.is_interval(column.type) and to_type.equals(INTERVAL_PARTS):
        return _interval_parts(column)
    if column.type.equals(INTERVAL_PARTS) and pa.types.is_interval(to_type):
        return _interval(column)
    if _narrowing(column.type, to_type):
        narrowed = _narrowed_decimal(column, to_type)
        if narrowed is not None:
            return narrowed
    return pc.cast(column, to_type, safe=True)


def _narrowing(from_type: pa.DataType, to_type: pa.DataType) -> bool:
    """Whether the conversion is a decimal128 served as the decimal64 of the same precision
    and scale (spark/stored_types.served_type): the same integers in half the bytes."""
    if not (pa.types.is_decimal128(from_type) and pa.types.is_decimal64(to_type)):
        return False
    return bool(from_type.precision == to_type.precision and from_type.scale == to_type.scale)


def _narrowed_decimal(column: pa.Array, to_type: pa.DataType) -> pa.Array | None:
    """column's 16-byte values as to_type's 8-byte ones (each value's low word) when every
    value is within the type's precision, else None: pc.cast then refuses the value that is
    not, or takes the leftover bytes of a null slot that failed the check. About twice as
    fast as pyarrow's cast, which goes value by value (docs/benchmarks.md). Only the slice's
    own values are read: a scan's batches may be slices of a larger one."""
    values, length, start = column.buffers()[1], len(column), column.offset
    if not length or values is None:
        return None
    words = np.frombuffer(values, dtype="<i8", count=2 * (start + length))[2 * start :]
    # the served copy, in Arrow's memory pool (it reuses its pages; numpy's would be fresh
    # ones for every batch), and checked where it is compact
    served = pa.allocate_buffer(8 * length)
    low = np.frombuffer(served, dtype="<i8")
    np.copyto(low, words[0::2])
    if not _within_precision(low, words[1::2], to_type.precision):
        return None
    validity = None
    if column.null_count:
        validity = column.buffers()[0] if start == 0 else column.is_valid().buffers()[1]
    return pa.Array.from_buffers(to_type, length, [validity, served], null_count=column.null_count)


def _within_precision(low: np.ndarray, high: np.ndarray, precision: int) -> bool:
    """Whether every 128-bit integer (its two words) has at most precision (≤ 18) digits:
    its low word within ±10**precision and its high word the low word's sign, extended.
    Reductions first, which make no temporary array: they decide it for values all of one
    sign (amounts, prices); mixed signs are compared word by word."""
    bound = 10**precision
    smallest, largest = int(low.min()), int(low.max())
    if smallest <= -bound or largest >= bound:
        return False
    top, bottom = int(high.max()), int(high.min())
    if top == bottom == 0:
        return smallest >= 0
    if top == bottom == -1:
        return largest < 0
    return top == 0 and bottom == -1 and bool(np.array_equal(high, low >> 63))


def digits_fit(column: pa.Array) -> bool:
    """Whether every value of a decimal64 column has at most its type's precision of digits:
    what another engine's cast to decimal64 (DataFusion's, spark/direct.py) leaves unchecked.
    Two reductions over the values, then, only if they find one too wide and the column has
    nulls, the same over the valid ones (a null slot's bytes are anything)."""
    length, start = len(column), column.offset
    if not length:
        return True
    values = np.frombuffer(column.buffers()[1], dtype="<i8", count=start + length)[start:]
    bound = 10**column.type.precision
    if int(values.min()) > -bound and int(values.max()) < bound:
        return True
    if not column.null_count:
        return False
    valid = values[column.is_valid().to_numpy(zero_copy_only=False)]
    return not len(valid) or (int(valid.min()) > -bound and int(valid.max()) < bound)


def _interval_parts(column: pa.Array) -> pa.Array:
    values = np.frombuffer(
        column.buffers()[1], dtype=_INTERVAL_LAYOUT, count=len(column) + column.offset
    )[column.offset :]
    mask = column.is_null()
    return pa.StructArray.from_arrays(
        [
            pa.array(values["months"], pa.int32()),
            pa.array(values["days"], pa.int32()),
            pa.array(values["nanoseconds"], pa.int64()),
        ],
        fields=list(INTERVAL_PARTS),
        mask=mask,
    )


def _interval(column: pa.StructArray) -> pa.Array:
    parts = np.zeros(len(column), dtype=_INTERVAL_LAYOUT)
    for name in ("months", "days", "nanoseconds"):
        parts[name] = column.field(name).fill_null(0).to_numpy(zero_copy_only=False)
    validity = None
    if column.null_count:
        validity = pc.is_valid(column).buffers()[1]
    return pa.Array.from_buffers(
        pa.month_day_nano_interval(), len(column), [validity, pa.py_buffer(parts.tobytes())]
    )
