"""The DoExchange scenario list, run unchanged against pyairport and airport-go.

Each scenario is a function of a fresh server (a Wire to the demo catalog of protocol.md
§4.0) returning what a client observed, step by step: {step: observation}. Scenarios cover
protocol.md §4.1-4.2 (DuckDB's DML statements on the legacy and batch tables, with and
without RETURNING), every DoExchange error row the demo catalog can reach, the transaction
actions around DML, and the read side DuckDB uses to find rowids.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import msgpack
import pyarrow as pa
import zstandard

from airport_contracts import DeleteAction, InsertDescriptor, flight_pb2
from pyairport.wire.ipc import batch_message, schema_message

from .wire import Wire, fields, status

Scenario = Callable[[Wire], dict[str, Any]]
SCENARIOS: dict[str, Scenario] = {}

INT64 = pa.int64()
USERS = pa.schema([("id", pa.int64()), ("name", pa.string()), ("email", pa.string())])
LEGACY, BATCH, READONLY = "dml_schema/users", "batch_schema/users", "demo_schema/readonly"


def scenario(fn: Scenario) -> Scenario:
    SCENARIOS[fn.__name__] = fn
    return fn


def users(ids: list[int | None], names: list[str] | None = None) -> pa.Table:
    names = names or [f"user_{i}" for i in range(len(ids))]
    return pa.table(
        {"id": ids, "name": names, "email": [f"{n.lower()}@example.com" for n in names]},
        schema=USERS,
    )


def set_values(
    rowids: list[int | None], rowid_type: pa.DataType = INT64, **columns: list[Any]
) -> pa.Table:
    """UPDATE input as DuckDB sends it: the SET columns, then rowid last."""
    data = {name: values for name, values in columns.items()}
    data["rowid"] = pa.array(rowids, rowid_type)
    return pa.table(data)


def rowids(values: list[Any], rowid_type: pa.DataType = INT64, name: str = "rowid") -> pa.Table:
    return pa.table({name: pa.array(values, rowid_type)})


def seeded(wire: Wire, path: str, count: int = 3) -> dict[str, Any]:
    return wire.dml("insert", path, users(list(range(1, count + 1))))


# --- INSERT (protocol §4.1 #1-9) ---------------------------------------------------------------


@scenario
def insert_rows(wire: Wire) -> dict[str, Any]:
    return {
        "insert": wire.dml("insert", LEGACY, users([1, None, 3], ["Alice", "Bob", "Carol"])),
        "table": wire.rows("dml_schema"),
    }


@scenario
def insert_returning_per_batch(wire: Wire) -> dict[str, Any]:
    return {
        "insert": wire.dml(
            "insert", BATCH, users([None, 7, None, 9, 10]), returning=True, batch_rows=2
        ),
        "table": wire.rows("batch_schema"),
    }


@scenario
def insert_only_some_columns(wire: Wire) -> dict[str, Any]:
    data = pa.table({"name": ["alice"], "email": ["alice@example.com"]})
    return {
        "insert": wire.dml("insert", LEGACY, data, returning=True),
        "table": wire.rows("dml_schema"),
    }


@scenario
def insert_empty_stream(wire: Wire) -> dict[str, Any]:
    return {"insert": wire.dml("insert", LEGACY, None), "table": wire.rows("dml_schema")}


@scenario
def insert_schema_without_batches(wire: Wire) -> dict[str, Any]:
    return {
        "plain": wire.dml("insert", LEGACY, users([])),
        "returning": wire.dml("insert", LEGACY, users([]), returning=True),
    }


@scenario
def insert_many_rows(wire: Wire) -> dict[str, Any]:
    """100,000 rows with RETURNING in 2048-row batches, as DuckDB sends them (§4.1 #6)."""
    count = 100_000
    answer = wire.dml("insert", LEGACY, users([None] * count), returning=True, batch_rows=2048)
    returned = [row for m in answer["messages"] if m[0] == "batch" for row in m[1]]
    return {
        "shape": [m[0] if m[0] != "batch" else ("batch", len(m[1])) for m in answer["messages"]],
        "final": answer["messages"][-1],
        "status": answer["status"],
        "ids": [r["id"] for r in returned] == list(range(1, count + 1)),
        "count": len(wire.rows("dml_schema")),
    }


# --- UPDATE (protocol §4.1 #10-18, §4.2 #26-28) -------------------------------------------------


@scenario
def update_legacy(wire: Wire) -> dict[str, Any]:
    seeded(wire, LEGACY)
    return {
        "update": wire.dml("update", LEGACY, set_values([1, 2], name=["Updated", "Updated"])),
        "table": wire.rows("dml_schema"),
    }


@scenario
def update_legacy_returning(wire: Wire) -> dict[str, Any]:
    seeded(wire, LEGACY)
    return {
        "update": wire.dml(
            "update", LEGACY, set_values([3, 1], email=["c@x", "a@x"]), returning=True
        ),
        "table": wire.rows("dml_schema"),
    }


@scenario
def update_batch(wire: Wire) -> dict[str, Any]:
    seeded(wire, BATCH)
    return {
        "update": wire.dml("update", BATCH, set_values([2], name=["Bobby"], email=["b@x"])),
        "table": wire.rows("batch_schema"),
    }


@scenario
def update_batch_returning_two_batches(wire: Wire) -> dict[str, Any]:
    seeded(wire, BATCH)
    return {
        "update": wire.dml(
            "update",
            BATCH,
            set_values([1, 2, 3], name=["a", "b", "c"]),
            returning=True,
            batch_rows=2,
        ),
        "table": wire.rows("batch_schema"),
    }


@scenario
def update_unknown_rowid_is_skipped(wire: Wire) -> dict[str, Any]:
    seeded(wire, LEGACY)
    seeded(wire, BATCH)
    return {
        "legacy": wire.dml("update", LEGACY, set_values([2, 99], name=["x", "y"])),
        "batch": wire.dml("update", BATCH, set_values([99, 3], name=["x", "y"])),
        "legacy_table": wire.rows("dml_schema"),
        "batch_table": wire.rows("batch_schema"),
    }


@scenario
def update_all_rows_many_batches(wire: Wire) -> dict[str, Any]:
    """UPDATE ... WHERE id > 0 over 10,000 rows in 2048-row batches (§4.1 #18, scaled)."""
    wire.dml("insert", LEGACY, users([None] * 10_000), batch_rows=2048)
    before = wire.rows("dml_schema")
    data = set_values(
        [r["rowid"] for r in before], email=[f"user_{r['id']}@updated.com" for r in before]
    )
    answer = wire.dml("update", LEGACY, data, batch_rows=2048)
    after = wire.rows("dml_schema")
    return {
        "answer": answer,
        "updated": sum(r["email"].endswith("@updated.com") for r in after),
    }


# --- DELETE (protocol §4.1 #13-15, #19-22; §4.2 #29-31) ----------------------------------------


@scenario
def delete_legacy(wire: Wire) -> dict[str, Any]:
    seeded(wire, LEGACY)
    return {
        "delete": wire.dml("delete", LEGACY, rowids([1, 3])),
        "table": wire.rows("dml_schema"),
    }


@scenario
def delete_legacy_returning(wire: Wire) -> dict[str, Any]:
    seeded(wire, LEGACY)
    return {
        "delete": wire.dml("delete", LEGACY, rowids([2]), returning=True),
        "table": wire.rows("dml_schema"),
    }


@scenario
def delete_batch_returning(wire: Wire) -> dict[str, Any]:
    seeded(wire, BATCH)
    return {
        "delete": wire.dml("delete", BATCH, rowids([1, 2]), returning=True),
        "table": wire.rows("batch_schema"),
    }


@scenario
def delete_everything(wire: Wire) -> dict[str, Any]:
    seeded(wire, BATCH, 5000)
    return {
        "delete": wire.dml("delete", BATCH, rowids(list(range(1, 5001))), batch_rows=2048),
        "table": wire.rows("batch_schema"),
    }


@scenario
def delete_unknown_rowid(wire: Wire) -> dict[str, Any]:
    seeded(wire, LEGACY)
    return {
        "plain": wire.dml("delete", LEGACY, rowids([99])),
        "table": wire.rows("dml_schema"),
    }


@scenario
def delete_returning_matches_nothing(wire: Wire) -> dict[str, Any]:
    seeded(wire, BATCH)
    return {"delete": wire.dml("delete", BATCH, rowids([42]), returning=True)}


@scenario
def crud_cycle(wire: Wire) -> dict[str, Any]:
    """INSERT 2 rows, UPDATE one, DELETE the other (§4.1 #23, §4.2 #32) on both tables."""
    steps: dict[str, Any] = {}
    for path in (LEGACY, BATCH):
        schema = path.split("/")[0]
        steps[f"{schema}.insert"] = wire.dml("insert", path, users([1, 2], ["Alice", "Bob"]))
        steps[f"{schema}.update"] = wire.dml(
            "update", path, set_values([1], name=["Alice Updated"], email=["alice@new"])
        )
        steps[f"{schema}.delete"] = wire.dml("delete", path, rowids([2]))
        steps[f"{schema}.table"] = wire.rows(schema)
    return steps


# --- errors (protocol §1.11) -------------------------------------------------------------------


@scenario
def header_errors(wire: Wire) -> dict[str, Any]:
    data = users([1])
    base = {"airport-operation": "insert", "airport-flight-path": LEGACY}
    return {
        "no_operation": wire.exchange({"airport-flight-path": LEGACY}, data.schema),
        "no_path": wire.exchange({"airport-operation": "insert"}, data.schema),
        "three_part_path": wire.exchange({**base, "airport-flight-path": "a/b/c"}, data.schema),
        "one_part_path": wire.exchange({**base, "airport-flight-path": "users"}, data.schema),
        "unknown_operation": wire.exchange({**base, "airport-operation": "merge"}, data.schema),
    }


@scenario
def lookup_errors(wire: Wire) -> dict[str, Any]:
    answers = {}
    for op, data in (
        ("insert", users([1])),
        ("update", set_values([1], name=["x"])),
        ("delete", rowids([1])),
    ):
        answers[f"{op}.schema"] = wire.dml(op, "nope/users", data)
        answers[f"{op}.table"] = wire.dml(op, "dml_schema/nope", data)
        answers[f"{op}.readonly"] = wire.dml(op, READONLY, data)
    return answers


@scenario
def update_without_rowid_column(wire: Wire) -> dict[str, Any]:
    seeded(wire, LEGACY)
    return {
        "legacy": wire.dml("update", LEGACY, pa.table({"name": ["x"]})),
        "readonly": wire.dml("update", READONLY, pa.table({"name": ["x"]})),
        "table": wire.rows("dml_schema"),
    }


@scenario
def insert_unknown_column(wire: Wire) -> dict[str, Any]:
    data = pa.table({"id": [1], "age": [30]})
    return {"insert": wire.dml("insert", LEGACY, data), "table": wire.rows("dml_schema")}


@scenario
def null_rowid(wire: Wire) -> dict[str, Any]:
    seeded(wire, LEGACY)
    seeded(wire, BATCH)
    return {
        "legacy_update": wire.dml("update", LEGACY, set_values([1, None], name=["x", "y"])),
        "batch_update": wire.dml("update", BATCH, set_values([None], name=["y"])),
        "batch_delete": wire.dml("delete", BATCH, rowids([None])),
        "legacy_table": wire.rows("dml_schema"),
        "batch_table": wire.rows("batch_schema"),
    }


@scenario
def rowid_of_wrong_type(wire: Wire) -> dict[str, Any]:
    seeded(wire, LEGACY)
    return {
        "update": wire.dml("update", LEGACY, set_values(["1"], pa.string(), name=["x"])),
        "delete": wire.dml("delete", LEGACY, rowids(["1"], pa.string())),
        "table": wire.rows("dml_schema"),
    }


@scenario
def rowid_int32_accepted(wire: Wire) -> dict[str, Any]:
    seeded(wire, LEGACY)
    return {
        "update": wire.dml("update", LEGACY, set_values([1], pa.int32(), name=["x"])),
        "delete": wire.dml("delete", LEGACY, rowids([2], pa.int32())),
        "table": wire.rows("dml_schema"),
    }


@scenario
def delete_column_not_named_rowid(wire: Wire) -> dict[str, Any]:
    seeded(wire, LEGACY)
    return {
        "delete": wire.dml("delete", LEGACY, rowids([1], name="id")),
        "table": wire.rows("dml_schema"),
    }


@scenario
def failure_after_a_returning_batch(wire: Wire) -> dict[str, Any]:
    """The second input batch is bad (a null rowid): what happened to the first one?"""
    seeded(wire, BATCH)
    data = set_values([1, None], name=["first", "second"])
    return {
        "update": wire.dml("update", BATCH, data, returning=True, batch_rows=1),
        "table": wire.rows("batch_schema"),
    }


@scenario
def functions_are_not_tables(wire: Wire) -> dict[str, Any]:
    call = {
        "airport-operation": "scalar_function",
        "airport-flight-path": "dml_schema/users",
        "return-chunks": "1",
    }
    return {"scalar": wire.exchange(call, users([1]).schema)}


@scenario
def handshake(wire: Wire) -> dict[str, Any]:
    """Handshake answers OK with no payload, as airport-go's does."""
    try:
        answers = list(wire.stub.Handshake(iter([flight_pb2.HandshakeRequest()])))
        return {"handshake": ("OK", [a.payload for a in answers])}
    except grpc.RpcError as error:
        return {"handshake": status(error)}


@scenario
def column_statistics_refused(wire: Wire) -> dict[str, Any]:
    """column_statistics requests both servers refuse before asking the table (protocol
    §2.9): the same status and message from each."""

    def path(*parts: str) -> bytes:
        return flight_pb2.FlightDescriptor(
            type=flight_pb2.FlightDescriptor.PATH, path=list(parts)
        ).SerializeToString()

    def ask(descriptor: bytes | None, column: str = "id", type_: str = "BIGINT") -> Any:
        request: dict[str, Any] = {"column_name": column, "type": type_}
        if descriptor is not None:
            request["flight_descriptor"] = descriptor
        return wire.action("column_statistics", msgpack.packb(request))["status"]

    command = flight_pb2.FlightDescriptor(type=flight_pb2.FlightDescriptor.CMD, cmd=b"x")
    return {
        "not_msgpack": wire.action("column_statistics", b"\xc1")["status"][0],
        "no_column": ask(path("dml_schema", "users"), column=""),
        "no_type": ask(path("dml_schema", "users"), type_=""),
        "no_descriptor": ask(None),
        "bad_descriptor": ask(b"\xff\xff")[0],
        "not_a_path": ask(command.SerializeToString()),
        "one_part_path": ask(path("dml_schema")),
        "unknown_schema": ask(path("nope", "users")),
        "unknown_table": ask(path("dml_schema", "nope")),
    }


# --- transactions (protocol §1.10, §2.2-2.3) ---------------------------------------------------


def _begin(wire: Wire) -> str:
    answer = wire.msgpack_action("create_transaction", {"catalog_name": ""})
    identifier = answer["results"][0]["identifier"]
    assert isinstance(identifier, str) and len(identifier) == 36, answer
    return identifier


@scenario
def transaction_commits_with_the_statement(wire: Wire) -> dict[str, Any]:
    tx = _begin(wire)
    before = wire.msgpack_action("get_transaction_status", {"transaction_id": tx})
    answer = wire.dml("insert", LEGACY, users([1]), headers={"airport-transaction-id": tx})
    after = wire.msgpack_action("get_transaction_status", {"transaction_id": tx})
    return {"before": before, "insert": answer, "after": after, "table": wire.rows("dml_schema")}


@scenario
def transaction_rolls_back_a_failed_statement(wire: Wire) -> dict[str, Any]:
    seeded(wire, BATCH)
    tx = _begin(wire)
    answer = wire.dml(
        "update", BATCH, set_values([None], name=["x"]), headers={"airport-transaction-id": tx}
    )
    return {
        "update": answer,
        "status": wire.msgpack_action("get_transaction_status", {"transaction_id": tx}),
        "table": wire.rows("batch_schema"),
    }


@scenario
def transaction_of_several_statements(wire: Wire) -> dict[str, Any]:
    """A DuckDB BEGIN … COMMIT: one id on every statement; then one fails and one follows."""
    tx = _begin(wire)
    header = {"airport-transaction-id": tx}
    first = wire.dml("insert", LEGACY, users([1]), headers=header)
    second = wire.dml("update", LEGACY, set_values([1], name=["Ann"]), headers=header)
    committed = wire.msgpack_action("get_transaction_status", {"transaction_id": tx})
    failing = wire.dml("update", LEGACY, set_values([1], age=[30]), headers=header)
    aborted = wire.msgpack_action("get_transaction_status", {"transaction_id": tx})
    after_failure = wire.dml("insert", LEGACY, users([2]), headers=header)
    return {
        "insert": first,
        "update": second,
        "committed": committed,
        "failing": failing,
        "aborted": aborted,
        "after_failure": after_failure,
        "table": wire.rows("dml_schema"),
    }


@scenario
def transaction_header_x_transaction_id(wire: Wire) -> dict[str, Any]:
    tx = _begin(wire)
    answer = wire.dml("insert", LEGACY, users([1]), headers={"x-transaction-id": tx})
    return {
        "insert": answer,
        "status": wire.msgpack_action("get_transaction_status", {"transaction_id": tx}),
    }


@scenario
def transaction_unknown_id(wire: Wire) -> dict[str, Any]:
    header = {"airport-transaction-id": "00000000-0000-4000-8000-000000000000"}
    return {
        "insert": wire.dml("insert", LEGACY, users([1]), headers=header),
        "status": wire.msgpack_action(
            "get_transaction_status", {"transaction_id": "non-existent-tx-id"}
        ),
        "table": wire.rows("dml_schema"),
    }


@scenario
def transaction_action_errors(wire: Wire) -> dict[str, Any]:
    return {
        "create_bad_body": wire.action("create_transaction", b"\xc1"),
        "status_bad_body": wire.action("get_transaction_status", b"\xc1"),
        "status_no_id": wire.msgpack_action("get_transaction_status", {}),
    }


# --- the read side DuckDB uses (protocol §2.5-2.8) ----------------------------------------------


def _unpack_compressed(body: bytes) -> Any:
    length, data = msgpack.unpackb(body, raw=True)
    return msgpack.unpackb(
        zstandard.ZstdDecompressor().decompress(data, max_output_size=length), raw=True
    )


def _flight_info(raw: bytes) -> dict[str, Any]:
    info = flight_pb2.FlightInfo()
    info.ParseFromString(raw)
    return {
        "path": list(info.flight_descriptor.path),
        "schema": fields(pa.ipc.read_schema(pa.py_buffer(info.schema))),
        "app_metadata": msgpack.unpackb(info.app_metadata) if info.app_metadata else None,
        "total_records": info.total_records,
        "total_bytes": info.total_bytes,
        "tickets": [e.ticket.ticket for e in info.endpoint],
    }


@scenario
def attach_catalog(wire: Wire) -> dict[str, Any]:
    """ATTACH: list_schemas decoded the way DuckDB decodes it."""
    answer = wire.action("list_schemas", msgpack.packb({"catalog_name": ""}))
    (body,) = answer["results"]
    root = _unpack_compressed(body)
    schemas = {}
    for schema in root[b"schemas"]:
        tables = [
            _flight_info(raw) for raw in _unpack_compressed(schema[b"contents"][b"serialized"])
        ]
        described = {k: v for k, v in schema.items() if k != b"contents"}
        schemas[schema[b"name"]] = {"entry": described, "tables": tables}
    return {
        "status": answer["status"],
        "root": sorted(k for k in root),
        "version_info": root.get(b"version_info"),
        "schemas": schemas,
    }


@scenario
def catalog_version(wire: Wire) -> dict[str, Any]:
    return {"version": wire.action("catalog_version", msgpack.packb({"catalog_name": ""}))}


@scenario
def scan_tickets_and_rows(wire: Wire) -> dict[str, Any]:
    """SELECT name, rowid ...: endpoints with DuckDB's column ids (name is DuckDB's column 1:
    it does not count the rowid field), then DoGet."""
    seeded(wire, LEGACY)
    endpoint = wire.endpoint("dml_schema", "users", [1, 2**64 - 1])
    scanned = wire.do_get(endpoint.ticket.ticket)
    return {
        "ticket": endpoint.ticket.ticket,
        "locations": [loc.uri == wire.location for loc in endpoint.location],
        "columns": fields(scanned.schema),
        "rows": sorted(scanned.select(["name", "rowid"]).to_pylist(), key=lambda r: r["rowid"]),
        "readonly": wire.rows("demo_schema", "readonly"),
    }


@scenario
def plain_flight_calls(wire: Wire) -> dict[str, Any]:
    descriptor = flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=["batch_schema", "users"]
    )
    info = _flight_info(wire.stub.GetFlightInfo(descriptor).SerializeToString())
    listed = sorted(
        tuple(f.flight_descriptor.path) for f in wire.stub.ListFlights(flight_pb2.Criteria())
    )
    missing = flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=["batch_schema", "nope"]
    )
    try:
        wire.stub.GetFlightInfo(missing)
        missing_status = ("OK", "")
    except grpc.RpcError as error:
        missing_status = status(error)
    return {"info": info, "listed": listed, "missing": missing_status}


