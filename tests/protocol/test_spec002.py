"""Spec 002 over the wire: DoPut INSERT/UPDATE, DoAction DELETE, transactions, every error row."""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import msgpack
import pyarrow as pa
import pyarrow.flight as flight
import pytest

from airport_contracts import Context, DMLOptions, DMLResult, flight_pb2
from airport_contracts.contract import ERROR_TABLE
from pyairport.backends.memory import memory_table
from pyairport.catalog import CatalogSchema, MutableCatalog
from pyairport.client import AirportClient, RemoteError
from pyairport.demo import LEGACY, USERS_COLUMNS
from pyairport.server import AirportServer, ServerConfig
from pyairport.transactions import MemoryTransactionManager, TransactionError
from pyairport.wire.ipc import batch_message, read_message, schema_message

from .conftest import (
    HUGE_BYTES,
    FailingInsert,
    Running,
    assert_error_row,
    compressed_messages,
    huge_name,
    users,
)


def _go_json(value: dict[str, Any]) -> bytes:
    """json.Marshal of a Go map: keys sorted, no spaces."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


# --- the Go client examples of spec 002, redone from Python ------------------------------------


def test_go_example_insert_via_doput(srv: Running) -> None:
    """insertRows: descriptor map without "returning", one RecordBatch, msgpack PutResult."""
    command = _go_json({"operation": "insert", "schema_name": "dml_schema", "table_name": "users"})
    data = users([1, 2, 3])
    client = flight.connect(srv.server.location)
    writer, metadata = client.do_put(flight.FlightDescriptor.for_command(command), data.schema)
    writer.write_table(data)
    writer.done_writing()
    result = metadata.read()
    writer.close()
    client.close()
    response = msgpack.unpackb(result.to_pybytes())
    assert response == {"status": "success", "affected_rows": 3}
    assert len(srv.rows("dml_schema")) == 3


def test_go_example_delete_with_transaction(tx_srv: Running) -> None:
    """deleteWithTx: x-transaction-id header, JSON action body, JSON result."""
    tx_srv.client.insert("dml_schema", "users", users([1, 2, 3]))
    tx = tx_srv.client.begin_transaction()
    assert tx is not None
    body = _go_json({"schema_name": "dml_schema", "table_name": "users", "row_ids": [1, 3]})
    (result,) = tx_srv.client.action("delete", body, headers={"x-transaction-id": tx})
    assert json.loads(result) == {"status": "success", "affected_rows": 2}
    assert [r["rowid"] for r in tx_srv.rows("dml_schema")] == [2]
    assert tx_srv.client.transaction_status(tx) == ("committed", True)


# --- operations and RETURNING ------------------------------------------------------------------


@pytest.mark.parametrize("schema", ["dml_schema", "batch_schema"])
def test_put_insert_returning(srv: Running, schema: str) -> None:
    answer = srv.client.put_insert(schema, "users", users([None, 9], ["a", "b"]), returning=True)
    assert (answer.status, answer.affected_rows) == ("success", 2)
    assert answer.returning is not None and answer.returning.column("id").to_pylist() == [1, 9]


def test_put_streams_the_bytes_protobuf_writes_and_needs_a_put_result() -> None:
    """AirportClient's DoPut messages are FlightData as protobuf writes it (the descriptor with
    the schema, then one message per batch); a server that ends DoPut without a PutResult is a
    clear error."""
    received: list[bytes] = []

    def put(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
        received.extend(requests)
        yield from ()

    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    raw = grpc.stream_stream_rpc_method_handler(put)  # no (de)serializers: bytes
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "arrow.flight.protocol.FlightService", {"DoPut": raw}
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with AirportClient(f"grpc://127.0.0.1:{port}") as client:
            with pytest.raises(ValueError, match="the server ended DoPut without a PutResult"):
                client.put_insert("dml_schema", "users", iter(users([1, 2, 3]).to_batches(1)))
    finally:
        server.stop(0)
    messages = [flight_pb2.FlightData.FromString(wire) for wire in received]
    assert [m.SerializeToString() for m in messages] == received
    assert messages[0].flight_descriptor.type == flight_pb2.FlightDescriptor.CMD
    assert json.loads(messages[0].flight_descriptor.cmd)["table_name"] == "users"
    batches = [pa.ipc.read_record_batch(read_message(m), USERS_COLUMNS) for m in messages[1:]]
    assert pa.Table.from_batches(batches).column("id").to_pylist() == [1, 2, 3]
    assert [b.num_rows for b in batches] == [1, 1, 1]


@pytest.mark.parametrize("schema", ["dml_schema", "batch_schema"])
def test_put_update_matches_rows_by_position(srv: Running, schema: str) -> None:
    srv.client.insert(schema, "users", users([1, 2, 3]))
    answer = srv.client.put_update(
        schema, "users", [3, 1], users([30, 10], ["three", "one"]), returning=True
    )
    assert answer.affected_rows == 2
    assert answer.returning is not None and answer.returning.column("name").to_pylist() == [
        "three",
        "one",
    ]
    assert [(r["rowid"], r["id"], r["name"]) for r in srv.rows(schema)] == [
        (1, 10, "one"),
        (2, 2, "user_2"),
        (3, 30, "three"),
    ]


@pytest.mark.parametrize("schema", ["dml_schema", "batch_schema"])
def test_action_delete_returning_is_base64_ipc(srv: Running, schema: str) -> None:
    srv.client.insert(schema, "users", users([1, 2]))
    body = _go_json(
        {"schema_name": schema, "table_name": "users", "row_ids": [2], "returning": True}
    )
    (result,) = srv.client.action("delete", body)
    decoded = json.loads(result)
    assert decoded["status"] == "success" and decoded["affected_rows"] == 1
    table = pa.ipc.open_stream(base64.b64decode(decoded["returning_data"])).read_all()
    assert table.column("id").to_pylist() == [2]


# --- every DoPut / DoAction error row on the wire ------------------------------------------------


class _BrokenManager(MemoryTransactionManager):
    def begin_transaction(self, ctx: Context) -> str:
        raise OSError("transaction log unavailable")


@contextlib.contextmanager
def _custom(catalog: MutableCatalog, manager: Any = None) -> Iterator[Running]:
    server = AirportServer(catalog, manager, ServerConfig(port=0)).start()
    running = Running(server, catalog, manager)
    try:
        yield running
    finally:
        running.client.close()
        server.stop(0)


def _failing_insert(srv: Running) -> RemoteError:
    with _custom(MutableCatalog("", [CatalogSchema("s", tables=[FailingInsert()])])) as running:  # type: ignore[list-item]
        return _error(lambda: running.client.put_insert("s", "users", users([1])))


def _broken_manager(srv: Running) -> RemoteError:
    with _custom(MutableCatalog(), _BrokenManager()) as running:
        return _error(lambda: running.client.begin_transaction())


def _error(call: Callable[[], object]) -> RemoteError:
    with pytest.raises(RemoteError) as err:
        call()
    return err.value


def _raw_put(
    srv: Running, messages: list[flight_pb2.FlightData], headers: dict[str, str] | None = None
) -> RemoteError:
    def call() -> None:
        try:
            list(srv.client.stub.DoPut(iter(messages), metadata=sorted((headers or {}).items())))
        except grpc.RpcError as error:
            raise RemoteError(error.code(), error.details()) from None  # type: ignore[attr-defined]

    return _error(call)


def _raw_exchange(
    srv: Running, messages: list[flight_pb2.FlightData], headers: list[tuple[str, str]]
) -> RemoteError:
    def call() -> None:
        try:
            list(srv.client.stub.DoExchange(iter(messages), metadata=headers))
        except grpc.RpcError as error:
            raise RemoteError(error.code(), error.details()) from None  # type: ignore[attr-defined]

    return _error(call)


def _cmd(command: bytes, table: pa.Table) -> list[flight_pb2.FlightData]:
    first = schema_message(table.schema)
    first.flight_descriptor.CopyFrom(
        flight_pb2.FlightDescriptor(type=flight_pb2.FlightDescriptor.CMD, cmd=command)
    )
    return [first, *(batch_message(b) for b in table.to_batches())]


def _seeded(srv: Running) -> Running:
    srv.client.insert("dml_schema", "users", users([1, 2]))
    return srv


U = users([1])
PUT = {"operation": "insert", "schema_name": "dml_schema", "table_name": "users"}
UPD = {"operation": "update", "schema_name": "dml_schema", "table_name": "users", "row_ids": [1]}

TRIGGERS: dict[str, tuple[Callable[[Running], RemoteError], dict[str, Any], str]] = {
    # id: (trigger, message params, server fixture)
    "schema_not_found": (
        lambda s: _error(lambda: s.client.put_insert("analytics", "events", U)),
        {"schema": "analytics"},
        "srv",
    ),
    "table_not_found": (
        lambda s: _error(lambda: s.client.action_delete("dml_schema", "events", [1])),
        {"schema": "dml_schema", "table": "events"},
        "srv",
    ),
    "insert_not_supported": (
        lambda s: _error(lambda: s.client.put_insert("demo_schema", "readonly", U)),
        {"table": "readonly"},
        "srv",
    ),
    "column_count_mismatch": (
        lambda s: _error(
            lambda: s.client.put_insert("dml_schema", "users", U.drop_columns(["email"]))
        ),
        {"table_columns": 3, "input_columns": 2},
        "srv",
    ),
    "schema_mismatch": (
        lambda s: _error(
            lambda: s.client.put_insert(
                "dml_schema", "users", U.set_column(2, "email", pa.array([5], pa.int64()))
            )
        ),
        {"details": "column 2 is 'email' (int64), table has 'email' (string)"},
        "srv",
    ),
    "update_empty_row_ids": (
        lambda s: _error(lambda: s.client.put_update("dml_schema", "users", [], U)),
        {},
        "srv",
    ),
    "row_count_mismatch": (
        lambda s: _error(
            lambda: s.client.put_update("dml_schema", "users", [1, 2, 3, 4], users([1, 2, 3]))
        ),
        {"row_ids": 4, "rows": 3},
        "srv",
    ),
    "update_no_rowid": (
        lambda s: _error(lambda: s.client.put_update("demo_schema", "readonly", [1], U)),
        {"table": "readonly"},
        "srv",
    ),
    "row_not_found": (
        lambda s: _error(
            lambda: _seeded(s).client.put_update("dml_schema", "users", [1, 99], users([1, 2]))
        ),
        {"row_id": 99},
        "srv",
    ),
    "delete_empty_row_ids": (
        lambda s: _error(lambda: s.client.action_delete("dml_schema", "users", [])),
        {},
        "srv",
    ),
    "delete_no_rowid": (
        lambda s: _error(lambda: s.client.action_delete("demo_schema", "readonly", [1])),
        {"table": "readonly"},
        "srv",
    ),
    "missing_descriptor": (
        lambda s: _raw_put(s, [schema_message(U.schema)]),
        {},
        "srv",
    ),
    "invalid_put_operation": (
        lambda s: _error(lambda: s.client.put_command(_go_json({**PUT, "operation": "upsert"}), U)),
        {"operation": "upsert"},
        "srv",
    ),
    "invalid_payload": (
        lambda s: _error(lambda: s.client.put_command(_go_json({**UPD, "row_ids": "1"}), U)),
        {
            "payload": "UpdateDescriptor",
            "problem": "field 'row_ids' must be a list of integers, got string",
        },
        "srv",
    ),
    "operation_failed": (_failing_insert, {"operation": "INSERT", "error": "disk full"}, "srv"),
    "transaction_not_active": (
        lambda s: _aborted_tx_error(s),
        {"tx_id": "<tx>", "state": "aborted"},
        "tx_srv",
    ),
    "transaction_not_found": (
        lambda s: _error(
            lambda: s.client.put_insert("dml_schema", "users", U, transaction_id="nope")
        ),
        {"tx_id": "nope"},
        "tx_srv",
    ),
    "no_transaction_manager": (
        lambda s: _error(
            lambda: s.client.put_insert("dml_schema", "users", U, transaction_id="tx-1")
        ),
        {},
        "srv",
    ),
    "invalid_action_parameters": (
        lambda s: _error(lambda: s.client.action("create_transaction", b"\xc1")),
        {"error": None},
        "tx_srv",
    ),
    "create_transaction_failed": (_broken_manager, {"error": "transaction log unavailable"}, "srv"),
    "unknown_action": (
        lambda s: _error(lambda: s.client.action("commit_transaction", b"")),
        {"type": "commit_transaction"},
        "srv",
    ),
}

NOT_ON_THE_WIRE = {
    "encode_response_failed": "encoding a fixed-shape msgpack map of strings and booleans cannot fail",
}


def _aborted_tx_error(s: Running) -> RemoteError:
    """A statement after one that failed in the same transaction."""
    tx = s.client.begin_transaction()
    assert tx is not None
    s.client.put_insert("dml_schema", "users", U, transaction_id=tx)
    _error(lambda: s.client.put_update("dml_schema", "users", [999], U, transaction_id=tx))
    error = _error(lambda: s.client.put_insert("dml_schema", "users", U, transaction_id=tx))
    error.message = error.message.replace(tx, "<tx>")
    return error


TESTED_ELSEWHERE = {
    "reader_creation_failed": "test_reader_creation_failure_on_doput",
    "row_ids_limit": "tests/protocol/test_auth_limits.py::test_row_ids_limit",
    "rows_refused": "tests/backend/test_lake.py::test_constraints_refuse_rows_and_change_nothing",
}


def test_every_doput_and_doaction_row_is_triggered_or_explained() -> None:
    from .test_ddl import DDL_ROWS  # the DDL actions are tested there
    from .test_function_errors import FUNCTION_ROWS  # and the function calls there
    from .test_read_side import READ_SIDE_ROWS  # the read-side actions are tested there
    from .test_statistics import STATISTICS_ROWS  # and column_statistics there

    rows = {r.id for r in ERROR_TABLE if {"doput", "doaction"} & set(r.protocols)}
    rows -= READ_SIDE_ROWS | DDL_ROWS | FUNCTION_ROWS | STATISTICS_ROWS
    assert rows <= set(TRIGGERS) | set(NOT_ON_THE_WIRE) | set(TESTED_ELSEWHERE)


@pytest.mark.parametrize("row_id", sorted(TRIGGERS))
def test_error_row_on_the_wire(row_id: str, request: pytest.FixtureRequest) -> None:
    trigger, params, fixture = TRIGGERS[row_id]
    error = trigger(request.getfixturevalue(fixture))
    assert_error_row(row_id, params, error.code, error.message)


def test_failed_statements_change_nothing(srv: Running) -> None:
    srv.client.insert("dml_schema", "users", users([1, 2]))
    before = srv.rows("dml_schema")
    for call in (
        lambda: srv.client.put_update("dml_schema", "users", [1, 99], users([5, 6])),
        lambda: srv.client.put_update("dml_schema", "users", [1], users([5, 6])),
        lambda: srv.client.put_insert("dml_schema", "users", U.drop_columns(["email"])),
    ):
        _error(call)
    assert srv.rows("dml_schema") == before


def test_reader_creation_failure_on_doput(srv: Running) -> None:
    bad = flight_pb2.FlightData(
        flight_descriptor=flight_pb2.FlightDescriptor(
            type=flight_pb2.FlightDescriptor.CMD, cmd=_go_json(PUT)
        ),
        data_header=b"\x00" * 16,
    )
    error = _raw_put(srv, [bad])
    assert error.code == grpc.StatusCode.INTERNAL and error.message.startswith(
        "failed to create input record reader: "
    )


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        (b"{not json", "invalid descriptor: not valid JSON: "),
        (b"[1]", "invalid descriptor: expected a JSON object"),
        (
            _go_json({"schema_name": "s", "table_name": "t"}),
            "invalid descriptor: missing field 'operation'",
        ),
        (
            _go_json({"operation": "insert", "table_name": "t"}),
            "invalid InsertDescriptor: missing field 'schema_name'",
        ),
        (
            _go_json({**PUT, "returning": 1}),
            "invalid InsertDescriptor: field 'returning' must be a boolean, got integer",
        ),
    ],
)
def test_malformed_descriptors_are_invalid_argument_naming_the_problem(
    srv: Running, command: bytes, problem: str
) -> None:
    error = _error(lambda: srv.client.put_command(command, U))
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT and error.message.startswith(problem)


def test_malformed_delete_action(srv: Running) -> None:
    error = _error(
        lambda: srv.client.action("delete", b'{"schema_name": "dml_schema", "row_ids": [1]}')
    )
    assert (error.code, error.message) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "invalid DeleteAction: missing field 'table_name'",
    )


# --- transactions: life cycle, idempotence, rollback on all three protocols --------------------


def test_transaction_life_cycle_with_status_after_each_step(tx_srv: Running) -> None:
    c = tx_srv.client
    tx = c.begin_transaction("")
    assert tx is not None and c.transaction_status(tx) == ("active", True)
    c.put_insert("dml_schema", "users", users([1, 2]), transaction_id=tx)
    assert c.transaction_status(tx) == ("committed", True)
    tx2 = c.begin_transaction()
    assert tx2 is not None and tx2 != tx
    _error(lambda: c.put_update("dml_schema", "users", [1, 42], users([7, 8]), transaction_id=tx2))
    assert c.transaction_status(tx2) == ("aborted", True)
    assert c.transaction_status("non-existent-tx-id") == ("", False)


class _Failing:
    """Every DML method does its work, then fails: rollback must leave no trace."""

    def __init__(self) -> None:
        self.inner = memory_table("users", USERS_COLUMNS, LEGACY, rows=users([1, 2, 3]))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _then_fail(self, result: DMLResult) -> DMLResult:
        raise RuntimeError("replica lost")

    def insert(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        return self._then_fail(self.inner.insert(ctx, rows, opts))

    def update_by_row_ids(
        self, ctx: Context, ids: pa.Int64Array, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        return self._then_fail(self.inner.update_by_row_ids(ctx, ids, rows, opts))

    def delete_by_row_ids(
        self, ctx: Context, ids: pa.Int64Array, opts: DMLOptions | None
    ) -> DMLResult:
        return self._then_fail(self.inner.delete_by_row_ids(ctx, ids, opts))


@pytest.fixture
def failing() -> Iterator[Running]:
    catalog = MutableCatalog("", [CatalogSchema("s", tables=[_Failing()])])  # type: ignore[list-item]
    with _custom(catalog, MemoryTransactionManager()) as running:
        yield running


@pytest.mark.parametrize(
    "call",
    [
        lambda c, tx: c.insert("s", "users", users([9]), transaction_id=tx),
        lambda c, tx: c.update(
            "s",
            "users",
            pa.table({"name": ["x"], "rowid": pa.array([1], pa.int64())}),
            returning=True,
            transaction_id=tx,
        ),
        lambda c, tx: c.delete("s", "users", [1, 2], transaction_id=tx),
        lambda c, tx: c.put_insert("s", "users", users([9]), transaction_id=tx),
        lambda c, tx: c.put_update("s", "users", [1], users([9]), transaction_id=tx),
        lambda c, tx: c.action_delete("s", "users", [1], transaction_id=tx),
    ],
    ids=[
        "exchange-insert",
        "exchange-update",
        "exchange-delete",
        "put-insert",
        "put-update",
        "action-delete",
    ],
)
def test_failure_rolls_back_on_every_protocol(
    failing: Running, call: Callable[[Any, str], object]
) -> None:
    before = failing.table("s").to_table()
    tx = failing.client.begin_transaction()
    assert tx is not None
    error = _error(lambda: call(failing.client, tx))
    assert error.code == grpc.StatusCode.INTERNAL and error.message.endswith("failed: replica lost")
    assert failing.client.transaction_status(tx) == ("aborted", True)
    assert failing.table("s").to_table().equals(before)


def test_manager_commit_and_rollback_are_idempotent() -> None:
    manager = MemoryTransactionManager()
    ctx = Context.background()
    tx = manager.begin_transaction(ctx)
    manager.commit_transaction(ctx, tx)
    manager.commit_transaction(ctx, tx)
    assert manager.get_transaction_status(ctx, tx)[0].value == "committed"  # type: ignore[union-attr]
    # a failed later statement aborts it (deviation transaction_spans_statements), once
    manager.rollback_transaction(ctx, tx)
    manager.rollback_transaction(ctx, tx)
    assert manager.get_transaction_status(ctx, tx)[0].value == "aborted"  # type: ignore[union-attr]
    other = manager.begin_transaction(ctx)
    manager.rollback_transaction(ctx, other)
    manager.rollback_transaction(ctx, other)
    with pytest.raises(TransactionError, match="is aborted, cannot become committed"):
        manager.commit_transaction(ctx, other)
    with pytest.raises(TransactionError, match="transaction unknown not found"):
        manager.commit_transaction(ctx, "unknown")
    manager.rollback_transaction(ctx, "unknown")  # not an infrastructure failure


def test_tables_see_the_transaction_id_through_the_context(tx_srv: Running) -> None:
    from airport_contracts import transaction_id_from_context

    table = tx_srv.table("dml_schema")
    seen: list[tuple[str, bool]] = []
    original = table.insert

    def insert(ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None) -> DMLResult:
        seen.append(transaction_id_from_context(ctx))
        return original(ctx, rows, opts)

    table.insert = insert
    tx = tx_srv.client.begin_transaction()
    assert tx is not None
    tx_srv.client.put_insert("dml_schema", "users", users([1]), transaction_id=tx)
    tx_srv.client.insert("dml_schema", "users", users([2]))
    assert seen == [(tx, True), ("", False)]


def test_row_ids_exist_asks_for_the_named_rows_and_reads_a_batch_at_a_time(srv: Running) -> None:
    """A DoPut UPDATE's row_ids_exist asks the table for the rows its rowids name (their list;
    the range they span for a long one) and reads the answer a batch at a time, stopping once
    every rowid is found: a table that ignores the filter is read no further than needed, and
    the check holds no table in memory whatever its size."""
    from dataclasses import replace

    from pyairport import filters

    srv.client.insert("dml_schema", "users", users(list(range(1, 5_001))))
    table = srv.table("dml_schema")
    schema = table.arrow_schema()
    asked: list[Any] = []
    served: list[int] = []
    scan = table.scan

    def unfiltered(ctx: Context, opts: Any) -> pa.RecordBatchReader:
        """The table's rows in 100-row batches, the filter noted and ignored."""
        asked.append(filters.parse(opts.filter, schema))
        rows = scan(ctx, replace(opts, filter=None)).read_all()

        def batches() -> Iterator[pa.RecordBatch]:
            for batch in rows.to_batches(max_chunksize=100):
                served.append(batch.num_rows)
                yield batch

        return pa.RecordBatchReader.from_batches(rows.schema, batches())

    table.scan = unfiltered
    rowids = srv.rowids_where("dml_schema", id=3) + srv.rowids_where("dml_schema", id=4)
    answer = srv.client.put_update("dml_schema", "users", rowids, users([3, 4], ["c", "d"]))
    assert answer.affected_rows == 2
    assert asked == [filters.In("rowid", tuple(rowids), negated=False)]
    assert served == [100]  # both rowids are in the first batch: nothing more is read
    asked.clear()
    every = [r["rowid"] for r in srv.rows("dml_schema")]
    named = [*every[:2_000], max(every) + 7, every[2_000]]
    error = _error(
        lambda: srv.client.put_update("dml_schema", "users", named, users(list(range(len(named)))))
    )
    assert_error_row("row_not_found", {"row_id": max(every) + 7}, error.code, error.message)
    assert asked == [filters.Between("rowid", min(named), max(named), True, True)]
    first = srv.rows("dml_schema")[0]
    assert (first["id"], first["name"]) == (1, "user_1")  # the failed statement changed nothing


