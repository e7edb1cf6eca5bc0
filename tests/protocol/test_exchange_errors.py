"""Every DoExchange row of the error table, triggered on the wire: gRPC code and exact message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pyarrow as pa
import pytest

from airport_contracts import Context, DMLOptions, DMLResult, flight_pb2
from airport_contracts.contract import ERROR_TABLE, ErrorRow
from pyairport.backends.memory import memory_table
from pyairport.catalog import CatalogSchema, MutableCatalog
from pyairport.wire.ipc import batch_message, schema_message

from .conftest import (
    HUGE_BYTES,
    FailingInsert,
    Running,
    assert_error_row,
    compressed_messages,
    huge_name,
    serving,
    users,
)


def _call(
    srv: Running, headers: dict[str, str], messages: list[flight_pb2.FlightData]
) -> tuple[grpc.StatusCode, str, list[flight_pb2.FlightData]]:
    received: list[flight_pb2.FlightData] = []
    try:
        for data in srv.client.stub.DoExchange(iter(messages), metadata=sorted(headers.items())):
            received.append(data)
    except grpc.RpcError as error:
        return error.code(), error.details(), received  # type: ignore[attr-defined]
    return grpc.StatusCode.OK, "", received


def _dml(op: str, path: str = "dml_schema/users") -> dict[str, str]:
    return {"airport-operation": op, "airport-flight-path": path}


def _stream(table: pa.Table) -> list[flight_pb2.FlightData]:
    return [schema_message(table.schema)] + [batch_message(b) for b in table.to_batches()]


USERS = users([1])


class _Raising:
    """A catalog whose lookups fail: the *_lookup_failed rows."""

    def __init__(self, fail: str) -> None:
        self.fail = fail

    def schemas(self, ctx: Context) -> list[Any]:
        return []

    def schema(self, ctx: Context, name: str) -> Any:
        if self.fail == "schema":
            raise OSError("metastore unreachable")
        outer = self

        class _Schema:
            def name(self) -> str:
                return name

            def comment(self) -> str:
                return ""

            def tables(self, ctx: Context) -> list[Any]:
                return []

            def table(self, ctx: Context, table: str) -> Any:
                raise OSError(f"cannot list {outer.fail}")

        return _Schema()


class _BadReturning:
    """A table whose RETURNING data does not fit the output schema (protocol §1.8)."""

    def __init__(self, returned: pa.RecordBatch) -> None:
        self.inner = memory_table(
            "users", pa.schema([("id", pa.int64()), ("at", pa.timestamp("us"))])
        )
        self.returned = returned

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def delete_batch(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        reader = pa.RecordBatchReader.from_batches(self.returned.schema, [self.returned])
        return DMLResult(affected_rows=1, returning_data=reader)


def _with_bad_returning(**columns: pa.Array) -> tuple[grpc.StatusCode, str]:
    returned = pa.RecordBatch.from_pydict(columns)
    catalog = MutableCatalog("", [CatalogSchema("s", tables=[_BadReturning(returned)])])  # type: ignore[list-item]
    with serving(catalog) as running:
        rowids = pa.table({"rowid": pa.array([1], pa.int64())})
        headers = {**_dml("delete", "s/users"), "return-chunks": "1"}
        code, message, _ = _call(running, headers, _stream(rowids))
        return code, message


def _lookup_failure(fail: str) -> tuple[grpc.StatusCode, str]:
    with serving(_Raising(fail)) as running:
        code, message, _ = _call(running, _dml("insert"), _stream(USERS))
        return code, message


def _failing_insert() -> tuple[grpc.StatusCode, str]:
    with serving(MutableCatalog("", [CatalogSchema("s", tables=[FailingInsert()])])) as running:  # type: ignore[list-item]
        code, message, _ = _call(running, _dml("insert", "s/users"), _stream(USERS))
        return code, message


Trigger = Callable[[Running], tuple[grpc.StatusCode, str]]


def _on(
    srv: Running, headers: dict[str, str], messages: list[flight_pb2.FlightData]
) -> tuple[grpc.StatusCode, str]:
    code, message, _ = _call(srv, headers, messages)
    return code, message


TRIGGERS: dict[str, tuple[Trigger, dict[str, str]]] = {
    "missing_operation_header": (
        lambda s: _on(s, {"airport-flight-path": "dml_schema/users"}, _stream(USERS)),
        {},
    ),
    "missing_flight_path": (lambda s: _on(s, {"airport-operation": "insert"}, _stream(USERS)), {}),
    "invalid_flight_path": (
        lambda s: _on(s, _dml("insert", "a/b/c"), _stream(USERS)),
        {"path": "a/b/c"},
    ),
    "invalid_operation": (
        lambda s: _on(s, _dml("upsert"), _stream(USERS)),
        {"operation": "upsert"},
    ),
    "schema_lookup_failed": (
        lambda s: _lookup_failure("schema"),
        {"error": "metastore unreachable"},
    ),
    "table_lookup_failed": (lambda s: _lookup_failure("table"), {"error": "cannot list table"}),
    "schema_not_found": (
        lambda s: _on(s, _dml("insert", "nope/users"), _stream(USERS)),
        {"schema": "nope"},
    ),
    "table_not_found": (
        lambda s: _on(s, _dml("insert", "dml_schema/nope"), _stream(USERS)),
        {"schema": "dml_schema", "table": "nope"},
    ),
    "insert_not_supported": (
        lambda s: _on(s, _dml("insert", "demo_schema/readonly"), _stream(USERS)),
        {"table": "readonly"},
    ),
    "update_not_supported": (
        lambda s: _on(
            s,
            _dml("update", "demo_schema/readonly"),
            _stream(pa.table({"name": ["x"], "rowid": pa.array([1], pa.int64())})),
        ),
        {"table": "readonly"},
    ),
    "delete_not_supported": (
        lambda s: _on(
            s,
            _dml("delete", "demo_schema/readonly"),
            _stream(pa.table({"rowid": pa.array([1], pa.int64())})),
        ),
        {"table": "readonly"},
    ),
    "update_missing_rowid": (
        lambda s: _on(s, _dml("update"), _stream(pa.table({"name": ["x"]}))),
        {},
    ),
    "delete_missing_rowid": (
        lambda s: _on(s, _dml("delete"), _stream(pa.table({"id": pa.array([1], pa.int64())}))),
        {},
    ),
    "invalid_rowid_type": (
        lambda s: _on(s, _dml("delete"), _stream(pa.table({"rowid": ["1"]}))),
        {},
    ),
    "null_rowid": (
        lambda s: _on(
            s,
            _dml("update"),
            _stream(pa.table({"name": ["x"], "rowid": pa.array([None], pa.int64())})),
        ),
        {},
    ),
    "reader_creation_failed": (
        lambda s: _on(s, _dml("insert"), [flight_pb2.FlightData(data_header=b"\x00" * 16)]),
        {"error": None},  # pyarrow's own words about the bad flatbuffer; checked by prefix
    ),
    "operation_failed": (
        lambda s: _failing_insert(),
        {"operation": "INSERT", "error": "disk full"},
    ),
    "input_batch_too_large": (
        lambda s: _on(s, _dml("insert"), compressed_messages(huge_name())),
        {"size": str(8 + HUGE_BYTES), "limit": str(64 * 1024 * 1024)},
    ),
    "schema_mismatch": (
        lambda s: _on(s, _dml("insert"), _stream(pa.table({"nickname": ["x"]}))),
        {"details": "input column 'nickname' (string) is not a column of the table"},
    ),
    "returning_type_unconvertible": (
        lambda s: _with_bad_returning(id=pa.array([1], pa.int64()), at=pa.array(["2024-01-01"])),
        {"operation": "DELETE", "source": "string", "target": "timestamp[us]"},
    ),
    "returning_type_mismatch": (
        lambda s: _with_bad_returning(
            id=pa.array([1], pa.int32()), at=pa.array([0], pa.timestamp("us"))
        ),
        {"operation": "DELETE", "source": "int32", "target": "int64"},
    ),
}

# Rows no client can provoke over the wire, and where each is tested instead.
NOT_ON_THE_WIRE = {
    "missing_metadata": "grpc always sends user-agent, so a call never arrives without metadata (as in Go); "
    "tests/protocol/test_exchange_errors.py::test_missing_metadata_at_the_dispatcher",
    "send_schema_failed": "grpcio reports a failed send to the server as a cancelled call, never as a status the client sees",
    "encode_final_metadata_failed": "encoding one uint64 into msgpack cannot fail",
    "context_canceled": "only the client that cancelled could see it, and a cancelled call receives no status; "
    "tests/contract/test_spec000_scenarios.py (dispatcher) and test_disconnect_* (rollback) cover it",
    "deadline_exceeded": "grpc answers DEADLINE_EXCEEDED to the client itself when the deadline passes; "
    "the dispatcher's mapping is tested in tests/protocol/test_exchange_errors.py::test_deadline_reaches_the_table",
}


# Rows only a backend with rules of its own raises, tested on the wire there.
TESTED_ELSEWHERE = {
    "rows_refused": "tests/backend/test_lake.py::test_constraints_refuse_rows_and_change_nothing",
    "name_invalid": "tests/protocol/test_names.py::test_every_lookup_refuses_a_bad_name",
    "engine_unavailable": "tests/reliability/test_spark_death.py",
}


def _exchange_rows() -> list[ErrorRow]:
    return [
        r
        for r in ERROR_TABLE
        if "doexchange" in r.protocols or "any" in r.protocols and r.id not in _OTHER_PROTOCOLS
    ]


# "any" rows that only the DoPut/DoAction paths raise (their tests live with those protocols).
_OTHER_PROTOCOLS = {
    "catalog_not_found",  # routing, tested in tests/protocol/test_catalogs.py
    "invalid_payload",
    "transaction_not_active",
    "transaction_not_found",
    "unauthenticated",
    "auth_header_invalid",
    "auth_token_empty",
    "catalog_authorization_failed",
    "permission_denied",
}
# (the authentication rows are checked on every RPC in tests/protocol/test_auth_limits.py,
# the authorization rows on every RPC and action in tests/protocol/test_access.py)


def test_every_doexchange_row_is_triggered_or_explained() -> None:
    from .test_function_errors import FUNCTION_ROWS  # function calls are tested there

    ids = {r.id for r in _exchange_rows()} - FUNCTION_ROWS
    assert ids == set(TRIGGERS) | set(NOT_ON_THE_WIRE) | set(TESTED_ELSEWHERE)


@pytest.mark.parametrize("row_id", sorted(TRIGGERS))
def test_error_row_on_the_wire(srv: Running, row_id: str) -> None:
    trigger, params = TRIGGERS[row_id]
    code, message = trigger(srv)
    assert_error_row(row_id, params, code, message)


def test_errors_carry_no_arrow_trailers(srv: Running) -> None:
    try:
        list(
            srv.client.stub.DoExchange(
                iter(_stream(USERS)),
                metadata=[("airport-operation", "nope"), ("airport-flight-path", "a/b")],
            )
        )
    except grpc.RpcError as error:
        assert not [k for k, _ in error.trailing_metadata() if k.startswith("x-arrow")]  # type: ignore[attr-defined]


def test_missing_metadata_at_the_dispatcher() -> None:
    from airport_contracts import MissingMetadata
    from pyairport.dispatch import parse_exchange_headers

    with pytest.raises(MissingMetadata, match=r"^missing metadata$"):
        parse_exchange_headers({})


def test_header_order_first_failure_wins(srv: Running) -> None:
    code, message = _on(srv, {"x": "y"}, _stream(USERS))
    assert (code, message) == (grpc.StatusCode.INVALID_ARGUMENT, "missing airport-operation header")
    code, message = _on(srv, {"airport-operation": "nope"}, _stream(USERS))
    assert (
        message == "missing airport-flight-path in metadata"
    )  # path is checked before the operation's value


def test_deadline_reaches_the_table(srv: Running) -> None:
    """A client deadline becomes the Context deadline the table sees."""
    table = srv.table("dml_schema")
    seen: list[float | None] = []
    original = table.insert

    def insert(ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None) -> DMLResult:
        seen.append(ctx.deadline)
        return original(ctx, rows, opts)

    table.insert = insert
    list(
        srv.client.stub.DoExchange(
            iter(_stream(USERS)), metadata=sorted(_dml("insert").items()), timeout=30
        )
    )
    assert seen and seen[0] is not None
