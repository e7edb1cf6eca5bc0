"""Property-based fuzzing of everything a client controls, on a live server.

Every case must end in a clean status with a message that names the problem: no UNKNOWN, no
"internal server error" (an exception nobody mapped), no traceback or file path. A call that
fails changes no table, and the server keeps serving. PYAIRPORT_FUZZ_EXAMPLES sets the
number of cases per test (CI runs a few hundred; `make soak` runs ten thousand and more).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import grpc
import msgpack
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import pyairport
from airport_contracts import Context, flight_pb2, payloads
from airport_contracts.dispatch import ACTIONS, DDL_ACTIONS
from pyairport.demo import memory_demo_catalog
from pyairport.server import AirportServer, ServerConfig
from pyairport.transactions import MemoryTransactionManager
from pyairport.wire.ipc import batch_message, schema_message

from ..protocol.conftest import Running

EXAMPLES = int(os.environ.get("PYAIRPORT_FUZZ_EXAMPLES", "100"))
FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False
)

# Every status a well-behaved server may answer with; INTERNAL only as "<OP> failed: <why>".
CLEAN = {
    grpc.StatusCode.OK,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.UNIMPLEMENTED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.INTERNAL,
}
COUNTS: dict[str, int] = {}
# What a leaked exception looks like. Not a bare ".py": a message may echo the client's own
# text (`catalog name mismatch: expected "", got ".py"`), but never the server's source paths.
LEAKS = (
    "Traceback",
    'File "',
    "site-packages",
    os.path.dirname(pyairport.__file__),
    "internal server error",
)


@pytest.fixture(scope="module")
def srv() -> Iterator[Running]:
    catalog = memory_demo_catalog()
    server = AirportServer(
        catalog, MemoryTransactionManager(), ServerConfig(port=0, max_row_ids=10_000)
    ).start()
    running = Running(server, catalog, None)
    running.client.insert(
        "dml_schema",
        "users",
        pa.table(
            {
                "id": pa.array([1, 2, 3], pa.int64()),
                "name": ["a", "b", "c"],
                "email": ["x", "y", "z"],
            }
        ),
    )
    yield running
    running.client.close()
    server.stop(0)
    if COUNTS:
        print("\nfuzz outcomes:", json.dumps(dict(sorted(COUNTS.items()))))


def _snapshot(srv: Running) -> dict[str, Any]:
    ctx = Context.background()
    return {
        f"{s.name()}.{t.name()}": t.to_table()
        for s in srv.catalog.schemas(ctx)
        for t in s.tables(ctx)
    }


def _check(
    srv: Running,
    before: dict[str, Any],
    code: grpc.StatusCode,
    message: str,
    what: str,
    corrupt_stream: bool = False,
    backend_refusal: str = "",
) -> None:
    """backend_refusal: the prefix of the contract's INTERNAL row for a DDL action the
    backend refused (Go's `failed to create table: …`), the one INTERNAL a DDL case may get."""
    outcome = f"{what}{' (corrupt stream)' if corrupt_stream else ''} {code.name}"
    COUNTS[outcome] = COUNTS.get(outcome, 0) + 1
    assert code in CLEAN, (code, message)
    assert not any(sign in message for sign in LEAKS), message
    if code == grpc.StatusCode.INTERNAL and backend_refusal:
        assert message.startswith(backend_refusal) and message != backend_refusal, message
    elif code == grpc.StatusCode.INTERNAL:
        # Client input is never the server's fault: INTERNAL only where the case broke the
        # IPC stream itself (the contract's reader_creation_failed / operation_failed, as Go).
        assert corrupt_stream, f"{what}: INTERNAL for client input: {message}"
        assert (
            message.split(" failed: ")[0] in ("INSERT", "UPDATE", "DELETE")
            and len(message.split(" failed: ")[1]) > 0
        ), message
    if code != grpc.StatusCode.OK:
        after = _snapshot(srv)
        assert after.keys() == before.keys() and all(after[k].equals(before[k]) for k in before), (
            f"{what} failed ({message}) but changed a table"
        )
    # the server keeps serving
    assert list(srv.client.stub.ListActions(flight_pb2.Empty()))


def _rpc(call: Any) -> tuple[grpc.StatusCode, str]:
    try:
        result = call()
        if hasattr(result, "__iter__") and not isinstance(result, (bytes, dict)):
            list(result)
    except grpc.RpcError as error:
        return error.code(), error.details() or ""  # type: ignore[attr-defined]
    return grpc.StatusCode.OK, ""


# --- strategies -----------------------------------------------------------------------------

# Table columns, unknown ones, overlong and control-character names; lists may repeat a name.
NAMES = st.sampled_from(
    ["rowid", "id", "name", "email", "nickname", "", "ROWID", "é", "x" * 300, "é\n\x00" * 40]
)
TYPES = st.sampled_from(
    [
        pa.int64(),
        pa.int32(),
        pa.int8(),
        pa.uint64(),
        pa.string(),
        pa.float64(),
        pa.bool_(),
        pa.null(),
        pa.binary(),
        pa.large_string(),
        pa.dictionary(pa.int32(), pa.string()),
        pa.timestamp("us"),
        pa.decimal128(10, 2),
        pa.list_(pa.int64()),
        pa.struct([("a", pa.int64())]),
        pa.map_(pa.string(), pa.int64()),
    ]
)
TEXT = st.text(max_size=12)


@st.composite
def arrow_batches(draw: st.DrawFn) -> tuple[pa.Schema, list[pa.RecordBatch]]:
    names = draw(st.lists(NAMES, min_size=0, max_size=4))
    fields = []
    for name in names:
        metadata = (
            {"is_rowid": draw(st.sampled_from(["true", "", "1"]))} if draw(st.booleans()) else None
        )
        fields.append(pa.field(name, draw(TYPES), metadata=metadata))
    schema = pa.schema(fields)
    batches = []
    for _ in range(draw(st.integers(0, 3))):
        rows = draw(st.integers(0, 5))
        columns = []
        for field in fields:
            if pa.types.is_integer(field.type) or pa.types.is_timestamp(field.type):
                # uint64 beyond int64 and int64 beyond int32: values that do not convert
                low, high = {
                    pa.int32(): (-(2**31), 2**31 - 1),
                    pa.int8(): (-128, 127),
                    pa.uint64(): (0, 2**64 - 1),
                }.get(field.type, (-(2**62), 2**62))
                values: list[Any] = draw(
                    st.lists(
                        st.one_of(st.none(), st.integers(low, high)),
                        min_size=rows,
                        max_size=rows,
                    )
                )
            elif pa.types.is_list(field.type):
                values = draw(
                    st.lists(
                        st.one_of(st.none(), st.lists(st.integers(-5, 5), max_size=3)),
                        min_size=rows,
                        max_size=rows,
                    )
                )
            elif pa.types.is_struct(field.type):
                values = draw(
                    st.lists(
                        st.one_of(st.none(), st.builds(dict, a=st.integers(-5, 5))),
                        min_size=rows,
                        max_size=rows,
                    )
                )
            elif (
                pa.types.is_string(field.type)
                or pa.types.is_large_string(field.type)
                or pa.types.is_dictionary(field.type)
            ):
                values = draw(st.lists(st.one_of(st.none(), TEXT), min_size=rows, max_size=rows))
            elif pa.types.is_binary(field.type):
                values = draw(
                    st.lists(
                        st.one_of(st.none(), st.binary(max_size=8)), min_size=rows, max_size=rows
                    )
                )
            elif pa.types.is_floating(field.type):
                values = draw(
                    st.lists(
                        st.one_of(st.none(), st.floats(allow_nan=True)),
                        min_size=rows,
                        max_size=rows,
                    )
                )
            elif pa.types.is_boolean(field.type):
                values = draw(
                    st.lists(st.one_of(st.none(), st.booleans()), min_size=rows, max_size=rows)
                )
            else:
                values = [None] * rows
            columns.append(pa.array(values, type=field.type))
        batches.append(
            pa.RecordBatch.from_arrays(columns, schema=schema)
            if fields
            else pa.RecordBatch.from_pydict({})
        )
    return schema, batches


HEADERS = st.dictionaries(
    st.sampled_from(
        [
            "airport-operation",
            "airport-flight-path",
            "return-chunks",
            "airport-transaction-id",
            "x-transaction-id",
            "x-other",
        ]
    ),
    st.one_of(
        st.sampled_from(
            [
                "insert",
                "update",
                "delete",
                "scalar_function",
                "upsert",
                "",
                "1",
                "0",
                "dml_schema/users",
                "batch_schema/users",
                "demo_schema/readonly",
                "a/b/c",
                "nope/users",
                "dml_schema/nope",
            ]
        ),
        st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=20),
    ),
)


