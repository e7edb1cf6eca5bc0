"""The read side DuckDB needs (protocol §2.5-2.8), replayed without DuckDB: the calls its
Airport extension makes for ATTACH, SELECT, UPDATE ... WHERE and DELETE ... WHERE, decoded
the way the client decodes them, on every backend; and every read-side error row."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from typing import Any

import grpc
import msgpack
import pyarrow as pa
import pyarrow.flight as flight
import pytest
import zstandard

from airport_contracts import (
    Context,
    ScanOptions,
    SchemaRequest,
    TimePointInvalid,
    flight_pb2,
    rowid_field,
)
from airport_contracts.contract import ERROR_TABLE
from pyairport.backends.memory import memory_table
from pyairport.catalog import CatalogSchema, MutableCatalog
from pyairport.client import RemoteError
from pyairport.demo import USERS_COLUMNS

from ..filter_json import (
    Node,
    column,
    comparison,
    conjunction,
    constant,
    document,
    function,
    operator,
)
from .conftest import (
    HUGE_BYTES,
    Running,
    assert_error_row,
    compressed,
    huge_name,
    serving,
    users,
)

ROWID_ID = 2**64 - 1


def _unpack_compressed(body: bytes) -> Any:
    length, data = msgpack.unpackb(body, raw=True)
    return msgpack.unpackb(
        zstandard.ZstdDecompressor().decompress(data, max_output_size=length), raw=True
    )


def _attach(client: Any) -> dict[tuple[str, str], flight_pb2.FlightInfo]:
    """ATTACH '' AS lake (TYPE airport, ...): list_schemas, decoded as DuckDB does."""
    (body,) = client.action("list_schemas", msgpack.packb({"catalog_name": ""}))
    root = _unpack_compressed(body)
    assert root[b"contents"][b"sha256"] == b"0" * 64
    tables = {}
    for schema in root[b"schemas"]:
        import hashlib

        contents = schema[b"contents"]
        assert hashlib.sha256(contents[b"serialized"]).hexdigest().encode() == contents[b"sha256"]
        for raw in _unpack_compressed(contents[b"serialized"]):
            info = flight_pb2.FlightInfo()
            info.ParseFromString(raw)
            tables[tuple(info.flight_descriptor.path)] = info
    return tables


def _scan(
    srv: Running, schema: str, table: str, column_ids: list[int], json_filters: str = ""
) -> pa.Table:
    """SELECT: endpoints for the table, then DoGet with the ticket it gives."""
    descriptor = flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=[schema, table]
    ).SerializeToString()
    request = {
        "descriptor": descriptor,
        "parameters": {"column_ids": column_ids, "json_filters": json_filters},
    }
    (body,) = srv.client.action("endpoints", msgpack.packb(request, use_bin_type=False))
    endpoint = flight_pb2.FlightEndpoint()
    endpoint.ParseFromString(msgpack.unpackb(body, raw=True)[0])
    assert [location.uri for location in endpoint.location] == [srv.server.location]
    with contextlib.closing(flight.connect(srv.server.location)) as client:
        return client.do_get(flight.Ticket(endpoint.ticket.ticket)).read_all()


def test_duckdb_session_end_to_end(any_srv: Running) -> None:
    srv = any_srv
    tables = _attach(srv.client)
    assert set(tables) >= {
        (b"dml_schema", b"users"),
        (b"batch_schema", b"users"),
        (b"demo_schema", b"readonly"),
    } or set(tables) >= {("dml_schema", "users")}
    info = tables.get(("dml_schema", "users")) or tables[(b"dml_schema", b"users")]  # type: ignore[index]
    schema = pa.ipc.read_schema(pa.py_buffer(info.schema))
    assert schema.names == ["id", "name", "email", "rowid"] and schema.field("rowid").metadata == {
        b"is_rowid": b"true"
    }
    assert msgpack.unpackb(info.app_metadata)["type"] == "table"
    # the memory table has statistics of every column type DuckDB reads them for
    assert schema.metadata == {b"can_produce_statistics": b"true"}
    # INSERT, then SELECT *: every field in its place with its name and metadata, the
    # rowid DuckDB did not ask for typed null (deviation unrequested_columns_null_typed)
    srv.client.insert("dml_schema", "users", users([1, 2, 3], ["Ann", "Bob", "Cy"]))
    scanned = _scan(srv, "dml_schema", "users", [0, 1, 2])
    assert [(f.name, f.metadata) for f in scanned.schema] == [(f.name, f.metadata) for f in schema]
    assert [f.type for f in scanned.schema] == [pa.int64(), pa.string(), pa.string(), pa.null()]
    assert sorted(scanned.column("name").to_pylist()) == ["Ann", "Bob", "Cy"]
    # UPDATE users SET name = 'Bobby' WHERE id = 2: scan for rowids, then the exchange
    rows = _scan(srv, "dml_schema", "users", [0, ROWID_ID]).to_pylist()
    target = [r["rowid"] for r in rows if r["id"] == 2]
    srv.client.update(
        "dml_schema", "users", pa.table({"name": ["Bobby"], "rowid": pa.array(target, pa.int64())})
    )
    # DELETE FROM users WHERE id = 1
    target = [r["rowid"] for r in rows if r["id"] == 1]
    srv.client.delete("dml_schema", "users", target)
    after = _scan(srv, "dml_schema", "users", [0, 1])
    assert sorted(after.select(["id", "name"]).to_pylist(), key=lambda r: r["id"]) == [
        {"id": 2, "name": "Bobby"},
        {"id": 3, "name": "Cy"},
    ]


def _filter_json(*expressions: Node) -> str:
    return document(["id", "name", "email"], *expressions)


def test_pushed_down_filters_run_in_the_backend(any_srv: Running) -> None:
    """SELECT name FROM users WHERE id > 2 AND name <> 'Cy': DuckDB's json_filters reach the
    backend (memory: pyarrow; Spark: a WHERE) and only matching rows cross the wire."""
    srv = any_srv
    srv.client.insert("dml_schema", "users", users([1, 2, 3, 4, 5], ["A", "B", "Cy", "D", "E"]))
    id_, name = column(0), column(1, "VARCHAR")
    where = _filter_json(
        comparison("GREATERTHAN", id_, constant(2)),
        comparison("NOTEQUAL", name, constant("Cy", "VARCHAR")),
    )
    scanned = _scan(srv, "dml_schema", "users", [1, ROWID_ID], where)
    assert sorted(scanned.column("name").to_pylist()) == ["D", "E"]
    # a filter the server cannot translate (a constant of another type) is left to DuckDB
    loose = _filter_json(comparison("EQUAL", id_, constant("x", "VARCHAR")))
    assert _scan(srv, "dml_schema", "users", [0], loose).num_rows == 5
    # and so is a string no UTF-8 holds (JSON's lone surrogate), which no engine can compare
    lone = _filter_json(comparison("EQUAL", name, constant("\ud800", "VARCHAR")))
    assert _scan(srv, "dml_schema", "users", [1], lone).num_rows == 5
    # WHERE name LIKE '%y' OR name NOT LIKE '_' (DuckDB's suffix function and its !~~)
    y, one = constant("y", "VARCHAR"), constant("_", "VARCHAR")
    likes = _filter_json(conjunction("OR", function("suffix", name, y), function("!~~", name, one)))
    assert _scan(srv, "dml_schema", "users", [1], likes).column("name").to_pylist() == ["Cy"]


def test_a_filter_no_engine_could_run_whole_is_cut_to_what_they_take(any_srv: Running) -> None:
    """An IN of 22,000 values (DataFusion's stack overflowed on 10,000, crashing the server)
    and 10,000 ANDed comparisons (pyarrow's did): the scan answers with every row the filter
    keeps, the IN pushed down as the range of its values, the comparisons past the budget left
    to DuckDB."""
    srv = any_srv
    srv.client.insert("dml_schema", "users", users([1, 2, 3, 4, 5]))
    id_ = column(0)
    listed = operator("COMPARE_IN", id_, *[constant(k) for k in [2, 4, *range(1_000, 23_000)]])
    many = [comparison("NOTEQUAL", id_, constant(-k)) for k in range(10_000)]
    scanned = _scan(srv, "dml_schema", "users", [0], _filter_json(listed, *many))
    assert sorted(scanned.column("id").to_pylist()) == [2, 3, 4, 5]
    assert _scan(srv, "dml_schema", "users", [0]).num_rows == 5  # and the server goes on


def test_a_like_spark_would_backtrack_on_for_minutes_is_answered_at_once(any_srv: Running) -> None:
    """`name LIKE '%a%a…%b'` (twelve `%`) over a 40-character name: Spark, matching it as a
    Java regular expression, took over a minute, in a task no cancel stops. Linear-time
    engines (pyarrow, DataFusion) run it; where Spark would, DuckDB filters it instead."""
    srv = any_srv
    srv.client.insert("dml_schema", "users", users([1, 2], ["a" * 40, "a" * 39 + "b"]))
    name = column(1, "VARCHAR")
    slow = function("~~", name, constant("%a" * 12 + "%b", "VARCHAR"))
    answered: list[list[str]] = []

    def scan() -> None:
        rows = _scan(srv, "dml_schema", "users", [1], _filter_json(slow)).column("name")
        answered.append(rows.to_pylist())

    worker = threading.Thread(target=scan, daemon=True)
    worker.start()
    worker.join(30)
    assert answered, "the scan did not answer within 30 s"
    assert "a" * 39 + "b" in answered[0]  # every row the filter keeps


def test_catalog_version_bytes_and_changes(srv: Running) -> None:
    (body,) = srv.client.action("catalog_version", msgpack.packb({"catalog_name": ""}))
    assert body[:18] == b"\x82\xafcatalog_version\xcf" and body.endswith(b"\xa8is_fixed\xc2")
    before = msgpack.unpackb(body)["catalog_version"]
    srv.catalog.schema(Context.background(), "demo_schema").add(
        memory_table("extra", USERS_COLUMNS)
    )
    (body,) = srv.client.action("catalog_version", msgpack.packb({"catalog_name": ""}))
    assert msgpack.unpackb(body)["catalog_version"] == before + 1


def test_endpoint_ticket_maps_column_ids_and_filters(srv: Running) -> None:
    descriptor = flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=["dml_schema", "users"]
    ).SerializeToString()
    request = {
        "descriptor": descriptor,
        "parameters": {"column_ids": [2, ROWID_ID, 99], "json_filters": '{"filters":[]}'},
    }
    (body,) = srv.client.action("endpoints", msgpack.packb(request))
    endpoint = flight_pb2.FlightEndpoint()
    endpoint.ParseFromString(msgpack.unpackb(body, raw=True)[0])
    ticket = json.loads(endpoint.ticket.ticket)
    # one part (the table is small; deviation several_endpoints): it names no part, its DoGet
    # reads the table as a scan does
    assert ticket == {
        "schema": "dml_schema",
        "table": "users",
        "columns": ["email", "rowid"],
        "filters": "eyJmaWx0ZXJzIjpbXX0=",
    }


def test_plain_flight_clients_get_flight_info_and_list_flights(srv: Running) -> None:
    with contextlib.closing(flight.connect(srv.server.location)) as client:
        info = client.get_flight_info(flight.FlightDescriptor.for_path("batch_schema", "users"))
        # the row count the table knows (deviation total_records_counted): none yet
        assert info.schema.names == ["id", "name", "email", "rowid"] and info.total_records == 0
        assert info.endpoints[0].ticket.ticket == b'{"schema":"batch_schema","table":"users"}'
        readonly = client.get_flight_info(
            flight.FlightDescriptor.for_path("demo_schema", "readonly")
        )
        assert readonly.total_records == 3
        listed = list(client.list_flights())
        assert sorted(tuple(f.descriptor.path) for f in listed) == [
            (b"batch_schema", b"users"),
            (b"demo_schema", b"readonly"),
            (b"dml_schema", b"users"),
        ]
        assert {f.total_records for f in listed} == {-1}  # a listing counts nothing


# --- every read-side error row on the wire -----------------------------------------------------


class _BadScans:
    def __init__(self, mode: str) -> None:
        self.inner = memory_table("t", USERS_COLUMNS)
        self.mode = mode

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def scan(self, ctx: Context, opts: ScanOptions | None = None) -> pa.RecordBatchReader:
        if self.mode == "raise":
            raise OSError("storage offline")
        data = users([1])
        return pa.RecordBatchReader.from_batches(data.schema, data.to_batches())


class _BrokenCatalog(MutableCatalog):
    def schemas(self, ctx: Context) -> list[CatalogSchema]:
        raise OSError("metastore unreachable")


def _error(call: Callable[[], object]) -> RemoteError:
    with pytest.raises(RemoteError) as err:
        call()
    return err.value


def _get(srv: Running, ticket: bytes) -> RemoteError:
    def call() -> None:
        try:
            list(srv.client.stub.DoGet(flight_pb2.Ticket(ticket=ticket)))
        except grpc.RpcError as error:
            raise RemoteError(error.code(), error.details()) from None  # type: ignore[attr-defined]

    return _error(call)


def _forged_sealed_ticket(srv: Running) -> RemoteError:
    """A server with data workers (one on another host, never reached) is brought a sealed
    ticket its key did not seal: its own DoGet refuses it, as a worker would."""
    from pyairport.server.data_workers import DataWorkers, WorkerFlags
    from pyairport.server.ticket_seal import PREFIX, new_key

    def unread(ctx: Any, plan: bytes) -> Any:
        raise AssertionError("a refused ticket's plan is never read")

    srv.server.serve_parts_at(
        DataWorkers(new_key(), 0, ["grpc://10.0.0.7:8816"], WorkerFlags(), unread)
    )
    try:
        return _get(srv, PREFIX + bytes(64))
    finally:
        srv.server.serve_parts_at(None)


def _info(srv: Running, descriptor: flight_pb2.FlightDescriptor) -> RemoteError:
    def call() -> None:
        try:
            srv.client.stub.GetFlightInfo(descriptor)
        except grpc.RpcError as error:
            raise RemoteError(error.code(), error.details()) from None  # type: ignore[attr-defined]

    return _error(call)


def _bad_scan(mode: str) -> RemoteError:
    with serving(MutableCatalog("", [CatalogSchema("s", tables=[_BadScans(mode)])])) as running:  # type: ignore[list-item]
        return _get(running, b'{"schema":"s","table":"t"}')


def _broken_catalog() -> RemoteError:
    with serving(_BrokenCatalog("")) as running:
        return _error(lambda: running.client.action("list_schemas", b""))


def _at(descriptor: flight_pb2.FlightDescriptor, version: str = "", unit: str = "VERSION") -> bytes:
    """A flight_info body as DuckDB's `AT (VERSION => version)` sends it."""
    body = {"descriptor": descriptor.SerializeToString(), "at_unit": "", "at_value": ""}
    if version:
        body |= {"at_unit": unit, "at_value": version}
    return bytes(msgpack.packb(body))


class _Versioned:
    """A table that keeps every version (a DynamicSchemaTable): version 0 had `id` only,
    version 1 added `name`."""

    VERSIONS = (
        pa.table({"rowid": pa.array([1], pa.int64()), "id": pa.array([10], pa.int64())}),
        pa.table(
            {
                "rowid": pa.array([1, 2], pa.int64()),
                "id": pa.array([10, 20], pa.int64()),
                "name": ["a", "b"],
            }
        ),
    )

    def _at(self, point: Any) -> pa.Table:
        version = len(self.VERSIONS) - 1 if point is None else int(point.value)
        if point is not None and point.unit != "version" or not 0 <= version < len(self.VERSIONS):
            raise TimePointInvalid(error=f"there is no {point.unit} {point.value}")
        data = self.VERSIONS[version]
        return data.cast(
            pa.schema([rowid_field() if f.name == "rowid" else f for f in data.schema])
        )

    def name(self) -> str:
        return "versioned"

    def comment(self) -> str:
        return ""

    def arrow_schema(self, columns: Any = None) -> pa.Schema:
        return self._at(None).schema

    def schema_for_request(self, ctx: Context, request: SchemaRequest) -> pa.Schema:
        return self._at(request.time_point).schema

    def scan(self, ctx: Context, options: ScanOptions | None = None) -> pa.RecordBatchReader:
        return self._at(options.time_point if options else None).to_reader()


class _Today(_Versioned):
    """A table that keeps no past (not a DynamicSchemaTable)."""

    schema_for_request = None  # type: ignore[assignment]

    def name(self) -> str:
        return "today"


def _today_error(call: Callable[[Running], RemoteError]) -> RemoteError:
    catalog = MutableCatalog("", [CatalogSchema("s", tables=[_Today()])])  # type: ignore[list-item]
    with serving(catalog) as running:
        return call(running)


def _versioned_error() -> RemoteError:
    catalog = MutableCatalog("", [CatalogSchema("s", tables=[_Versioned()])])  # type: ignore[list-item]
    with serving(catalog) as running:
        return _error(
            lambda: running.client.action("flight_info", _at(_path("s", "versioned"), "7"))
        )


def test_time_travel_as_duckdb_asks_for_it() -> None:
    """`SELECT * FROM t AT (VERSION => 0)`: flight_info at the point (the schema then), then
    endpoints with at_unit/at_value (the point goes into the ticket), then DoGet."""
    catalog = MutableCatalog("", [CatalogSchema("s", tables=[_Versioned()])])  # type: ignore[list-item]
    with serving(catalog) as running:
        for version, names in (("0", ["id", "rowid"]), ("1", ["id", "name", "rowid"])):
            (body,) = running.client.action("flight_info", _at(_path("s", "versioned"), version))
            info = flight_pb2.FlightInfo()
            info.ParseFromString(body)
            assert pa.ipc.read_schema(pa.py_buffer(info.schema)).names == names
            request = {
                "descriptor": _path("s", "versioned").SerializeToString(),
                "parameters": {
                    "column_ids": [0],
                    "json_filters": "",
                    "at_unit": "VERSION",
                    "at_value": version,
                },
            }
            (answer,) = running.client.action("endpoints", msgpack.packb(request))
            endpoint = flight_pb2.FlightEndpoint()
            endpoint.ParseFromString(msgpack.unpackb(answer, raw=True)[0])
            ticket = json.loads(endpoint.ticket.ticket)
            assert (ticket["time_point_unit"], ticket["time_point_value"]) == ("version", version)
            with contextlib.closing(flight.connect(running.server.location)) as client:
                read = client.do_get(flight.Ticket(endpoint.ticket.ticket)).read_all()
            assert read.column("id").to_pylist() == [10, 20][: int(version) + 1]
        # no point: today's FlightInfo, as flight_info without at_* answers
        (body,) = running.client.action("flight_info", _at(_path("s", "versioned")))
        info = flight_pb2.FlightInfo()
        info.ParseFromString(body)
        assert pa.ipc.read_schema(pa.py_buffer(info.schema)).names == ["id", "name", "rowid"]


def test_a_table_without_the_past_refuses_a_time_point_in_a_ticket(srv: Running) -> None:
    """Never today's rows for the past's (deviation time_point_refused_when_unsupported)."""
    ticket = b'{"schema":"s","table":"today","time_point_unit":"version","time_point_value":"0"}'
    error = _today_error(lambda running: _get(running, ticket))
    assert_error_row(
        "time_travel_unsupported",
        {"schema": "s", "table": "today"},
        error.code,
        error.message,
    )


# Versions no Delta table has, spelled as a hostile client might: digits str.isdigit() takes
# but int() refuses ("²") or reads as another number ("١" is 1), more digits than int() reads,
# more than a 64-bit version holds; timestamps that are not one, or that no datetime holds in
# UTC (year 1 east of it, year 9999 west of it).
_NOT_A_VERSION = {
    ("version", "²"): "version must be a non-negative integer, got '²'",
    ("version", "١"): "version must be a non-negative integer, got '١'",
    ("version", "9" * 5000): f"version {'9' * 24}… does not exist",
    ("version", "9223372036854775808"): "version 9223372036854775808 does not exist",
    ("timestamp", "yesterday"): "not a timestamp: 'yesterday'",
    ("timestamp", "0001-01-01T00:00:00+01:00"): (
        "timestamp out of range: '0001-01-01T00:00:00+01:00'"
    ),
    ("timestamp", "9999-12-31T23:59:59-01:00"): (
        "timestamp out of range: '9999-12-31T23:59:59-01:00'"
    ),
}


@pytest.mark.parametrize(("unit", "value"), list(_NOT_A_VERSION))
def test_a_version_no_table_can_have_is_the_clients_error(
    any_srv: Running, unit: str, value: str
) -> None:
    """Refused with the contract's time_point_invalid where DuckDB sends it (flight_info and
    endpoints) and in a ticket, never INTERNAL, on every backend."""
    parameters = {
        "column_ids": [0],
        "json_filters": "",
        "at_unit": unit.upper(),
        "at_value": value,
    }
    request = {
        "descriptor": _path("batch_schema", "users").SerializeToString(),
        "parameters": parameters,
    }
    ticket = json.dumps(
        {
            "schema": "batch_schema",
            "table": "users",
            "time_point_unit": unit,
            "time_point_value": value,
        }
    ).encode()
    descriptor = _path("batch_schema", "users")
    for error in (
        _error(lambda: any_srv.client.action("flight_info", _at(descriptor, value, unit.upper()))),
        _error(lambda: any_srv.client.action("endpoints", msgpack.packb(request))),
        _get(any_srv, ticket),
    ):
        assert_error_row(
            "time_point_invalid", {"error": _NOT_A_VERSION[unit, value]}, error.code, error.message
        )


def _path(*parts: str) -> flight_pb2.FlightDescriptor:
    return flight_pb2.FlightDescriptor(type=flight_pb2.FlightDescriptor.PATH, path=list(parts))


def _series_call(arguments: bytes) -> bytes:
    """A DoGet ticket of demo_schema.series called with these arguments (an IPC stream)."""
    import base64

    params = base64.b64encode(arguments).decode()
    ticket = {"schema": "demo_schema", "table_function": "series", "function_params": params}
    return json.dumps(ticket).encode()


def _huge_arguments() -> bytes:
    arguments = pa.table({"start": [1], "stop": [2]}).append_column("x", huge_name()["name"])
    return compressed(arguments)


TRIGGERS: dict[str, tuple[Callable[[Running], RemoteError], dict[str, Any]]] = {
    # series(1, 2) with a third argument of 65 MiB, compressed to a few kilobytes
    "input_batch_too_large": (
        lambda s: _get(s, _series_call(_huge_arguments())),
        {"size": str(8 + 8 + 8 + HUGE_BYTES), "limit": str(64 * 1024 * 1024)},
    ),
    "catalog_payload_empty": (
        lambda s: _error(lambda: s.client.action("catalog_version", b"")),
        {},
    ),
    "catalog_payload_invalid": (
        lambda s: _error(lambda: s.client.action("catalog_version", b"\x01")),
        {"error": None},
    ),
    "catalog_name_mismatch": (
        lambda s: _error(
            lambda: s.client.action("list_schemas", msgpack.packb({"catalog_name": "lake"}))
        ),
        {"expected": '""', "got": '"lake"'},
    ),
    "list_schemas_failed": (lambda s: _broken_catalog(), {"error": "metastore unreachable"}),
    "endpoints_invalid_request": (
        lambda s: _error(lambda: s.client.action("endpoints", msgpack.packb([1]))),
        {"error": None},
    ),
    "endpoints_invalid_descriptor": (
        lambda s: _error(
            lambda: s.client.action(
                "endpoints", msgpack.packb({"descriptor": b"\xff\xff\xff", "parameters": {}})
            )
        ),
        {"error": None},
    ),
    "endpoints_descriptor_not_path": (
        lambda s: _error(
            lambda: s.client.action(
                "endpoints",
                msgpack.packb(
                    {
                        "descriptor": flight_pb2.FlightDescriptor(
                            type=2, cmd=b"x"
                        ).SerializeToString()
                    }
                ),
            )
        ),
        {},
    ),
    "scan_schema_not_found": (
        lambda s: _get(s, b'{"schema":"nope","table":"users"}'),
        {"schema": "nope"},
    ),
    "scan_table_not_found": (
        lambda s: _get(s, b'{"schema":"dml_schema","table":"nope"}'),
        {"schema": "dml_schema", "table": "nope"},
    ),
    "flight_info_not_path": (lambda s: _info(s, flight_pb2.FlightDescriptor(type=2, cmd=b"x")), {}),
    "flight_info_path_length": (lambda s: _info(s, _path("dml_schema")), {}),
    "invalid_ticket": (lambda s: _get(s, b"not json"), {"reason": None}),
    "ticket_refused": (
        _forged_sealed_ticket,
        {"reason": "not sealed by this server's catalog, or changed since"},
    ),
    "scan_schema_mismatch": (
        lambda s: _bad_scan("schema"),
        {"table_fields": 4, "reader_fields": 3},
    ),
    "scan_failed": (lambda s: _bad_scan("raise"), {"error": "storage offline"}),
    "flight_info_path_invalid": (
        lambda s: _error(lambda: s.client.action("flight_info", _at(_path("a", "b", "c")))),
        {"path": "[a b c]"},
    ),
    "time_travel_unsupported": (
        lambda s: _today_error(
            lambda running: _error(
                lambda: running.client.action("flight_info", _at(_path("s", "today"), "1"))
            )
        ),
        {"schema": "s", "table": "today"},
    ),
    "time_point_invalid": (lambda s: _versioned_error(), {"error": "there is no version 7"}),
}

READ_SIDE_ROWS = {r.id for r in ERROR_TABLE if {"doget", "getflightinfo"} & set(r.protocols)} | set(
    TRIGGERS
)


def test_every_read_side_row_is_triggered() -> None:
    from .test_function_errors import FUNCTION_ROWS  # table function scans are tested there

    rows = {r.id for r in ERROR_TABLE if {"doget", "getflightinfo"} & set(r.protocols)}
    assert rows - FUNCTION_ROWS <= set(TRIGGERS)


@pytest.mark.parametrize("row_id", sorted(TRIGGERS))
def test_read_side_error_on_the_wire(srv: Running, row_id: str) -> None:
    trigger, params = TRIGGERS[row_id]
    error = trigger(srv)
    assert_error_row(row_id, params, error.code, error.message)


def test_ticket_for_another_catalog_is_refused(srv: Running) -> None:
    error = _get(srv, b'{"catalog":"lake","schema":"dml_schema","table":"users"}')
    assert (error.code, error.message) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        'catalog name mismatch: expected "", got "lake"',
    )


# --- DuckDB's column ids, whatever the rowid column's place --------------------------------------


class _AskedColumnsOnly:
    """A table that fills only the columns a scan asks for and leaves the rest null, as the
    Spark table does: a scan that names the wrong columns shows as nulls."""

    def __init__(self, schema: pa.Schema, rows: pa.Table) -> None:
        self._schema, self._rows = schema, rows

    def name(self) -> str:
        return "shaped"

    def comment(self) -> str:
        return ""

    def arrow_schema(self, columns: Any) -> pa.Schema:
        return self._schema

    def scan(self, ctx: Context, options: ScanOptions) -> pa.RecordBatchReader:
        arrays = [
            self._rows.column(f.name)
            if f.name in options.columns
            else pa.nulls(self._rows.num_rows, f.type)
            for f in self._schema
        ]
        return pa.Table.from_arrays(arrays, schema=self._schema).to_reader()


_ROWID = pa.field("rowid", pa.int64(), metadata={"is_rowid": "true"})
_ID, _NAME, _EMAIL = USERS_COLUMNS


@pytest.mark.parametrize(
    "fields",
    [
        [_ROWID, _ID, _NAME, _EMAIL],
        [_ID, _NAME, _EMAIL, _ROWID],
        [_ID, _ROWID, _NAME, _EMAIL],
        [_ID, _NAME, _EMAIL],
    ],
    ids=["rowid first", "rowid last", "rowid in the middle", "no rowid"],
)
def test_column_ids_count_the_columns_duckdb_sees(fields: list[pa.Field]) -> None:
    """DuckDB numbers the columns it shows (the rowid field hidden): `SELECT email` sends [2],
    `SELECT name … WHERE id = 15` sends [0, 1], the rowid scan before UPDATE [2**64-1, …]."""
    schema = pa.schema(fields)
    rows = pa.table(
        {"rowid": [10, 11], "id": [1, 15], "name": ["Ann", "Bo"], "email": ["a@x", "b@x"]}
    ).select([f.name for f in fields])
    catalog = MutableCatalog(
        "", [CatalogSchema("s", tables=[_AskedColumnsOnly(schema, rows.cast(schema))])]
    )
    with serving(catalog) as srv:
        assert _scan(srv, "s", "shaped", [2]).column("email").to_pylist() == ["a@x", "b@x"]
        both = _scan(srv, "s", "shaped", [0, 1])
        assert both.select(["id", "name"]).to_pylist() == [
            {"id": 1, "name": "Ann"},
            {"id": 15, "name": "Bo"},
        ]
        if "rowid" in schema.names:
            with_rowids = _scan(srv, "s", "shaped", [ROWID_ID, 1])
            assert with_rowids.select(["rowid", "name"]).to_pylist() == [
                {"rowid": 10, "name": "Ann"},
                {"rowid": 11, "name": "Bo"},
            ]
        # the Python client numbers them the same way
        read = srv.client.scan("s", "shaped", ["email", "id"]).read_all()
        assert read.to_pylist() == [{"email": "a@x", "id": 1}, {"email": "b@x", "id": 15}]


def test_handshake_answers_ok_with_nothing_as_go_does(srv: Running) -> None:
    """airport-go's Handshake returns at once; a bearer token is checked on every call."""
    request = flight_pb2.HandshakeRequest(protocol_version=0, payload=b"")
    assert list(srv.client.stub.Handshake(iter([request]))) == []
