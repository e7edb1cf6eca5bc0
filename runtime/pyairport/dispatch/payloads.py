"""A table's RETURNING rows as the bytes spec 002's answers carry."""

from __future__ import annotations

import pyarrow as pa

from airport_contracts import DMLResult


def returning_data_bytes(result: DMLResult | None) -> bytes | None:
    """A table's RETURNING reader as Arrow IPC stream bytes (DMLResponse.returning_data)."""
    if result is None or result.returning_data is None:
        return None
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, result.returning_data.schema) as writer:
        for batch in result.returning_data:
            writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())
