"""Every error row of the function calls (protocol §6), triggered on the wire as DuckDB's
extension makes its calls: gRPC code and exact message."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc
import msgpack
import pyarrow as pa
import pyarrow.flight as flight
import pytest

from airport_contracts import Context, flight_pb2
from airport_contracts.contract import ERROR_TABLE
from pyairport.backends.memory.catalog import MemoryCatalog, MemorySchema
from pyairport.client import RemoteError
from pyairport.functions import (
    scalar_function,
    table_function,
    table_function_in_out,
)
from pyairport.wire.ipc import batch_message, schema_message

from .conftest import Running, assert_error_row, serving

FUNCTION_ROWS = {r.id for r in ERROR_TABLE if any(s.startswith("protocol §6") for s in r.sources)}
"""The rows of the function calls (their sources are protocol §6)."""

TEXT = pa.schema([("result", pa.string())])


@scalar_function(params=[pa.string()], returns=pa.string())
def upper(text: pa.Array) -> pa.Array:
    return pa.compute.utf8_upper(text)


@scalar_function(params=[pa.int64()], returns=pa.int64())
def boom(values: pa.Array) -> pa.Array:
    raise ValueError("the model is not loaded")


@scalar_function(params=[pa.int64()], returns=pa.int64())
def short(values: pa.Array) -> pa.Array:
    return values.slice(1)


@scalar_function(params=[pa.int64()], returns=pa.string())
def wrong_type(values: pa.Array) -> pa.Array:
    return values


@table_function(params=[pa.int64()], schema=TEXT)
def rows(count: int) -> Iterator[pa.RecordBatch]:
    yield pa.record_batch([pa.array(["x"] * count)], schema=TEXT)


def _no_schema(count: int) -> pa.Schema:
    raise ValueError("count must be positive")


@table_function(params=[pa.int64()], schema=_no_schema)
def unschemaed(count: int) -> Iterator[pa.RecordBatch]:
    yield from ()


@table_function(params=[pa.int64()], schema=TEXT)
def failing(count: int) -> Iterator[pa.RecordBatch]:
    raise RuntimeError("the source is offline")


class _Mismatched:
    """A TableFunction (the contract's interface, implemented by hand) whose rows are not
    of the schema it declares."""

    def name(self) -> str:
        return "mismatched"

    def comment(self) -> str:
        return ""

    def signature(self) -> Any:
        return rows.signature()

    def schema_for_parameters(self, ctx: Context, params: list[Any]) -> pa.Schema:
        return TEXT

    def execute(self, ctx: Context, params: list[Any], opts: Any = None) -> pa.RecordBatchReader:
        table = pa.table({"a": [1], "b": [2]})
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())


@table_function_in_out(params=[], schema=lambda rows_schema: rows_schema)
def echo(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield from batches


def _unknown(rows_schema: pa.Schema) -> pa.Schema:
    raise ValueError("cannot type these rows")


@table_function_in_out(params=[], schema=_unknown)
def untyped(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield from batches


@table_function_in_out(params=[], schema=lambda rows_schema: rows_schema)
def crashing(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for _ in batches:
        raise KeyError("customer")
    yield from ()


class _Unlisting(MemorySchema):
    """A schema whose function listings fail (the *_failed rows)."""

    def __init__(self, name: str, failing: set[str]) -> None:
        super().__init__(name)
        self.failing = failing

    def scalar_functions(self, ctx: Context) -> list[Any]:
        return self._listing("scalar", super().scalar_functions(ctx))

    def table_functions(self, ctx: Context) -> list[Any]:
        return self._listing("table", super().table_functions(ctx))

    def table_functions_in_out(self, ctx: Context) -> list[Any]:
        return self._listing("in_out", super().table_functions_in_out(ctx))

    def _listing(self, kind: str, listed: list[Any]) -> list[Any]:
        if kind in self.failing:
            raise OSError(f"the {kind} registry is down")
        return listed


class _Unreachable(MemoryCatalog):
    def schema(self, ctx: Context, name: str) -> Any:
        if name == "down":
            raise OSError("metastore unreachable")
        return super().schema(ctx, name)


def _catalog() -> MemoryCatalog:
    catalog = _Unreachable()
    fns = catalog.add_schema(MemorySchema("fns"))
    for function in (upper, boom, short, wrong_type, rows, unschemaed, failing, echo):
        fns.add_function(function)
    fns.add_function(untyped)
    fns.add_function(crashing)
    fns.add_function(_Mismatched(), kind="table")
    catalog.add_schema(_Unlisting("broken", {"scalar", "table", "in_out"}))
    catalog.add_schema(_Unlisting("half", {"in_out"}))
    return catalog


@pytest.fixture(scope="module")
def fsrv() -> Iterator[Running]:
    with serving(_catalog()) as running:
        yield running


# --- calls as DuckDB's extension makes them -------------------------------------------------


def _exchange(
    srv: Running,
    operation: str,
    path: str,
    messages: list[flight_pb2.FlightData],
    chunks: bool = True,
) -> RemoteError:
    headers = [("airport-operation", operation), ("airport-flight-path", path)]
    if chunks:
        headers.append(("return-chunks", "1"))
    try:
        list(srv.client.stub.DoExchange(iter(messages), metadata=headers))
    except grpc.RpcError as error:
        return RemoteError(error.code(), error.details())  # type: ignore[attr-defined]
    raise AssertionError("the call succeeded")


def _arguments(*columns: pa.Array, names: list[str] | None = None) -> bytes:
    """A call's arguments as DuckDB serializes them: an IPC stream of one row."""
    batch = pa.record_batch(
        list(columns), names=names or [f"param{i + 1}" for i in range(len(columns))]
    )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


def _scalar(srv: Running, path: str, batch: pa.RecordBatch, chunks: bool = True) -> RemoteError:
    messages = [schema_message(batch.schema), batch_message(batch)]
    return _exchange(srv, "scalar_function", path, messages, chunks)


def _in_out(
    srv: Running,
    path: str,
    parameters: bytes = b"",
    chunks: bool = True,
    batch: pa.RecordBatch | None = None,
) -> RemoteError:
    """An in-out call: the descriptor with the arguments' message, the rows' schema, a batch."""
    app_metadata = msgpack.packb(
        {
            "json_filters": "",
            "column_ids": [],
            "parameters": parameters,
            "at_unit": "",
            "at_value": "",
        }
    )
    batch = pa.record_batch([pa.array(["a"])], names=["v"]) if batch is None else batch
    messages = [
        flight_pb2.FlightData(
            flight_descriptor=flight_pb2.FlightDescriptor(
                type=flight_pb2.FlightDescriptor.PATH, path=path.split("/")
            ),
            app_metadata=app_metadata,
        ),
        schema_message(batch.schema),
        batch_message(batch),
    ]
    return _exchange(srv, "table_function_in_out", path, messages, chunks)


def _descriptor(*path: str) -> bytes:
    return flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=list(path)
    ).SerializeToString()


