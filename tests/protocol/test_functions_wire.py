"""Function calls from pyarrow.flight (a client this project did not write), framed as DuckDB's
extension frames them (protocol §6), against the demo catalog's functions; and the Python API's
own refusals."""

from __future__ import annotations

from collections.abc import Iterator

import msgpack
import pyarrow as pa
import pyarrow.flight as flight
import pytest

from airport_contracts import flight_pb2
from airport_contracts.dispatch import FUNCTION_WIRE
from pyairport.catalog import CatalogSchema
from pyairport.demo import memory_demo_catalog
from pyairport.functions import Parameter, scalar_function, table_function

from .conftest import Running, serving


@pytest.fixture(scope="module")
def demo() -> Iterator[Running]:
    with serving(memory_demo_catalog()) as running:
        yield running


def _options(operation: str, path: str) -> flight.FlightCallOptions:
    headers = [(b"airport-operation", operation.encode()), (b"return-chunks", b"1")]
    return flight.FlightCallOptions(headers=[*headers, (b"airport-flight-path", path.encode())])


def _arguments(*columns: pa.Array) -> bytes:
    batch = pa.record_batch(list(columns), names=[f"param{i + 1}" for i in range(len(columns))])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


def test_a_scalar_call_answers_each_batch_in_turn(demo: Running) -> None:
    client = flight.FlightClient(demo.server.location)
    descriptor = flight.FlightDescriptor.for_path("demo_schema", "email_domain")
    writer, reader = client.do_exchange(
        descriptor, _options("scalar_function", "demo_schema/email_domain")
    )
    schema = pa.schema([("param1", pa.string())])
    writer.begin(schema)
    answers = []
    for emails in (["a@x.org", None], ["no at", "b@y@z.com", "c@w"]):
        writer.write_batch(pa.record_batch([pa.array(emails)], schema=schema))
        answers.append(reader.read_chunk().data.column(0).to_pylist())  # before the next batch
    writer.done_writing()
    assert reader.schema == pa.schema([(FUNCTION_WIRE.result_field, pa.string())])
    assert answers == [["x.org", None], [None, "z.com", "w"]]
    client.close()


def test_a_table_call_binds_then_scans(demo: Running) -> None:
    client = flight.FlightClient(demo.server.location)
    body = {
        "descriptor": flight_pb2.FlightDescriptor(
            type=flight_pb2.FlightDescriptor.PATH, path=["demo_schema", "series"]
        ).SerializeToString(),
        "parameters": _arguments(pa.array([1], pa.int64()), pa.array([70_000], pa.int64())),
        "table_input_schema": b"",
        "at_unit": "",
        "at_value": "",
    }
    (result,) = client.do_action(flight.Action("table_function_flight_info", msgpack.packb(body)))
    info = flight.FlightInfo.deserialize(result.body.to_pybytes())
    assert info.schema == pa.schema([("n", pa.int64())])
    assert info.descriptor.path == [b"demo_schema", b"series"]
    rows = client.do_get(info.endpoints[0].ticket).read_all()
    assert rows.num_rows == 70_000 and rows.column("n")[-1].as_py() == 70_000
    client.close()


def test_an_in_out_call_is_framed_per_input_batch(demo: Running) -> None:
    client = flight.FlightClient(demo.server.location)
    descriptor = flight.FlightDescriptor.for_path("demo_schema", "shouted")
    writer, reader = client.do_exchange(
        descriptor, _options("table_function_in_out", "demo_schema/shouted")
    )
    parameters = {
        "json_filters": "",
        "column_ids": [],
        "parameters": _arguments(),
        "at_unit": "",
        "at_value": "",
    }
    writer.write_metadata(pa.py_buffer(msgpack.packb(parameters)))
    schema = pa.schema([("name", pa.string()), ("id", pa.int64())])
    writer.begin(schema)
    assert reader.schema == schema
    for names in (["ann", "bo"], ["cy"]):
        writer.write_batch(
            pa.record_batch([pa.array(names), pa.array(range(len(names)))], schema=schema)
        )
        answer, marker = [], b""
        while marker != FUNCTION_WIRE.chunk_finished:
            chunk = reader.read_chunk()
            marker = chunk.app_metadata.to_pybytes()
            if marker == FUNCTION_WIRE.chunk_continues:
                answer += chunk.data.column("name").to_pylist()
        assert answer == [n.upper() for n in names]
    writer.done_writing()
    final = reader.read_chunk()  # nothing after the input: an empty final answer
    assert final.app_metadata.to_pybytes() == FUNCTION_WIRE.chunk_finished
    with pytest.raises(StopIteration):
        reader.read_chunk()
    client.close()


