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
    loose = relaxed(to_type)
    if not loose.equals(to_type):
        # Arrow's cast refuses a non-nullable nested field with a null even under a null
        # parent (a NULL struct from DuckDB has null children) and lets a list's null
        # elements through: so cast to the relaxed type, then take on the table's nullability;
        # misplaced_null is the check that a field's NOT NULL holds.
        return _renulled(pc.cast(column, loose, safe=True), to_type)
    return pc.cast(column, to_type, safe=True)


def relaxed(data_type: pa.DataType) -> pa.DataType:
    """data_type with every nested field nullable: what a client sends (DuckDB's children
    are always nullable) for a column whose struct fields, list elements or map values the
    table declares NOT NULL."""
    if pa.types.is_struct(data_type):
        return pa.struct([_loose(f) for f in data_type])
    if pa.types.is_map(data_type):
        return pa.map_(data_type.key_field, _loose(data_type.item_field))
    if pa.types.is_list(data_type):
        return pa.list_(_loose(data_type.value_field))
    if pa.types.is_large_list(data_type):
        return pa.large_list(_loose(data_type.value_field))
    if pa.types.is_fixed_size_list(data_type):
        return pa.list_(_loose(data_type.value_field), data_type.list_size)
    return data_type


def _loose(field: pa.Field) -> pa.Field:
    return field.with_type(relaxed(field.type)).with_nullable(True)


def _renulled(column: Any, to_type: pa.DataType) -> Any:
    """column (of relaxed(to_type)) as to_type: the same buffers, the table's nullability."""
    if isinstance(column, pa.ChunkedArray):
        return pa.chunked_array([_renulled(c, to_type) for c in column.chunks], type=to_type)
    if pa.types.is_struct(to_type):
        mask = column.is_null() if column.null_count else None
        children = []
        for i, field in enumerate(to_type):
            child = _renulled(column.field(i), field.type)
            if mask is not None and not field.nullable and child.null_count:
                # a null parent's child holds a value all the same: Parquet's writers refuse
                # a null in a NOT NULL field even where its parent is null
                child = pc.if_else(mask, _placeholder(field.type), child)
            children.append(child)
        return pa.StructArray.from_arrays(children, fields=list(to_type), mask=mask)
    if pa.types.is_map(to_type) or pa.types.is_list(to_type) or pa.types.is_large_list(to_type):
        if pa.types.is_map(to_type):  # one child: the struct of its entries
            keys = _renulled(column.keys, to_type.key_type)
            items = _renulled(column.items, to_type.item_type)
            fields = [to_type.key_field, to_type.item_field]
            children = [pa.StructArray.from_arrays([keys, items], fields=fields)]
        else:
            children = [_renulled(column.values, to_type.value_type)]
        offsets = column.buffers()[1]
        return pa.Array.from_buffers(
            to_type,
            len(column),
            [column.buffers()[0], offsets],
            null_count=column.null_count,
            offset=column.offset,
            children=children,
        )
    if pa.types.is_fixed_size_list(to_type):
        values = _renulled(column.values, to_type.value_type)
        return pa.Array.from_buffers(
            to_type,
            len(column),
            [column.buffers()[0]],
            null_count=column.null_count,
            offset=column.offset,
            children=[values],
        )
    return column


def _placeholder(data_type: pa.DataType) -> pa.Scalar:
    """A value of data_type that stands under a null parent: zero, empty, false."""
    types = pa.types
    if types.is_struct(data_type):
        return pa.scalar({f.name: _placeholder(f.type).as_py() for f in data_type}, data_type)
    if types.is_map(data_type) or types.is_list(data_type) or types.is_large_list(data_type):
        return pa.scalar([], data_type)
    if types.is_fixed_size_list(data_type):
        return pa.scalar(
            [_placeholder(data_type.value_type).as_py()] * data_type.list_size, data_type
        )
    if types.is_fixed_size_binary(data_type):
        return pa.scalar(bytes(data_type.byte_width), data_type)
    if types.is_binary(data_type) or types.is_large_binary(data_type):
        return pa.scalar(b"", data_type)
    if types.is_string(data_type) or types.is_large_string(data_type):
        return pa.scalar("", data_type)
    if types.is_boolean(data_type):
        return pa.scalar(False, data_type)
    # numbers, dates, times, durations: the value whose bytes are all zero
    zeros = pa.py_buffer(bytes(data_type.bit_width // 8))
    return pa.Array.from_buffers(data_type, 1, [None, zeros])[0]


def misplaced_null(column: pa.Array, data_type: pa.DataType, path: str) -> str | None:
    """The name (path.field, path[] for an element, path{} for a map's value) of the first
    NOT NULL nested field of data_type that holds a null under a parent holding a value; None
    when there is none. A null parent's children are anything: never counted."""
    if pa.types.is_struct(data_type):
        children = column.flatten()  # each child with its parent's nulls merged in
        for field, child in zip(data_type, children, strict=True):
            where = f"{path}.{field.name}"
            if not field.nullable and child.null_count > column.null_count:
                return where
            found = misplaced_null(child, field.type, where)
            if found:
                return found
        return None
    if pa.types.is_map(data_type):
        present = _present_entries(column)
        items = column.items.take(present)
        where = f"{path}{{}}"
        if not data_type.item_field.nullable and items.null_count:
            return where
        return misplaced_null(items, data_type.item_type, where)
    if not _is_list(data_type):
        return None
    values = column.flatten()  # the elements of the lists present
    where = f"{path}[]"
    if not data_type.value_field.nullable and values.null_count:
        return where
    return misplaced_null(values, data_type.value_type, where)


def _is_list(data_type: pa.DataType) -> bool:
    types = pa.types
    return bool(
        types.is_list(data_type)
        or types.is_large_list(data_type)
        or types.is_fixed_size_list(data_type)
    )


def _present_entries(column: pa.Array) -> pa.Array:
    """The positions in a map's entries of the maps that are not null."""
    offsets = np.frombuffer(column.buffers()[1], dtype="<i4")[
        column.offset : column.offset + len(column) + 1
    ]
    starts, ends = offsets[:-1], offsets[1:]
    if column.null_count:
        valid = column.is_valid().to_numpy(zero_copy_only=False)
        starts, ends = starts[valid], ends[valid]
    lengths = (ends - starts).astype(np.int64)
    # each entry's position: its place among the kept entries, moved to its map's start
    shift = np.repeat(starts.astype(np.int64) - (np.cumsum(lengths) - lengths), lengths)
    return pa.array(np.arange(int(lengths.sum()), dtype=np.int64) + shift, pa.int64())


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
