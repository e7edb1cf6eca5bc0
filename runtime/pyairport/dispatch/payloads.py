"""A table's RETURNING rows as the bytes spec 002's answers carry."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from airport_contracts import DMLResult


def ipc_stream_bytes(schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> bytes:
    """An Arrow IPC stream (schema, batches, end marker) as bytes."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


def returning_data_bytes(result: DMLResult | None) -> bytes | None:
    """A table's RETURNING reader as Arrow IPC stream bytes (DMLResponse.returning_data)."""
    if result is None or result.returning_data is None:
        return None
    return ipc_stream_bytes(result.returning_data.schema, result.returning_data)