PLAUSIBLE_HEADERS = st.fixed_dictionaries(
    {
        "airport-operation": st.sampled_from(["insert", "update", "delete"]),
        "airport-flight-path": st.sampled_from(
            ["dml_schema/users", "batch_schema/users", "demo_schema/readonly"]
        ),
    },
    optional={
        "return-chunks": st.sampled_from(["1", "0"]),
        "airport-transaction-id": st.sampled_from(["", "nope"]),
    },
)


@FUZZ
@given(
    headers=st.one_of(HEADERS, PLAUSIBLE_HEADERS),
    data=arrow_batches(),
    garbage=st.one_of(st.none(), st.binary(min_size=1, max_size=40)),
)
def test_fuzz_doexchange(
    srv: Running,
    headers: dict[str, str],
    data: tuple[pa.Schema, list[pa.RecordBatch]],
    garbage: bytes | None,
) -> None:
    schema, batches = data
    messages = [schema_message(schema)] + [batch_message(b) for b in batches]
    if garbage is not None:
        messages.insert(
            len(messages) // 2 + 1, flight_pb2.FlightData(data_header=garbage, data_body=garbage)
        )
    before = _snapshot(srv)
    code, message = _rpc(
        lambda: srv.client.stub.DoExchange(iter(messages), metadata=sorted(headers.items()))
    )
    _check(srv, before, code, message, "DoExchange", corrupt_stream=garbage is not None)


