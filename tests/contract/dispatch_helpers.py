"""Drive the generated dispatchers the way a transport does, without a network."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from airport_contracts import Context
from pyairport.dispatch import (
    Dispatcher,
    ExchangeRequest,
    OutputBatch,
    OutputFinal,
    OutputSchema,
    StaticInput,
)

from .tables import Catalog


def dispatcher_for(table: Any, schema: str = "s", transactions: Any = None) -> Dispatcher:
    return Dispatcher(Catalog({schema: {table.name(): table}}), transactions)


def exchange(
    dispatcher: Dispatcher,
    operation: str,
    batches: list[pa.RecordBatch] | None,
    *,
    schema: pa.Schema | None = None,
    table: str = "users",
    returning: bool = False,
    ctx: Context | None = None,
    transaction_id: str = "",
) -> tuple[pa.Schema | None, list[pa.RecordBatch], int]:
    """Run one DoExchange and return (output schema, RETURNING batches, total_changed)."""
    if schema is None and batches:
        schema = batches[0].schema
    request = ExchangeRequest(operation, "s", table, returning, transaction_id)
    events = list(
        dispatcher.exchange(
            ctx or Context.background(), request, StaticInput(schema, batches or [])
        )
    )
    out_schema = next((e.schema for e in events if isinstance(e, OutputSchema)), None)
    out_batches = [e.batch for e in events if isinstance(e, OutputBatch)]
    final = events[-1]
    assert isinstance(final, OutputFinal)
    return out_schema, out_batches, final.total_changed


def batch(
    columns: dict[str, list[Any]], types: dict[str, pa.DataType] | None = None
) -> pa.RecordBatch:
    types = types or {}
    fields = [
        pa.field(k, types.get(k, pa.int64() if k in ("rowid", "id") else pa.string()))
        for k in columns
    ]
    return pa.RecordBatch.from_arrays(
        [pa.array(v, type=f.type) for v, f in zip(columns.values(), fields, strict=True)],
        schema=pa.schema(fields),
    )
