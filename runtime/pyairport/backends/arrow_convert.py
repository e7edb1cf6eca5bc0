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
    return pc.cast(column, to_type, safe=True)


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
