"""DoExchange on the wire: message order and bytes (protocol §1.3-1.5), lock-step, safety
under disconnects and concurrency, other Flight clients, transactions."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import msgpack
import pyarrow as pa
import pyarrow.flight as flight
import pytest

from airport_contracts import Context, TransactionState, flight_pb2
from airport_contracts.contract import COMPATIBILITY_MATRIX, MatrixRow
from pyairport.backends.memory import memory_table
from pyairport.catalog import CatalogSchema, MutableCatalog
from pyairport.client import AirportClient, RemoteError
from pyairport.demo import USERS_COLUMNS, generated_users
from pyairport.server import AirportServer, ServerConfig
from pyairport.statement_scope import Statement
from pyairport.wire.ipc import batch_message, read_message, schema_message

from .conftest import Running, users

FINAL_3 = bytes.fromhex("81ad746f74616c5f6368616e676564cf0000000000000003")


def _headers(
    op: str, path: str = "dml_schema/users", returning: bool = False, tx: str = ""
) -> list[tuple[str, str]]:
    headers = {"airport-operation": op, "airport-flight-path": path}
    if returning:
        headers["return-chunks"] = "1"
    if tx:
        headers["airport-transaction-id"] = tx
    return sorted(headers.items())


def test_message_order_and_final_metadata_bytes(srv: Running) -> None:
    data = users([1, 2, 3])
    messages = [schema_message(data.schema)] + [
        batch_message(b) for b in data.to_batches(max_chunksize=2)
    ]
    out = list(srv.client.stub.DoExchange(iter(messages), metadata=_headers("insert")))
    assert len(out) == 2
    schema_out, final = out
    assert read_message(schema_out).type == "schema"
    assert (
        not schema_out.app_metadata
        and not schema_out.HasField("flight_descriptor")
        and not schema_out.data_body
    )
    assert final.app_metadata == FINAL_3 and not final.data_header and not final.data_body


@pytest.mark.parametrize("rows", [0, 1, 3000, 300_000])
def test_answers_are_the_bytes_protobuf_writes(srv: Running, rows: int) -> None:
    """The server encodes its DoExchange and DoGet answers itself (pyairport.ipc.encode_*),
    not through FlightData objects: on the wire each message must be exactly what protobuf
    writes for the same FlightData (body lengths here take one to four varint bytes)."""
    channel = grpc.insecure_channel(
        srv.server.location.removeprefix("grpc://"),
        options=[("grpc.max_receive_message_length", 64 << 20)],
    )
    service = "/arrow.flight.protocol.FlightService/"
    exchange = channel.stream_stream(
        service + "DoExchange", request_serializer=flight_pb2.FlightData.SerializeToString
    )
    do_get = channel.unary_stream(service + "DoGet", request_serializer=bytes)
    data = generated_users(rows)
    messages = [schema_message(data.schema), *map(batch_message, data.to_batches())]
    answers = list(exchange(iter(messages), metadata=_headers("insert", returning=True)))
    ticket = flight_pb2.Ticket(ticket=b'{"schema":"dml_schema","table":"users"}')
    scanned = list(do_get(ticket.SerializeToString()))
    channel.close()
    for wire in answers + scanned:
        assert flight_pb2.FlightData.FromString(wire).SerializeToString() == wire
    assert _rows_in(answers[:-1]) == rows  # schema, RETURNING batches, then the final metadata
    final = flight_pb2.FlightData.FromString(answers[-1])
    assert msgpack.unpackb(final.app_metadata) == {"total_changed": rows}
    assert _rows_in(scanned) == rows


@pytest.mark.parametrize("lock_step", [False, True])
def test_the_client_sends_the_bytes_protobuf_writes(lock_step: bool) -> None:
    """AirportClient encodes its DoExchange batches itself (pyairport.ipc.encode_batch): a
    server that records the raw request bytes finds exactly what protobuf writes, the
    descriptor, DuckDB's headers and the rows sent (body lengths of two to three varint
    bytes). With RETURNING it answers each message with itself, so lock-step works too."""
    received: list[bytes] = []
    headers: dict[str, str] = {}

    def exchange(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
        headers.update((k, v) for k, v in context.invocation_metadata() if isinstance(v, str))
        for wire in requests:
            received.append(wire)
            if headers.get("return-chunks") == "1":  # the schema, then a batch per batch
                yield wire
        yield flight_pb2.FlightData(app_metadata=FINAL_3).SerializeToString()

    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    raw = grpc.stream_stream_rpc_method_handler(exchange)  # no (de)serializers: bytes
    service = "arrow.flight.protocol.FlightService"
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service, {"DoExchange": raw}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    data = generated_users(3000)
    try:
        with AirportClient(f"grpc://127.0.0.1:{port}") as client:
            answer = client.insert(
                "dml_schema", "users", data, batch_rows=1000, returning=True, lock_step=lock_step
            )
    finally:
        server.stop(0)
    for wire in received:
        assert flight_pb2.FlightData.FromString(wire).SerializeToString() == wire
    first = flight_pb2.FlightData.FromString(received[0])
    assert first.flight_descriptor.type == flight_pb2.FlightDescriptor.PATH
    assert list(first.flight_descriptor.path) == ["dml_schema", "users"]
    assert headers["airport-operation"] == "insert"
    assert headers["airport-flight-path"] == "dml_schema/users"
    assert _table_in(received).equals(data)
    assert answer.returning is not None and answer.returning.equals(data)
    assert answer.total_changed == 3


def _table_in(wire_messages: list[bytes]) -> pa.Table:
    """The IPC stream given as FlightData wire bytes (a schema, then batches) as a table."""
    messages = [read_message(flight_pb2.FlightData.FromString(w)) for w in wire_messages]
    schema = pa.ipc.read_schema(messages[0])
    return pa.Table.from_batches(
        [pa.ipc.read_record_batch(m, schema) for m in messages[1:]], schema=schema
    )


def _rows_in(wire_messages: list[bytes]) -> int:
    return int(_table_in(wire_messages).num_rows)


def test_returning_batch_per_input_batch_then_final(srv: Running) -> None:
    data = users([1, 2, 3])
    messages = [schema_message(data.schema)] + [
        batch_message(b) for b in data.to_batches(max_chunksize=1)
    ]
    out = list(
        srv.client.stub.DoExchange(iter(messages), metadata=_headers("insert", returning=True))
    )
    kinds = [read_message(m).type if m.data_header else "final" for m in out]
    assert kinds == ["schema", "record batch", "record batch", "record batch", "final"]
    assert not any(m.app_metadata for m in out[:-1]) and out[-1].app_metadata == FINAL_3


def test_empty_input_gets_only_final_metadata(srv: Running) -> None:
    descriptor_only = flight_pb2.FlightData(
        flight_descriptor=flight_pb2.FlightDescriptor(type=1, path=["dml_schema", "users"])
    )
    out = list(srv.client.stub.DoExchange(iter([descriptor_only]), metadata=_headers("update")))
    assert [m.app_metadata for m in out] == [
        bytes.fromhex("81ad746f74616c5f6368616e676564cf0000000000000000")
    ]


def test_schema_then_no_batches_is_schema_and_zero(srv: Running) -> None:
    schema = pa.schema([pa.field("rowid", pa.int64())])
    out = list(
        srv.client.stub.DoExchange(
            iter([schema_message(schema)]), metadata=_headers("delete", returning=True)
        )
    )
    assert (
        read_message(out[0]).type == "schema"
        and out[-1].app_metadata.endswith(bytes(8))
        and len(out) == 2
    )


def _total_changed(out: list[flight_pb2.FlightData]) -> int:
    return int(msgpack.unpackb(out[-1].app_metadata)["total_changed"])


def test_batches_that_change_nothing_count_as_on_every_backend(any_srv: Running) -> None:
    """An empty batch of rowids, and an UPDATE of rowids alone (no column to set: DuckDB
    never sends one, a client may), change nothing and succeed on every backend, counted as
    DoExchange counts (the rows sent, as Go); Spark was given `IN ()` and an UPDATE without
    SET (INTERNAL, in its parser's words)."""
    path = "batch_schema/users"
    any_srv.client.insert("batch_schema", "users", users([1, 2]))
    ids = any_srv.client.scan("batch_schema", "users", ["rowid"]).read_all().column("rowid")
    rowids = pa.schema([pa.field("rowid", pa.int64(), metadata={"is_rowid": "1"})])
    for op, batch, changed in (
        ("delete", [], 0),
        ("update", [], 0),
        ("update", ids.to_pylist(), 2),
        ("update", [*ids.to_pylist(), 10**9], 3),  # with a rowid no row has
    ):
        data = pa.RecordBatch.from_arrays([pa.array(batch, pa.int64())], schema=rowids)
        messages = [schema_message(rowids), batch_message(data)]
        out = list(any_srv.client.stub.DoExchange(iter(messages), metadata=_headers(op, path)))
        assert _total_changed(out) == changed, (op, batch)
    rows = any_srv.client.scan("batch_schema", "users", ["id", "name"]).read_all()
    assert sorted(rows.to_pylist(), key=str) == [
        {"id": 1, "name": "user_1"},
        {"id": 2, "name": "user_2"},
    ]


def _lock_step_call(
    srv: Running, headers: list[tuple[str, str]], schema: pa.Schema
) -> tuple[queue.Queue[object], Iterator[flight_pb2.FlightData]]:
    outbox: queue.Queue[object] = queue.Queue()

    def requests() -> Iterator[flight_pb2.FlightData]:
        while (item := outbox.get()) is not None:
            assert isinstance(item, flight_pb2.FlightData)
            yield item

    outbox.put(schema_message(schema))
    return outbox, srv.client.stub.DoExchange(requests(), metadata=headers)


def test_schema_arrives_before_any_batch_is_sent(srv: Running) -> None:
    """DuckDB reads the server schema right after Begin(), before writing a batch."""
    outbox, responses = _lock_step_call(srv, _headers("insert", returning=True), users([1]).schema)
    first = next(responses)  # would hang if the server waited for input batches
    assert read_message(first).type == "schema"
    outbox.put(None)
    assert list(responses)[-1].app_metadata


@pytest.fixture
def statement_log(monkeypatch: pytest.MonkeyPatch) -> queue.Queue[str]:
    """What the server does with statements, in order: "open", "commit", "rollback". A test
    waits on it before it reads a table, since a client's call can return before the server
    has finished the statement. (Each test has a server of its own.)"""
    log: queue.Queue[str] = queue.Queue()
    original_init, original_commit = Statement.__init__, Statement.commit
    original_rollback = Statement.rollback

    def init(self: Statement, statement_id: str) -> None:
        original_init(self, statement_id)
        log.put("open")

    def commit(self: Statement) -> None:
        original_commit(self)
        log.put("commit")

    def rollback(self: Statement) -> list[BaseException]:
        already = self.state == "rolled_back"
        errors = original_rollback(self)
        if not already:
            log.put("rollback")
        return errors

    monkeypatch.setattr(Statement, "__init__", init)
    monkeypatch.setattr(Statement, "commit", commit)
    monkeypatch.setattr(Statement, "rollback", rollback)
    return log


def _next_events(log: queue.Queue[str], count: int) -> list[str]:
    return [log.get(timeout=10) for _ in range(count)]


def _seed_three_users(srv: Running, log: queue.Queue[str]) -> list[dict[str, object]]:
    """Users 1-3 in dml_schema.users, committed; the table's rows."""
    srv.client.insert("dml_schema", "users", users([1, 2, 3]))
    assert _next_events(log, 2) == ["open", "commit"]
    return srv.rows("dml_schema")


def test_disconnect_mid_returning_update_leaves_table_unchanged(
    srv: Running, statement_log: queue.Queue[str]
) -> None:
    before = _seed_three_users(srv, statement_log)
    data = pa.table({"name": ["X"], "rowid": pa.array([1], pa.int64())})
    outbox, responses = _lock_step_call(srv, _headers("update", returning=True), data.schema)
    next(responses)  # schema
    outbox.put(batch_message(data.to_batches()[0]))
    assert read_message(next(responses)).type == "record batch"  # the first batch was processed
    responses.cancel()  # type: ignore[attr-defined]  # the client goes away mid-statement
    outbox.put(None)
    assert _next_events(statement_log, 2) == ["open", "rollback"]
    assert srv.rows("dml_schema") == before


class _SourceBroke(Exception):
    """The caller's data source failing half way through a statement."""


_Send = Callable[[AirportClient, str, str, Iterator[pa.RecordBatch]], object]
# An INSERT as AirportClient sends it, every way it can: DoExchange and spec 002's DoPut.
_INSERTS: dict[str, _Send] = {
    "plain": lambda client, schema, table, data: client.insert(schema, table, data),
    "returning-pipelined": lambda client, schema, table, data: client.insert(
        schema, table, data, returning=True
    ),
    "returning-lock-step": lambda client, schema, table, data: client.insert(
        schema, table, data, returning=True, lock_step=True
    ),
    "doput": lambda client, schema, table, data: client.put_insert(schema, table, data),
    "doput-returning": lambda client, schema, table, data: client.put_insert(
        schema, table, data, returning=True
    ),
}


@pytest.mark.parametrize("send", _INSERTS.values(), ids=_INSERTS.keys())
def test_client_data_failing_half_way_cancels_the_statement(
    srv: Running, statement_log: queue.Queue[str], send: _Send
) -> None:
    """The client cancels rather than ends its input, which would commit the batches sent."""
    before = _seed_three_users(srv, statement_log)

    def breaking_source() -> Iterator[pa.RecordBatch]:
        for i in range(3):
            yield from generated_users(100, start=1000 + 100 * i).to_batches()
        # Only once the server has begun the statement: a cancel before that is no test.
        assert statement_log.get(timeout=10) == "open"
        raise _SourceBroke("the caller's data source broke")

    with pytest.raises(_SourceBroke):
        send(srv.client, "dml_schema", "users", breaking_source())
    assert _next_events(statement_log, 1) == ["rollback"]
    assert srv.rows("dml_schema") == before


@pytest.mark.parametrize("send", [_INSERTS["plain"], _INSERTS["doput"]], ids=["exchange", "doput"])
def test_client_stops_sending_once_the_server_has_answered_with_an_error(
    srv: Running, send: _Send
) -> None:
    sent = 0

    def slow_source() -> Iterator[pa.RecordBatch]:
        nonlocal sent
        for i in range(200):
            sent += 1
            time.sleep(0.02)
            yield from generated_users(10, start=1 + 10 * i).to_batches()

    with pytest.raises(RemoteError) as raised:
        send(srv.client, "demo_schema", "readonly", slow_source())
    assert (raised.value.code, raised.value.message) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "table 'readonly' does not support INSERT operations",
    )
    assert sent < 50, f"{sent} of 200 batches produced after the server had refused the statement"


