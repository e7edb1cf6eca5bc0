"""Classes that implement exactly the capability interfaces a table is given.

Capability detection is by method presence (typing.Protocol), so a read-only table must not
even have an `insert` method. A backend writes its storage class with `_insert`, `_update`
and `_delete`; `with_capabilities` adds one public method per interface on top.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from airport_contracts import Context, DMLOptions, DMLResult

from .shaping import batch_chunks, legacy_chunks, rowids_of

ALL_CAPABILITIES = (
    "InsertableTable",
    "UpdatableBatchTable",
    "UpdatableTable",
    "DeletableBatchTable",
    "DeletableTable",
)


class _Insertable:
    def insert(
        self: Any, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        result: DMLResult = self._insert(ctx, rows, opts)
        return result


class _BatchUpdatable:
    def update_batch(
        self: Any, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        result: DMLResult = self._update(ctx, batch_chunks(rows, "UPDATE"), opts)
        return result


class _LegacyUpdatable:
    def update_by_row_ids(
        self: Any,
        ctx: Context,
        row_ids: pa.Int64Array,
        rows: pa.RecordBatchReader,
        opts: DMLOptions | None,
    ) -> DMLResult:
        result: DMLResult = self._update(ctx, legacy_chunks(row_ids, rows), opts)
        return result


class _BatchDeletable:
    def delete_batch(
        self: Any, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        ids: Iterator[np.ndarray] = (ids for ids, _ in batch_chunks(rows, "DELETE"))
        result: DMLResult = self._delete(ctx, ids, opts)
        return result


class _LegacyDeletable:
    def delete_by_row_ids(
        self: Any, ctx: Context, row_ids: pa.Int64Array, opts: DMLOptions | None
    ) -> DMLResult:
        ids: Iterable[np.ndarray] = [rowids_of(row_ids)]
        result: DMLResult = self._delete(ctx, ids, opts)
        return result


_MIXINS: dict[str, type] = {
    "InsertableTable": _Insertable,
    "UpdatableBatchTable": _BatchUpdatable,
    "UpdatableTable": _LegacyUpdatable,
    "DeletableBatchTable": _BatchDeletable,
    "DeletableTable": _LegacyDeletable,
}
_CLASSES: dict[tuple[type, tuple[str, ...]], type] = {}


def with_capabilities(base: type, capabilities: Sequence[str]) -> type:
    """base plus exactly the capability interfaces named (cached per combination)."""
    unknown = set(capabilities) - set(ALL_CAPABILITIES)
    if unknown:
        raise ValueError(f"unknown capabilities: {sorted(unknown)}")
    key = tuple(c for c in ALL_CAPABILITIES if c in capabilities)
    cls = _CLASSES.get((base, key))
    if cls is None:
        suffix = "_".join(key) if key else "ReadOnly"
        cls = type(f"{base.__name__}_{suffix}", tuple(_MIXINS[c] for c in key) + (base,), {})
        _CLASSES[(base, key)] = cls
    return cls