def _flight_info(
    srv: Running, *path: str, parameters: bytes | None = None, **extra: Any
) -> RemoteError:
    body = {
        "descriptor": _descriptor(*path),
        "parameters": _arguments(pa.array([2], pa.int64())) if parameters is None else parameters,
        "table_input_schema": b"",
        "at_unit": "",
        "at_value": "",
    } | extra
    return _remote(lambda: srv.client.action("table_function_flight_info", msgpack.packb(body)))


def _get(srv: Running, ticket: dict[str, Any]) -> RemoteError:
    import base64
    import json

    if "function_params" in ticket:
        ticket["function_params"] = base64.b64encode(ticket["function_params"]).decode()
    raw = json.dumps(ticket).encode()

    def call() -> None:
        try:
            list(srv.client.stub.DoGet(flight_pb2.Ticket(ticket=raw)))
        except grpc.RpcError as error:
            raise RemoteError(error.code(), error.details()) from None  # type: ignore[attr-defined]

    return _remote(call)


def _remote(call: Callable[[], object]) -> RemoteError:
    with pytest.raises(RemoteError) as err:
        call()
    return err.value


INT = pa.record_batch([pa.array([1, 2], pa.int64())], names=["param1"])
NOT_UTF8 = pa.Array.from_buffers(
    pa.string(),
    1,
    [None, pa.py_buffer(pa.array([0, 2], pa.int32()).buffers()[1]), pa.py_buffer(b"\xc3\x28")],
)
"""A string whose bytes are not UTF-8: Arrow's cheap validation (pyarrow's here) passes it."""
TWO = _arguments(pa.array([2], pa.int64()))