def test_concurrent_inserts_from_eight_clients_lose_nothing(srv: Running) -> None:
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for j in range(10):
                srv.client.insert(
                    "batch_schema",
                    "users",
                    generated_users(500, start=k * 10_000 + j * 500),
                    batch_rows=128,
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    table = srv.table("batch_schema").to_table()
    assert table.num_rows == 8 * 10 * 500
    assert len(set(table.column("rowid").to_pylist())) == table.num_rows
    assert len(set(table.column("id").to_pylist())) == table.num_rows


@pytest.fixture
def matrix_srv() -> Iterator[Running]:
    schema = CatalogSchema("m")
    for row in COMPATIBILITY_MATRIX:
        name = "_".join(row.implements)
        schema.add(memory_table(name, USERS_COLUMNS, row.implements, rows=users([1, 2])))
    catalog = MutableCatalog("", [schema])
    server = AirportServer(catalog, None, ServerConfig(port=0)).start()
    running = Running(server, catalog, None)
    yield running
    running.client.close()
    server.stop(0)


@pytest.mark.parametrize("row", COMPATIBILITY_MATRIX, ids=lambda r: "+".join(r.implements))
def test_compatibility_matrix_end_to_end(matrix_srv: Running, row: MatrixRow) -> None:
    name = "_".join(row.implements)
    table = matrix_srv.table("m", name)
    called: list[str] = []
    for method in ("update_batch", "update_by_row_ids", "delete_batch", "delete_by_row_ids"):
        if hasattr(table, method):
            original = getattr(table, method)
            setattr(
                table, method, lambda *a, _m=method, _o=original: (called.append(_m), _o(*a))[1]
            )
    update = pa.table({"name": ["new"], "rowid": pa.array([1], pa.int64())})
    for op, chosen, data in (
        ("update", row.update, update),
        ("delete", row.delete, pa.table({"rowid": pa.array([2], pa.int64())})),
    ):
        code = None
        try:
            matrix_srv.client.exchange(op, "m", name, data)
        except Exception as exc:
            code = getattr(exc, "code", None)
        if chosen is None:
            assert code == grpc.StatusCode.FAILED_PRECONDITION
        else:
            assert code is None
    expected = []
    if row.update:
        expected.append(
            {"UpdatableBatchTable": "update_batch", "UpdatableTable": "update_by_row_ids"}[
                row.update
            ]
        )
    if row.delete:
        expected.append(
            {"DeletableBatchTable": "delete_batch", "DeletableTable": "delete_by_row_ids"}[
                row.delete
            ]
        )
    assert called == expected


def test_pyarrow_flight_client_insert_and_update(srv: Running) -> None:
    client = flight.connect(srv.server.location)
    data = users([1, 2])
    options = flight.FlightCallOptions(
        headers=[
            (b"airport-operation", b"insert"),
            (b"airport-flight-path", b"batch_schema/users"),
            (b"return-chunks", b"1"),
        ]
    )
    writer, reader = client.do_exchange(
        flight.FlightDescriptor.for_path("batch_schema", "users"), options
    )
    writer.begin(data.schema)
    returned = []
    for batch in data.to_batches(max_chunksize=1):
        writer.write_batch(batch)
        returned.append(reader.read_chunk().data)  # lock-step, as DuckDB does
    writer.done_writing()
    tail = list(reader)
    writer.close()
    assert [b.num_rows for b in returned] == [1, 1]
    assert tail[-1].app_metadata.to_pybytes() == bytes.fromhex(
        "81ad746f74616c5f6368616e676564cf0000000000000002"
    )
    # Arrow C++ (so also DuckDB) reports FAILED_PRECONDITION this way (protocol §1.11).
    options = flight.FlightCallOptions(
        headers=[
            (b"airport-operation", b"insert"),
            (b"airport-flight-path", b"demo_schema/readonly"),
        ]
    )
    expected = "gRPC returned precondition failed error, with message: table 'readonly' does not support INSERT operations"
    # Where the failure surfaces depends on when the server's answer arrives, so on the
    # machine's load: at the call itself when it is already there, else at a write or read.
    opened: list[flight.FlightStreamWriter] = []
    with pytest.raises(pa.ArrowInvalid, match=expected):
        writer, reader = client.do_exchange(flight.FlightDescriptor.for_path("x"), options)
        opened.append(writer)
        writer.begin(data.schema)
        writer.write_table(data)
        writer.done_writing()
        list(reader)
    # The stream already failed: closing it (and the client) reports the same failure again,
    # or nothing where Arrow handed it out already.
    for close in [w.close for w in opened] + [client.close]:
        try:
            close()
        except pa.ArrowInvalid as again:
            assert expected in str(again)


# --- transactions on DoExchange (protocol §1.10, §2.2-2.3, deviation transaction_validated) ---


def _begin(srv: Running) -> str:
    (body,) = srv.client.action("create_transaction", msgpack.packb({"catalog_name": ""}))
    identifier = msgpack.unpackb(body)["identifier"]
    assert isinstance(identifier, str) and len(identifier) == 36
    return identifier


def _status(srv: Running, tx: str) -> dict[str, object]:
    (body,) = srv.client.action("get_transaction_status", msgpack.packb({"transaction_id": tx}))
    return msgpack.unpackb(body)


def test_dml_in_a_transaction_commits_it(tx_srv: Running) -> None:
    tx = _begin(tx_srv)
    assert _status(tx_srv, tx) == {"status": "active", "exists": True}
    tx_srv.client.insert("dml_schema", "users", users([1]), transaction_id=tx)
    assert _status(tx_srv, tx) == {"status": "committed", "exists": True}
    assert len(tx_srv.rows("dml_schema")) == 1


def test_failed_dml_in_a_transaction_aborts_it_and_leaves_no_trace(tx_srv: Running) -> None:
    tx = _begin(tx_srv)
    bad = pa.table({"id": pa.array([1, 2], pa.int64()), "nickname": ["a", "b"]})
    with pytest.raises(Exception, match="schema mismatch: input column 'nickname'"):
        tx_srv.client.insert("dml_schema", "users", bad, transaction_id=tx)
    assert _status(tx_srv, tx) == {"status": "aborted", "exists": True}
    assert tx_srv.rows("dml_schema") == []


def test_a_committed_transaction_takes_further_statements(tx_srv: Running) -> None:
    """DuckDB sends one id with every statement of BEGIN … COMMIT (deviation
    transaction_spans_statements): each commits the transaction again."""
    tx = _begin(tx_srv)
    tx_srv.client.insert("dml_schema", "users", users([1]), transaction_id=tx)
    tx_srv.client.insert("dml_schema", "users", users([2]), transaction_id=tx)
    assert _status(tx_srv, tx) == {"status": "committed", "exists": True}
    assert sorted(r["id"] for r in tx_srv.rows("dml_schema")) == [1, 2]


def test_an_aborted_transaction_is_refused(tx_srv: Running) -> None:
    tx = _begin(tx_srv)
    tx_srv.client.insert("dml_schema", "users", users([1]), transaction_id=tx)
    with pytest.raises(Exception, match="null rowid value not allowed"):
        tx_srv.client.update(
            "dml_schema",
            "users",
            pa.table({"rowid": pa.array([None], pa.int64()), "name": ["x"]}),
            transaction_id=tx,
        )
    with pytest.raises(Exception) as err:
        tx_srv.client.insert("dml_schema", "users", users([2]), transaction_id=tx)
    assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION  # type: ignore[attr-defined]
    assert err.value.message == f"transaction {tx} is not active (state: aborted)"  # type: ignore[attr-defined]
    assert [r["id"] for r in tx_srv.rows("dml_schema")] == [1]


def test_unknown_transaction_is_not_found(tx_srv: Running) -> None:
    with pytest.raises(Exception) as err:
        tx_srv.client.insert("dml_schema", "users", users([1]), transaction_id="non-existent-tx-id")
    assert err.value.code == grpc.StatusCode.NOT_FOUND  # type: ignore[attr-defined]
    assert err.value.message == "transaction non-existent-tx-id not found"  # type: ignore[attr-defined]


def test_x_transaction_id_header_is_read_too(tx_srv: Running) -> None:
    tx = _begin(tx_srv)
    tx_srv.client.exchange(
        "insert", "dml_schema", "users", users([1]), headers={"x-transaction-id": tx}
    )
    assert tx_srv.transactions is not None
    assert tx_srv.transactions.get_transaction_status(Context.background(), tx) == (
        TransactionState.COMMITTED,
        True,
    )


def test_without_a_manager_create_transaction_is_nil_and_dml_ignores_the_header(
    srv: Running,
) -> None:
    (body,) = srv.client.action("create_transaction", msgpack.packb({"catalog_name": ""}))
    assert body == bytes.fromhex("81aa6964656e746966696572c0")
    (body,) = srv.client.action("get_transaction_status", msgpack.packb({"transaction_id": "x"}))
    assert msgpack.unpackb(body) == {"status": "", "exists": False}
    srv.client.insert(
        "dml_schema", "users", users([1]), transaction_id="anything"
    )  # Go runs it without one
    assert len(srv.rows("dml_schema")) == 1