JSON_VALUES = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), TEXT
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(TEXT, children, max_size=4)
    ),
    max_leaves=10,
)
MSGPACK_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**64 - 1),
        st.floats(allow_nan=False),
        TEXT,
        st.binary(max_size=8),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(TEXT, children, max_size=4)
    ),
    max_leaves=10,
)
DESCRIPTORS = st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries(
        {
            "operation": st.sampled_from(["insert", "update", "delete", "x"]),
            "schema_name": st.sampled_from(["dml_schema", "batch_schema", "nope"]),
            "table_name": st.sampled_from(["users", "readonly", "nope"]),
        },
        optional={
            "row_ids": st.one_of(st.lists(st.integers(-5, 10), max_size=6), JSON_VALUES),
            "returning": st.one_of(st.booleans(), JSON_VALUES),
        },
    ),
)


@FUZZ
@given(
    command=st.one_of(DESCRIPTORS.map(lambda v: json.dumps(v).encode()), st.binary(max_size=60)),
    data=arrow_batches(),
    tx=st.sampled_from(["", "nope"]),
)
def test_fuzz_doput(
    srv: Running, command: bytes, data: tuple[pa.Schema, list[pa.RecordBatch]], tx: str
) -> None:
    schema, batches = data
    first = schema_message(schema)
    first.flight_descriptor.CopyFrom(
        flight_pb2.FlightDescriptor(type=flight_pb2.FlightDescriptor.CMD, cmd=command)
    )
    messages = [first] + [batch_message(b) for b in batches]
    headers = [("x-transaction-id", tx)] if tx else []
    before = _snapshot(srv)
    code, message = _rpc(lambda: srv.client.stub.DoPut(iter(messages), metadata=headers))
    _check(srv, before, code, message, "DoPut")


ACTION_BODIES = st.one_of(
    st.binary(max_size=60),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    MSGPACK_VALUES.map(lambda v: msgpack.packb(v)),
    st.fixed_dictionaries(
        {
            "schema_name": st.sampled_from(["dml_schema", "batch_schema", "nope"]),
            "table_name": st.sampled_from(["users", "readonly"]),
            "row_ids": st.lists(st.integers(-3, 10), max_size=5),
        }
    ).map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries(
        {
            "catalog_name": st.one_of(TEXT, MSGPACK_VALUES),
            "transaction_id": st.one_of(TEXT, MSGPACK_VALUES),
        }
    ).map(lambda v: msgpack.packb(v)),
)


