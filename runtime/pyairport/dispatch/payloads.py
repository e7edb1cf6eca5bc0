"""Payloads as bytes: each generated payload class has either JSON or msgpack codecs."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from airport_contracts import DMLResult


def decode(payload: Any, body: bytes) -> Any:
    """body as an instance of payload, in the payload's own encoding."""
    if hasattr(payload, "from_json"):
        return payload.from_json(body)
    return payload.from_msgpack(body)


def encode(value: Any) -> bytes:
    encoded: bytes = value.to_json() if hasattr(value, "to_json") else value.to_msgpack()
    return encoded


def returning_data_bytes(result: DMLResult | None) -> bytes | None:
    """A table's RETURNING reader as Arrow IPC stream bytes (DMLResponse.returning_data)."""
    if result is None or result.returning_data is None:
        return None
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, result.returning_data.schema) as writer:
        for batch in result.returning_data:
            writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())
