"""Arrow schemas as the contract's payloads carry them (create_table's arrow_schema, the
column_schema of add_column and its kin): a whole IPC stream holding only the schema."""

from __future__ import annotations

import pyarrow as pa


def serialize_schema(schema: pa.Schema) -> bytes:
    """A complete IPC stream holding only schema (schema message + end-of-stream marker)."""
    sink = pa.BufferOutputStream()
    pa.ipc.new_stream(sink, schema).close()
    return bytes(sink.getvalue().to_pybytes())