@scenario
def spec002_protocols(wire: Wire) -> dict[str, Any]:
    """DoPut INSERT and the delete action of spec 002 (airport-go has since dropped them)."""
    data = users([1])
    first = schema_message(data.schema)
    first.flight_descriptor.CopyFrom(
        flight_pb2.FlightDescriptor(
            type=flight_pb2.FlightDescriptor.CMD,
            cmd=InsertDescriptor(schema_name="dml_schema", table_name="users").to_json(),
        )
    )
    try:
        put = [
            r.app_metadata
            for r in wire.stub.DoPut(iter([first, batch_message(data.to_batches()[0])]))
        ]
        put_status = ("OK", "")
    except grpc.RpcError as error:
        put, put_status = [], status(error)
    body = DeleteAction(schema_name="dml_schema", table_name="users", row_ids=[1]).to_json()
    return {
        "put": {"status": put_status, "answers": len(put)},
        "delete_action": wire.action("delete", body)["status"][0],
        "table": wire.rows("dml_schema"),
    }


def _ddl_request(action: str, catalog: str = "", empty: str = "") -> bytes:
    """A DDL action's body with every required field given (a value that names nothing),
    the catalog name as given, and the field `empty` left empty."""
    from airport_contracts.dispatch import DDL_ACTIONS

    row = DDL_ACTIONS[action]
    values: dict[str, Any] = {row.catalog_field: catalog}
    for field_name, _ in row.required:
        values[field_name] = (
            [] if field_name == "column_path" else b"" if field_name.endswith("schema") else ""
        )
        if field_name != empty:
            given = {"column_path": ["x"], "arrow_schema": b"x", "column_schema": b"x"}
            values[field_name] = given.get(field_name, "x")
    return bytes(row.request(**values).encode())


