"""Classes that implement exactly the capability interfaces a table is given.

Capability detection is by method set (`airport_contracts.implements`), so a read-only table
must not even have an `insert` method. A backend writes its storage class (a BackendTable)
with `insert_rows`, `update_rows` and `delete_rows`; `with_capabilities` adds one public
method per interface on top,
under the name the contract gives it (the adapters below say what each interface does with
its arguments, not what it is called).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from airport_contracts import Context, DMLOptions, DMLResult
from airport_contracts.protocols import CAPABILITIES, INTERFACE_METHODS

from .shaping import batch_chunks, in_sent_types, legacy_chunks, rowids_of

ALL_CAPABILITIES: tuple[str, ...] = tuple(CAPABILITIES)
"""Every capability interface of the contract, by name."""


def _insert(
    self: Any, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
) -> DMLResult:
    result: DMLResult = self.insert_rows(ctx, rows, opts)
    return result


def _update_batch(
    self: Any, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
) -> DMLResult:
    result: DMLResult = self.update_rows(ctx, batch_chunks(rows, "update"), opts)
    return in_sent_types(result, rows.schema)


def _update_by_row_ids(
    self: Any,
    ctx: Context,
    row_ids: pa.Int64Array,
    rows: pa.RecordBatchReader,
    opts: DMLOptions | None,
) -> DMLResult:
    result: DMLResult = self.update_rows(ctx, legacy_chunks(row_ids, rows), opts)
    return in_sent_types(result, rows.schema)


def _delete_batch(
    self: Any, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
) -> DMLResult:
    ids: Iterator[np.ndarray] = (ids for ids, _ in batch_chunks(rows, "delete"))
    result: DMLResult = self.delete_rows(ctx, ids, opts)
    return result


def _delete_by_row_ids(
    self: Any, ctx: Context, row_ids: pa.Int64Array, opts: DMLOptions | None
) -> DMLResult:
    ids: Iterable[np.ndarray] = [rowids_of(row_ids)]
    result: DMLResult = self.delete_rows(ctx, ids, opts)
    return result


_ADAPTERS: dict[str, Callable[..., DMLResult]] = {
    "InsertableTable": _insert,
    "UpdatableBatchTable": _update_batch,
    "UpdatableTable": _update_by_row_ids,
    "DeletableBatchTable": _delete_batch,
    "DeletableTable": _delete_by_row_ids,
}
if set(_ADAPTERS) != set(CAPABILITIES):  # the contract gained or lost an interface
    raise ImportError(f"no adapter for {sorted(set(CAPABILITIES) ^ set(_ADAPTERS))}")

# One mixin per interface: its DML method (the last of the interface's method set, after
# the Table methods it extends) under the contract's name.
_MIXINS: dict[str, type] = {
    name: type(f"_{name}", (), {INTERFACE_METHODS[name][-1]: adapter})
    for name, adapter in _ADAPTERS.items()
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
