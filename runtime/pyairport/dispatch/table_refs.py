"""A TableRef's function calls as the endpoint locations DuckDB runs them from: a data: URI
(FUNCTION_WIRE.call_uri_prefix) of base64 msgpack FunctionCallData, whose data is an Arrow IPC
stream of one row holding the arguments (protocol §2.7; airport-go's EncodeFunctionCallURI)."""

from __future__ import annotations

import base64

import pyarrow as pa

from airport_contracts import FunctionCall, FunctionCallData
from airport_contracts.dispatch import FUNCTION_WIRE

from .payloads import ipc_stream_bytes


def function_call_uri(call: FunctionCall) -> str:
    """The data: URI of one call. ValueError for a call DuckDB could not run: no function
    name, or an argument whose value is not of its type."""
    if not call.function_name:
        raise ValueError("a function call needs a function name")
    names, values = [], []
    positional = 0
    for index, arg in enumerate(call.args):
        name = arg.name
        if not name:
            name = FUNCTION_WIRE.call_argument_name.format(index=positional)
            positional += 1
        try:
            values.append(pa.array([arg.value], arg.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as exc:
            raise ValueError(f"argument {index} of {call.function_name}: {exc}") from None
        names.append(name)
    row = pa.RecordBatch.from_arrays(values, names=names)
    data = FunctionCallData(
        function_name=call.function_name, data=ipc_stream_bytes(row.schema, [row])
    )
    return FUNCTION_WIRE.call_uri_prefix + base64.b64encode(data.encode()).decode()