@scenario
def ddl_validation(wire: Wire) -> dict[str, Any]:
    """Every DDL action's checks before it reaches the catalog, in Go's order: the body, the
    catalog name, each required field."""
    from airport_contracts.dispatch import DDL_ACTIONS

    seen: dict[str, Any] = {}
    for action, row in DDL_ACTIONS.items():
        seen[f"{action} not a map"] = wire.action(action, b"\x93\x01\x02\x03")["status"]
        seen[f"{action} other catalog"] = wire.action(action, _ddl_request(action, "other"))[
            "status"
        ]
        for field_name, _ in row.required:
            body = _ddl_request(action, empty=field_name)
            seen[f"{action} without {field_name}"] = wire.action(action, body)["status"]
    return seen


def _ddl(wire: Wire, action: str, **fields: Any) -> dict[str, Any]:
    """A DDL action: its status, and the table schema a FlightInfo answer describes."""
    from airport_contracts.dispatch import DDL_ACTIONS

    catalog_field = DDL_ACTIONS[action].catalog_field
    body = DDL_ACTIONS[action].request(**{catalog_field: "", **fields}).encode()
    answer = wire.action(action, body)
    seen: dict[str, Any] = {"status": answer["status"], "results": len(answer["results"])}
    if answer["results"] and action != "create_schema":
        info = flight_pb2.FlightInfo()
        info.ParseFromString(answer["results"][0])
        seen["table"] = (list(info.flight_descriptor.path), fields_of(info.schema))
    return seen


