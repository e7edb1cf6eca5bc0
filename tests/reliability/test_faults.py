"""A client that disconnects in the middle of INSERT, UPDATE or DELETE (with and without
RETURNING), at random points: the table must equal its state before the statement."""

from __future__ import annotations

import os
import queue
import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc._server as grpc_server
import pyarrow as pa
import pytest

from airport_contracts import flight_pb2
from pyairport.demo import generated_users
from pyairport.statement_scope import Statement
from pyairport.wire.ipc import batch_message, schema_message

from ..protocol.conftest import Running

ROUNDS = int(os.environ.get("PYAIRPORT_DISCONNECT_ROUNDS", "100"))
LATE_CANCEL_ROUNDS = 20
SPARK_ROUNDS = int(os.environ.get("PYAIRPORT_SPARK_DISCONNECT_ROUNDS", "100"))


@pytest.fixture
def rollbacks(monkeypatch: pytest.MonkeyPatch) -> queue.Queue[str]:
    """Each rolled-back statement's id, so a test knows the server finished with it."""
    done: queue.Queue[str] = queue.Queue()
    original = Statement.rollback

    def rollback(self: Statement) -> list[BaseException]:
        errors = original(self)
        done.put(self.id)
        return errors

    monkeypatch.setattr(Statement, "rollback", rollback)
    return done


def _statement(rng: random.Random, srv: Running, schema: str) -> tuple[str, pa.Table]:
    operation = rng.choice(["insert", "update", "delete"])
    rows = srv.table(schema).to_table()
    rowids = rows.column("rowid").to_pylist()
    n = rng.randint(20, 200)
    if operation == "insert":
        return operation, generated_users(n, start=rng.randint(10_000, 90_000))
    picked = pa.array(rng.sample(rowids, min(n, len(rowids))), pa.int64())
    if operation == "update":
        return operation, pa.table(
            {"name": pa.array([f"x{i}" for i in range(len(picked))]), "rowid": picked}
        )
    return operation, pa.table({"rowid": picked})


def _disconnect_midway(
    srv: Running, rng: random.Random, schema: str, rollbacks: queue.Queue[str]
) -> None:
    before = srv.table(schema).to_table()
    operation, data = _statement(rng, srv, schema)
    returning = rng.random() < 0.5
    batches = data.to_batches(max_chunksize=rng.choice([7, 16, 33]))
    cut = rng.randint(0, max(0, len(batches) - 1))  # batches sent before the client goes away
    outbox: queue.Queue[Any] = queue.Queue()

    def requests() -> Iterator[flight_pb2.FlightData]:
        while (item := outbox.get()) is not None:
            yield item

    headers = {"airport-operation": operation, "airport-flight-path": f"{schema}/users"}
    if returning:
        headers["return-chunks"] = "1"
    outbox.put(schema_message(data.schema))
    responses = srv.client.stub.DoExchange(requests(), metadata=sorted(headers.items()))
    next(responses)  # the output schema: the statement is open
    for batch in batches[:cut]:
        outbox.put(batch_message(batch))
        if returning:
            next(responses)  # the batch was processed
    responses.cancel()  # type: ignore[attr-defined]
    outbox.put(None)
    try:
        rollbacks.get(timeout=30)
    except queue.Empty:
        raise AssertionError(
            f"no rollback: {operation} returning={returning} cut={cut}/{len(batches)}"
        ) from None
    after = srv.table(schema).to_table()
    assert after.equals(before), (
        f"{operation} (returning={returning}) cut after {cut}/{len(batches)} batches changed the table"
    )


def test_random_disconnects_on_the_memory_backend(
    srv: Running, rollbacks: queue.Queue[str]
) -> None:
    srv.client.insert("dml_schema", "users", generated_users(500))
    srv.client.insert("batch_schema", "users", generated_users(500))
    rng = random.Random(20261125)
    for round_ in range(ROUNDS):
        _disconnect_midway(srv, rng, rng.choice(["dml_schema", "batch_schema"]), rollbacks)
        assert rollbacks.empty(), f"round {round_}: more rollbacks than statements"


def test_disconnects_grpc_reports_late_never_commit(
    srv: Running, rollbacks: queue.Queue[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """grpcio ends a cancelled call's request stream first and flags the cancellation when its
    polling thread handles the next event: late when other Python threads hold the GIL (a fixed
    5 ms wait for the flag then let most such statements commit). Here that event is handled
    50 ms late on every call; no statement may commit."""
    original = grpc_server._receive_close_on_server

    def handled_late(state: Any) -> Any:
        callback = original(state)

        def late(event: Any) -> Any:
            time.sleep(0.05)
            return callback(event)

        return late

    srv.client.insert("batch_schema", "users", generated_users(500))
    monkeypatch.setattr(grpc_server, "_receive_close_on_server", handled_late)
    rng = random.Random(20261126)
    for _ in range(LATE_CANCEL_ROUNDS):
        _disconnect_midway(srv, rng, "batch_schema", rollbacks)


@pytest.mark.spark
def test_random_disconnects_on_the_spark_backend(
    spark_srv: Running, rollbacks: queue.Queue[str]
) -> None:
    spark_srv.reset()
    spark_srv.client.insert("batch_schema", "users", generated_users(300))
    rng = random.Random(7)
    for _ in range(SPARK_ROUNDS):
        _disconnect_midway(spark_srv, rng, "batch_schema", rollbacks)
        assert threading.active_count() < 200


def test_a_commit_that_fails_rolls_back_and_aborts_the_transaction(
    tx_srv: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    import grpc

    from pyairport.client import RemoteError

    table = tx_srv.table("dml_schema")
    tx_srv.client.insert("dml_schema", "users", generated_users(3))
    before = table.to_table()

    def failing_apply(pending: Any) -> None:
        raise OSError("commit log is full")

    monkeypatch.setattr(table.store, "apply", failing_apply)  # the table's own commit fails
    tx = tx_srv.client.begin_transaction()
    assert tx is not None
    with pytest.raises(RemoteError) as err:
        tx_srv.client.insert(
            "dml_schema", "users", generated_users(5, start=100), transaction_id=tx
        )
    assert (err.value.code, err.value.message) == (
        grpc.StatusCode.INTERNAL,
        "INSERT failed: commit log is full",
    )
    assert tx_srv.client.transaction_status(tx) == ("aborted", True)
    assert table.to_table().equals(before)
