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
    if _narrowing_decimal(column.type, to_type):
        narrowed = _narrow_decimal(column, to_type)
        if narrowed is not None:
            return narrowed
    return pc.cast(column, to_type, safe=True)


def _narrowing_decimal(from_type: pa.DataType, to_type: pa.DataType) -> bool:
    return bool(
        pa.types.is_decimal128(from_type)
        and pa.types.is_decimal64(to_type)
        and (from_type.precision, from_type.scale) == (to_type.precision, to_type.scale)
    )


def _narrow_decimal(column: pa.Array, to_type: pa.DataType) -> pa.Array | None:
    """A decimal128 column as the decimal64 of its precision and scale, by keeping each
    value's low 64 bits where its high 64 only extend their sign (every value fits): a third
    of pyarrow's cast's time, on every scan of a Delta DECIMAL (spark/stored_types.py). None
    where a slot does not fit (a null's may hold anything): the cast decides."""
    slots = len(column) + column.offset
    words = np.frombuffer(column.buffers()[1], dtype=np.int64, count=2 * slots).reshape(-1, 2)
    low = np.ascontiguousarray(words[:, 0])
    if not np.array_equal(words[:, 1], low >> 63):
        return None
    validity = column.buffers()[0]
    return pa.Array.from_buffers(
        to_type, len(column), [validity, pa.py_buffer(low)], column.null_count, column.offset
    )


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