def fields_of(serialized: bytes) -> list[str]:
    schema = pa.ipc.read_schema(pa.py_buffer(serialized))
    return [
        f"{f.name} {f.type} {'null' if f.nullable else 'not null'} {f.metadata}" for f in schema
    ]


def _one_field(field: pa.Field) -> bytes:
    return bytes(pa.schema([field]).serialize().to_pybytes())


@scenario
def ddl_session(wire: Wire) -> dict[str, Any]:
    """CREATE, ALTER and DROP as DuckDB sends them, and each refusal, on a catalog that
    creates (airport-go's test server wraps its demo catalog in one)."""
    columns = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("name", pa.string()),
            pa.field("tags", pa.struct([("a", pa.int32())])),
        ]
    )
    lake = {"schema": "lake", "name": "t"}
    tags = pa.struct([("a", pa.int32()), ("b", pa.string())])
    steps: list[tuple[str, str, dict[str, Any]]] = [
        ("create schema", "create_schema", {"schema": "lake"}),
        ("create schema again", "create_schema", {"schema": "lake"}),
        ("create table", "create_table", {"schema_name": "lake", "table_name": "t",
            "arrow_schema": columns.serialize().to_pybytes(), "not_null_constraints": [0]}),
        ("create table again", "create_table", {"schema_name": "lake", "table_name": "t",
            "arrow_schema": columns.serialize().to_pybytes()}),
        ("create table if not exists", "create_table", {"schema_name": "lake", "table_name": "t",
            "arrow_schema": columns.serialize().to_pybytes(), "on_conflict": "ignore"}),
        ("create table in no schema", "create_table", {"schema_name": "nope", "table_name": "t",
            "arrow_schema": columns.serialize().to_pybytes()}),
        ("add column", "add_column", {**lake, "column_schema": _one_field(pa.field("x", pa.int64()))}),
        ("add column again", "add_column", {**lake, "column_schema": _one_field(pa.field("x", pa.int8()))}),
        ("add column if not exists", "add_column", {**lake, "if_column_not_exists": True,
            "column_schema": _one_field(pa.field("x", pa.int8()))}),
        ("add column to no table", "add_column", {"schema": "lake", "name": "nope",
            "column_schema": _one_field(pa.field("x", pa.int8()))}),
        ("add column to no table if exists", "add_column", {"schema": "lake", "name": "nope",
            "ignore_not_found": True, "column_schema": _one_field(pa.field("x", pa.int8()))}),
        ("rename column", "rename_column", {**lake, "old_name": "x", "new_name": "y"}),
        ("rename missing column", "rename_column", {**lake, "old_name": "x", "new_name": "z"}),
        ("rename onto a column", "rename_column", {**lake, "old_name": "y", "new_name": "name"}),
        ("change type", "change_column_type", {**lake, "column_schema": _one_field(pa.field("y", pa.int32()))}),
        ("change type of no column", "change_column_type", {**lake,
            "column_schema": _one_field(pa.field("nope", pa.int32()))}),
        ("set not null", "set_not_null", {**lake, "column_name": "y"}),
        ("drop not null", "drop_not_null", {**lake, "column_name": "y"}),
        ("set not null of no column", "set_not_null", {**lake, "column_name": "nope"}),
        ("set default", "set_default", {**lake, "column_name": "name", "expression": "'z'"}),
        ("add field", "add_field", {**lake, "column_schema": _one_field(pa.field("tags", tags)),
            "column_path": ["tags"]}),
        ("add field again", "add_field", {**lake, "column_schema": _one_field(pa.field("tags", tags)),
            "column_path": ["tags"]}),
        ("rename field", "rename_field", {**lake, "column_path": ["tags", "a"], "new_name": "c"}),
        ("remove field", "remove_field", {**lake, "column_path": ["tags", "b"]}),
        ("remove missing field", "remove_field", {**lake, "column_path": ["tags", "zz"]}),
        ("remove column", "remove_column", {**lake, "removed_column": "y"}),
        ("remove missing column", "remove_column", {**lake, "removed_column": "y"}),
        ("remove missing column if exists", "remove_column", {**lake, "removed_column": "y",
            "if_column_exists": True}),
        ("rename table", "rename_table", {**lake, "new_table_name": "u"}),
        ("rename missing table", "rename_table", {**lake, "new_table_name": "v"}),
        ("drop full schema", "drop_schema", {"type": "schema", "name": "lake"}),
        ("drop table", "drop_table", {"type": "table", "schema_name": "lake", "name": "u"}),
        ("drop missing table", "drop_table", {"type": "table", "schema_name": "lake", "name": "u"}),
        ("drop missing table if exists", "drop_table", {"type": "table", "schema_name": "lake",
            "name": "u", "ignore_not_found": True}),
        ("drop schema", "drop_schema", {"type": "schema", "name": "lake"}),
        ("drop missing schema", "drop_schema", {"type": "schema", "name": "lake"}),
        ("drop missing schema if exists", "drop_schema", {"type": "schema", "name": "lake",
            "ignore_not_found": True}),
    ]  # fmt: skip
    return {name: _ddl(wire, action, **fields) for name, action, fields in steps}