@FUZZ
@given(
    action=st.sampled_from(
        [
            "delete",
            "create_transaction",
            "get_transaction_status",
            "list_schemas",
            "catalog_version",
            "endpoints",
            "drop_table",
            "",
        ]
    ),
    body=ACTION_BODIES,
)
# A message that echoes the client's text is no leak, whatever the text says.
@example(action="list_schemas", body=msgpack.packb({"catalog_name": ".py", "transaction_id": ""}))
def test_fuzz_doaction(srv: Running, action: str, body: bytes) -> None:
    before = _snapshot(srv)
    code, message = _rpc(
        lambda: srv.client.stub.DoAction(flight_pb2.Action(type=action, body=body))
    )
    _check(srv, before, code, message, "DoAction")


PLAUSIBLE_TICKETS = st.fixed_dictionaries(
    {
        "schema": st.sampled_from(["dml_schema", "batch_schema", "nope"]),
        "table": st.sampled_from(["users", "readonly"]),
    },
    optional={
        "catalog": st.sampled_from(["", "x"]),
        "columns": st.lists(NAMES, max_size=3),
        "filters": st.sampled_from(["", "e30=", "!!"]),
        "time_point_unit": st.sampled_from(["version", "timestamp", "x"]),
        "time_point_value": st.one_of(st.sampled_from(["0", "²", "9" * 5000]), TEXT),
    },
).map(lambda v: json.dumps(v).encode())


@FUZZ
@given(
    ticket=st.one_of(
        st.binary(max_size=60), DESCRIPTORS.map(lambda v: json.dumps(v).encode()), PLAUSIBLE_TICKETS
    )
)
def test_fuzz_doget(srv: Running, ticket: bytes) -> None:
    before = _snapshot(srv)
    code, message = _rpc(lambda: srv.client.stub.DoGet(flight_pb2.Ticket(ticket=ticket)))
    _check(srv, before, code, message, "DoGet")


# --- every action, with bodies of its own payload's shape -----------------------------------

# Values a field of this wire name is tried with, beside any text: the names the demo catalog
# has and lacks, and the values DuckDB's own clients never send.
_PLAUSIBLE_TEXT = {
    "catalog": [""],
    "schema": ["dml_schema", "batch_schema", "demo_schema", "nope"],
    "table": ["users", "readonly", "nope"],
    "column": ["rowid", "id", "name", "email", "nickname"],
    "unit": ["VERSION", "version", "TIMESTAMP", "timestamp_ns", "x"],
    "value": ["0", "1", "-1", "²", "١", "9" * 5000, "2020-01-01", "2020-01-01T00:00:00+25:00"],
    "type": ["table", "BIGINT", "VARCHAR", "DECIMAL(10,2)", "STRUCT(a INTEGER)", "x"],
    "expression": ["1", "'x'", "id + 1", "now()", "current_user", "(SELECT 1)", "reflect('x')"],
    "check": ["id > 0", "name LIKE 'a%'", "id IN (SELECT 1)", "rlike(name, '(a+)+$')"],
    "conflict": ["error", "ignore", "replace", "x"],
    "name": ["users", "readonly", "nope"],  # last: the DDL payloads' table, any other name
}


def _text_for(wire: str) -> st.SearchStrategy[str]:
    """Mostly the values of the first key the wire name holds (its own name first)."""
    key = wire if wire in _PLAUSIBLE_TEXT else next((k for k in _PLAUSIBLE_TEXT if k in wire), "")
    if not key:
        return st.one_of(st.just(""), TEXT)
    return st.one_of(*[st.sampled_from(_PLAUSIBLE_TEXT[key])] * 4, st.just(""), TEXT)


def _path_descriptor(parts: list[str]) -> bytes:
    return flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=parts
    ).SerializeToString()


def _bytes_for(wire: str) -> st.SearchStrategy[bytes]:
    plausible: st.SearchStrategy[bytes]
    if "descriptor" in wire:
        plausible = st.one_of(
            st.tuples(_text_for("schema"), _text_for("table")).map(list),
            st.lists(st.one_of(_text_for("schema"), _text_for("table")), max_size=3),
        ).map(_path_descriptor)
    elif "schema" in wire:
        plausible = arrow_batches().map(lambda data: data[0].serialize().to_pybytes())
    else:
        plausible = MSGPACK_VALUES.map(lambda v: msgpack.packb(v))
    return st.one_of(plausible, plausible, st.binary(max_size=40))