def test_the_python_api_refuses_what_cannot_be_served() -> None:
    with pytest.raises(ValueError, match="stability must be one of"):
        scalar_function(params=[pa.int64()], returns=pa.int64(), stability="sometimes")(abs)
    with pytest.raises(ValueError, match="needs at least one parameter"):
        scalar_function(params=[], returns=pa.int64())(abs)
    with pytest.raises(TypeError, match="pyarrow DataType or a Parameter"):
        table_function(params=[int], schema=pa.schema([]))(abs)
    schema = CatalogSchema("s")
    with pytest.raises(TypeError, match="is not a pyairport function"):
        schema.add_function(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kind must be one of"):
        schema.add_function(object(), kind="aggregate")  # type: ignore[arg-type]


def test_parameters_are_listed_as_duckdb_reads_them() -> None:
    @table_function(
        params=[Parameter(pa.string(), "city", named=True), Parameter(any_type=True)],
        schema=pa.schema([("x", pa.int64())]),
    )
    def where(city: str, anything: object) -> pa.Table:
        return pa.table({"x": [1]})

    listed = where.parameter_schema()
    assert listed.names == ["city", "param2"]
    assert listed.field(0).metadata == {FUNCTION_WIRE.named_parameter_metadata.encode(): b"1"}
    assert listed.field(1).metadata == {FUNCTION_WIRE.any_type_metadata.encode(): b"1"}


def test_a_table_call_gets_duckdbs_columns_filters_and_time_point() -> None:
    """endpoints with table_function_parameters (a msgpack str, as DuckDB sends it) gives a
    ticket whose DoGet hands the function the columns, filters and time point as ScanOptions."""
    seen = []

    @table_function(params=[pa.int64()], schema=pa.schema([("a", pa.int64()), ("b", pa.string())]))
    def pairs(count: int, options: object) -> pa.Table:
        seen.append(options)
        return pa.table({"a": pa.array(range(count), pa.int64()), "b": ["x"] * count})

    catalog = memory_demo_catalog()
    catalog.add_schema(CatalogSchema("fns")).add_function(pairs)
    with serving(catalog) as running:
        descriptor = flight_pb2.FlightDescriptor(
            type=flight_pb2.FlightDescriptor.PATH, path=["fns", "pairs"]
        ).SerializeToString()
        parameters = {
            "json_filters": '{"filters": []}',
            "column_ids": [1],
            "table_function_parameters": _arguments(pa.array([3], pa.int64())),
            "table_function_input_schema": b"",
            "at_unit": "VERSION",
            "at_value": "4",
        }
        body = msgpack.packb(
            {"descriptor": descriptor, "parameters": parameters}, use_bin_type=False
        )
        (answer,) = running.client.action("endpoints", body)
        (raw,) = msgpack.unpackb(answer, raw=True)
        endpoint = flight_pb2.FlightEndpoint.FromString(raw)
        client = flight.FlightClient(running.server.location)
        rows = client.do_get(flight.Ticket(endpoint.ticket.ticket)).read_all()
        client.close()
    assert rows.to_pydict() == {"a": [0, 1, 2], "b": ["x", "x", "x"]}  # full width, as Go
    (options,) = seen
    assert options.columns == ["b"] and options.filter == b'{"filters": []}'
    assert (options.time_point.unit, options.time_point.value) == ("version", "4")


def test_an_in_out_call_gets_duckdbs_columns_and_filters() -> None:
    """The message before the rows carries DuckDB's column ids and filters on the function's
    rows: they reach execute as ScanOptions hints."""
    seen = []

    class Echo:
        def name(self) -> str:
            return "echo"

        def comment(self) -> str:
            return ""

        def signature(self) -> object:
            from airport_contracts import FunctionSignature

            return FunctionSignature(parameters=[pa.string()])

        def schema_for_parameters(self, ctx: object, params: list, schema: pa.Schema) -> pa.Schema:
            return schema

        def execute(self, ctx: object, params: list, rows: pa.RecordBatchReader, opts: object):
            seen.append(opts)
            return rows

    catalog = memory_demo_catalog()
    catalog.add_schema(CatalogSchema("fns")).add_function(Echo(), kind="in_out")
    with serving(catalog) as running:
        client = flight.FlightClient(running.server.location)
        writer, reader = client.do_exchange(
            flight.FlightDescriptor.for_path("fns", "echo"),
            _options("table_function_in_out", "fns/echo"),
        )
        parameters = {
            "json_filters": '{"f": 1}',
            "column_ids": [1],
            "parameters": b"",
            "at_unit": "",
            "at_value": "",
        }
        writer.write_metadata(pa.py_buffer(msgpack.packb(parameters)))
        schema = pa.schema([("a", pa.int64()), ("b", pa.string())])
        writer.begin(schema)
        writer.write_batch(pa.record_batch([pa.array([1]), pa.array(["x"])], schema=schema))
        writer.done_writing()
        chunks = [reader.read_chunk() for _ in range(3)]  # the rows, their end, the final end
        client.close()
    assert chunks[0].data.to_pydict() == {"a": [1], "b": ["x"]}
    (options,) = seen
    assert options.columns == ["b"] and options.filter == b'{"f": 1}'