TRIGGERS: dict[str, tuple[Callable[[Running], RemoteError], dict[str, Any]]] = {
    "scalar_function_no_return_chunks": (lambda s: _scalar(s, "fns/upper", INT, chunks=False), {}),
    "table_function_no_return_chunks": (lambda s: _in_out(s, "fns/echo", chunks=False), {}),
    "function_schema_not_found": (
        lambda s: _scalar(s, "nowhere/upper", INT),
        {"schema": "nowhere"},
    ),
    "function_schema_lookup_failed": (
        lambda s: _scalar(s, "down/upper", INT),
        {"error": "metastore unreachable"},
    ),
    "scalar_functions_failed": (
        lambda s: _scalar(s, "broken/upper", INT),
        {"error": "the scalar registry is down"},
    ),
    "table_functions_failed": (
        lambda s: _flight_info(s, "broken", "rows"),
        {"error": "the table registry is down"},
    ),
    "table_functions_in_out_failed": (
        lambda s: _flight_info(s, "half", "rows"),
        {"error": "the in_out registry is down"},
    ),
    "scalar_function_not_found": (
        lambda s: _scalar(s, "fns/rows", INT),
        {"schema": "fns", "function": "rows"},
    ),
    "table_function_not_found": (
        lambda s: _flight_info(s, "fns", "upper"),
        {"schema": "fns", "function": "upper"},
    ),
    "scalar_function_failed": (
        lambda s: _scalar(s, "fns/boom", INT),
        {"schema": "fns", "function": "boom", "error": "the model is not loaded"},
    ),
    "scalar_result_length": (
        lambda s: _scalar(s, "fns/short", INT),
        {
            "schema": "fns",
            "function": "short",
            "error": "output rows must match input rows, expected 2 got 1",
        },
    ),
    "scalar_result_type": (
        lambda s: _scalar(s, "fns/wrong_type", INT),
        {
            "schema": "fns",
            "function": "wrong_type",
            "error": "output array type mismatch: expected string, got int64",
        },
    ),
    "function_input_invalid": (
        lambda s: _scalar(s, "fns/upper", pa.record_batch([NOT_UTF8], names=["param1"])),
        {
            "schema": "fns",
            "function": "upper",
            "details": "column 'param1' (string) holds a string that is not UTF-8",
        },
    ),
    "function_argument_types": (
        lambda s: _scalar(s, "fns/upper", INT),
        {"schema": "fns", "function": "upper", "expected": "string", "got": "int64"},
    ),
    "table_function_failed": (
        lambda s: _in_out(s, "fns/crashing"),
        {"schema": "fns", "function": "crashing", "error": "'customer'"},
    ),
    "function_output_schema_failed": (
        lambda s: _in_out(s, "fns/untyped"),
        {"error": "cannot type these rows"},
    ),
    "table_function_path_invalid": (
        lambda s: _flight_info(s, "fns"),
        {"path": "[fns]"},
    ),
    "function_parameters_invalid": (
        lambda s: _flight_info(s, "fns", "rows", parameters=b"not arrow"),
        {"error": None},
    ),
    "table_input_schema_invalid": (
        lambda s: _flight_info(s, "fns", "echo", parameters=b"", table_input_schema=b"\x00\x01"),
        {"error": None},
    ),
    "function_schema_failed": (
        lambda s: _flight_info(s, "fns", "unschemaed"),
        {"error": "count must be positive"},
    ),
    "table_function_execution_failed": (
        lambda s: _get(s, {"schema": "fns", "table_function": "failing", "function_params": TWO}),
        {"error": "the source is offline"},
    ),
    "function_schema_mismatch": (
        lambda s: _get(
            s, {"schema": "fns", "table_function": "mismatched", "function_params": TWO}
        ),
        {"declared": 1, "reader_fields": 2},
    ),
}

# Rows whose text reaches the client inside another row's: checked as that row with this one
# as its error.
INSIDE = {
    "scalar_result_length": "scalar_function_failed",
    "scalar_result_type": "scalar_function_failed",
}


def test_every_function_row_is_triggered() -> None:
    assert set(TRIGGERS) == FUNCTION_ROWS


@pytest.mark.parametrize("row_id", sorted(TRIGGERS))
def test_function_error_on_the_wire(fsrv: Running, row_id: str) -> None:
    trigger, params = TRIGGERS[row_id]
    error = trigger(fsrv)
    assert_error_row(INSIDE.get(row_id, row_id), params, error.code, error.message)


def test_a_failed_call_leaves_the_server_serving(fsrv: Running) -> None:
    """After every kind of failure, the same functions answer the next call."""
    _scalar(fsrv, "fns/boom", INT)
    _in_out(fsrv, "fns/crashing")
    body = {
        "descriptor": _descriptor("fns", "rows"),
        "parameters": TWO,
        "table_input_schema": b"",
        "at_unit": "",
        "at_value": "",
    }
    (raw,) = fsrv.client.action("table_function_flight_info", msgpack.packb(body))
    info = flight_pb2.FlightInfo.FromString(raw)
    client = flight.FlightClient(fsrv.server.location)
    read = client.do_get(flight.Ticket(info.endpoint[0].ticket.ticket)).read_all()
    client.close()
    assert read.column("result").to_pylist() == ["x", "x"]


def test_data_that_is_not_valid_arrow_reaches_no_function(fsrv: Running) -> None:
    """An in-out function's rows and a table function's arguments are checked as a scalar
    function's input is (function_input_invalid above)."""
    rows = pa.record_batch([NOT_UTF8], names=["v"])
    error = _in_out(fsrv, "fns/echo", batch=rows)
    details = "column 'v' (string) holds a string that is not UTF-8"
    params = {"schema": "fns", "function": "echo", "details": details}
    assert_error_row("function_input_invalid", params, error.code, error.message)
    arguments = _arguments(pa.array([2], pa.int64()), NOT_UTF8)
    for refused in (
        _flight_info(fsrv, "fns", "rows", parameters=arguments),
        _get(fsrv, {"schema": "fns", "table_function": "rows", "function_params": arguments}),
    ):
        details = "column 'param2' (string) holds a string that is not UTF-8"
        assert_error_row(
            "function_parameters_invalid", {"error": details}, refused.code, refused.message
        )