def test_compressed_batches_are_read_up_to_the_message_limit(srv: Running) -> None:
    """A client's ZSTD-compressed batches are read on DoPut and DoExchange (arrow-go's reader
    reads them too); one that would decompress to more than a message may carry is refused
    before it is decompressed (deviation decompressed_input_bounded), and nothing changes."""

    def put(table: pa.Table) -> list[flight_pb2.FlightData]:
        messages = compressed_messages(table)
        descriptor = flight_pb2.FlightDescriptor(
            type=flight_pb2.FlightDescriptor.CMD, cmd=json.dumps(PUT).encode()
        )
        messages[0].flight_descriptor.CopyFrom(descriptor)
        return messages

    list(srv.client.stub.DoPut(iter(put(users([1], ["Ann"])))))
    exchange = [("airport-flight-path", "dml_schema/users"), ("airport-operation", "insert")]
    list(
        srv.client.stub.DoExchange(iter(compressed_messages(users([2], ["Bo"]))), metadata=exchange)
    )
    stored = srv.rows("dml_schema")
    assert sorted(r["name"] for r in stored) == ["Ann", "Bo"]
    huge = pa.table({"id": [3], "name": huge_name()["name"], "email": ["c@x"]})
    for refused in (
        _raw_put(srv, put(huge)),
        _raw_exchange(srv, compressed_messages(huge), exchange),
    ):
        params = {"size": str(8 + HUGE_BYTES + 8 + 8 + 3), "limit": str(64 * 1024 * 1024)}
        assert_error_row("input_batch_too_large", params, refused.code, refused.message)
    assert srv.rows("dml_schema") == stored