def _field_value(spec: Any) -> st.SearchStrategy[Any]:
    """A value of the field's wire kind."""
    kind = spec.kind
    if kind == "str":
        return _text_for(spec.wire)
    if kind in ("bytes", "base64"):
        return _bytes_for(spec.wire)
    if kind == "bool":
        return st.booleans()
    largest = 2**64 - 1 if "uint" in kind else 2**63 - 1
    numbers = st.one_of(st.integers(-3, 10), st.integers(-(2**63), largest))
    if kind in ("int64", "uint64"):
        return numbers
    if kind.startswith("list[int"):
        return st.lists(numbers, max_size=4)
    if kind == "list[str]":
        return st.lists(_text_for(spec.wire), max_size=3)
    if kind == "map[str, str]":
        return st.dictionaries(TEXT, TEXT, max_size=3)
    if kind.startswith("payload:"):
        return _payload_body(getattr(payloads, kind.split(":", 1)[1]))
    return MSGPACK_VALUES


def _payload_body(payload: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Mostly every field of its kind (what gets past decoding to the catalog); otherwise
    fields left out, and any field of any kind (the codec's refusal, never a crash)."""
    whole = st.fixed_dictionaries({spec.wire: _field_value(spec) for spec in payload.FIELDS})
    partial = st.fixed_dictionaries(
        {}, optional={spec.wire: _field_value(spec) for spec in payload.FIELDS}
    )
    one_wrong = st.tuples(
        whole, st.sampled_from([spec.wire for spec in payload.FIELDS]), MSGPACK_VALUES
    ).map(lambda drawn: {**drawn[0], drawn[1]: drawn[2]})
    return st.one_of(whole, whole, partial, one_wrong)


def _action_payloads() -> dict[str, Any]:
    """Each DoAction's request payload, as the contract names it."""
    rows = [*ACTIONS.values(), *DDL_ACTIONS.values()]
    return {row.name: row.request for row in rows if row.request is not None}


ACTION_PAYLOADS = _action_payloads()


@pytest.fixture(scope="module")
def ddl_srv() -> Iterator[Running]:
    """A server of its own: the fuzz below creates, drops and alters what it finds."""
    catalog = memory_demo_catalog()
    server = AirportServer(catalog, MemoryTransactionManager(), ServerConfig(port=0)).start()
    running = Running(server, catalog, None)
    yield running
    running.client.close()
    server.stop(0)
    if COUNTS:
        print("\nfuzz outcomes:", json.dumps(dict(sorted(COUNTS.items()))))


@settings(FUZZ, max_examples=EXAMPLES * 5)  # 21 actions: some twenty cases each in CI
@given(
    data=st.sampled_from(sorted(ACTION_PAYLOADS)).flatmap(
        lambda action: st.tuples(st.just(action), _payload_body(ACTION_PAYLOADS[action]))
    )
)
@example(
    data=(
        "flight_info",
        {
            "descriptor": _path_descriptor(["dml_schema", "users"]),
            "at_unit": "VERSION",
            "at_value": "²",
        },
    )
)
def test_fuzz_every_action_with_bodies_of_its_shape(
    ddl_srv: Running, data: tuple[str, dict[str, Any]]
) -> None:
    """Each action the server lists, with bodies of its contract payload's shape: the names
    the catalog has and lacks, hostile text, numbers past 64 bits, schemas of any type."""
    action, body = data
    before = _snapshot(ddl_srv)
    code, message = _rpc(
        lambda: ddl_srv.client.stub.DoAction(
            flight_pb2.Action(type=action, body=msgpack.packb(body))
        )
    )
    ddl = DDL_ACTIONS.get(action)
    refusal = ddl.failed.template.split("{")[0] if ddl is not None else ""
    _check(ddl_srv, before, code, message, f"DoAction {action}", backend_refusal=refusal)


def test_the_fuzz_reaches_every_action_the_server_lists(ddl_srv: Running) -> None:
    listed = {a.type for a in ddl_srv.client.stub.ListActions(flight_pb2.Empty())}
    assert listed - {"create_transaction", "get_transaction_status", "delete"} == set(
        ACTION_PAYLOADS
    )
