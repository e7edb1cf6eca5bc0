"""A DuckDB transaction of several statements (deviation transaction_spans_statements).

DuckDB's Airport extension asks create_transaction once per DuckDB transaction and sends the
id with every statement in it; its COMMIT and ROLLBACK never reach the server. So each
statement is applied when it succeeds and commits the transaction again; once a statement
under the id fails, the id is aborted and every later statement under it is refused and
changes nothing. Replayed here as DuckDB sends it, on the memory and Spark backends, and
through spec 002's protocol with AirportClient."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc
import msgpack
import pyarrow as pa
import pytest

from airport_contracts import Context, TransactionState
from pyairport.client import RemoteError
from pyairport.demo import memory_demo_catalog
from pyairport.transactions import MemoryTransactionManager, TransactionError

from .conftest import Running, _running, serving, users

CTX = Context.background()


@pytest.fixture(params=["memory", pytest.param("spark", marks=pytest.mark.spark)])
def tx_any_srv(request: pytest.FixtureRequest) -> Iterator[Running]:
    """A server with the in-memory TransactionManager, over memory or Delta tables."""
    if request.param == "memory":
        yield from _running(MemoryTransactionManager())
        return
    spark: Running = request.getfixturevalue("spark_srv")
    spark.reset()
    with serving(spark.catalog, MemoryTransactionManager()) as running:
        yield running


def _create_transaction(srv: Running) -> str:
    """What DuckDB asks at BEGIN (and before every auto-commit statement)."""
    (body,) = srv.client.action("create_transaction", msgpack.packb({"catalog_name": ""}))
    tx = msgpack.unpackb(body)["identifier"]
    assert isinstance(tx, str) and tx
    return tx


def _status(srv: Running, tx: str) -> str:
    (body,) = srv.client.action("get_transaction_status", msgpack.packb({"transaction_id": tx}))
    answer = msgpack.unpackb(body)
    assert answer["exists"] is True
    status: str = answer["status"]
    return status


def _refused(call: Callable[[], object]) -> RemoteError:
    with pytest.raises(RemoteError) as err:
        call()
    return err.value


def _by_id(srv: Running, schema: str) -> dict[int, str]:
    return {r["id"]: r["name"] for r in srv.rows(schema)}


@pytest.mark.parametrize("schema", ["dml_schema", "batch_schema"])
def test_a_duckdb_transaction_of_several_statements(tx_any_srv: Running, schema: str) -> None:
    """BEGIN; INSERT; UPDATE; DELETE; <a failing UPDATE>; INSERT; — each DML call carries the
    one id DuckDB got at BEGIN."""
    srv = tx_any_srv
    tx = _create_transaction(srv)
    assert _status(srv, tx) == "active"

    srv.client.insert(schema, "users", users([1, 2, 3], ["Ann", "Bo", "Cy"]), transaction_id=tx)
    assert _status(srv, tx) == "committed"
    rowid = {r["id"]: r["rowid"] for r in srv.rows(schema)}
    srv.client.update(
        schema,
        "users",
        pa.table({"name": ["Bobby"], "rowid": pa.array([rowid[2]], pa.int64())}),
        transaction_id=tx,
    )
    srv.client.delete(schema, "users", [rowid[3]], transaction_id=tx)
    assert _by_id(srv, schema) == {1: "Ann", 2: "Bobby"}
    assert _status(srv, tx) == "committed"

    # A statement that fails once its statement scope is open (a null rowid in its batch).
    failed = _refused(
        lambda: srv.client.update(
            schema,
            "users",
            pa.table({"name": ["x", "y"], "rowid": pa.array([rowid[1], None], pa.int64())}),
            transaction_id=tx,
        )
    )
    assert failed.code == grpc.StatusCode.INVALID_ARGUMENT
    assert _status(srv, tx) == "aborted"

    # Every later statement under the id is refused and changes nothing.
    for later in (
        lambda: srv.client.insert(schema, "users", users([4]), transaction_id=tx),
        lambda: srv.client.delete(schema, "users", [rowid[1]], transaction_id=tx),
    ):
        refused = _refused(later)
        assert refused.code == grpc.StatusCode.FAILED_PRECONDITION
        assert refused.message == f"transaction {tx} is not active (state: aborted)"
    assert _by_id(srv, schema) == {1: "Ann", 2: "Bobby"}
    assert _status(srv, tx) == "aborted"

    # A new DuckDB transaction is unaffected.
    fresh = _create_transaction(srv)
    srv.client.insert(schema, "users", users([5]), transaction_id=fresh)
    assert _status(srv, fresh) == "committed"
    assert sorted(_by_id(srv, schema)) == [1, 2, 5]


def test_a_statement_refused_before_it_starts_aborts_the_transaction_too() -> None:
    """An UPDATE of a table that has no UPDATE fails at the capability check, before its
    statement scope opens: the transaction is aborted all the same."""
    with serving(memory_demo_catalog(), MemoryTransactionManager()) as running:
        tx = _create_transaction(running)
        running.client.insert("dml_schema", "users", users([1]), transaction_id=tx)
        unsupported = _refused(
            lambda: running.client.update(
                "demo_schema",
                "readonly",
                pa.table({"name": ["x"], "rowid": pa.array([0], pa.int64())}),
                transaction_id=tx,
            )
        )
        assert unsupported.code == grpc.StatusCode.FAILED_PRECONDITION
        assert _status(running, tx) == "aborted"
        refused = _refused(
            lambda: running.client.insert("dml_schema", "users", users([2]), transaction_id=tx)
        )
        assert refused.message == f"transaction {tx} is not active (state: aborted)"
        assert [r["id"] for r in running.rows("dml_schema")] == [1]


def test_the_spec002_client_flow_in_one_transaction() -> None:
    """AirportClient: begin, DoPut INSERT, DoPut UPDATE, DoAction delete under one id; a
    failing UPDATE aborts it; the next call is refused and changes nothing."""
    with serving(memory_demo_catalog(), MemoryTransactionManager()) as running:
        client = running.client
        tx = client.begin_transaction()
        assert tx is not None
        client.put_insert("dml_schema", "users", users([1, 2], ["Ann", "Bo"]), transaction_id=tx)
        rowid = {r["id"]: r["rowid"] for r in running.rows("dml_schema")}
        client.put_update(
            "dml_schema", "users", [rowid[2]], users([2], ["Bobby"]), transaction_id=tx
        )
        client.action_delete("dml_schema", "users", [rowid[1]], transaction_id=tx)
        assert client.transaction_status(tx) == ("committed", True)
        assert _by_id(running, "dml_schema") == {2: "Bobby"}

        missing = _refused(
            lambda: client.put_update(
                "dml_schema", "users", [999], users([9], ["Nobody"]), transaction_id=tx
            )
        )
        assert (missing.code, missing.message) == (
            grpc.StatusCode.NOT_FOUND,
            "row_id 999 not found in table",
        )
        assert client.transaction_status(tx) == ("aborted", True)
        refused = _refused(
            lambda: client.put_insert("dml_schema", "users", users([3]), transaction_id=tx)
        )
        assert (refused.code, refused.message) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            f"transaction {tx} is not active (state: aborted)",
        )
        assert _by_id(running, "dml_schema") == {2: "Bobby"}


# --- the manager on its own ----------------------------------------------------------------


def _state(manager: MemoryTransactionManager, tx: str) -> tuple[Any, bool]:
    return manager.get_transaction_status(CTX, tx)


def test_the_manager_commits_again_and_aborts_a_committed_transaction() -> None:
    manager = MemoryTransactionManager()
    tx = manager.begin_transaction(CTX)
    manager.commit_transaction(CTX, tx)
    manager.commit_transaction(CTX, tx)  # the next statement's commit: a no-op
    assert _state(manager, tx) == (TransactionState.COMMITTED, True)
    manager.rollback_transaction(CTX, tx)  # a later statement failed
    assert _state(manager, tx) == (TransactionState.ABORTED, True)
    manager.rollback_transaction(CTX, tx)  # idempotent
    with pytest.raises(TransactionError, match="is aborted, cannot become committed"):
        manager.commit_transaction(CTX, tx)
    assert _state(manager, tx) == (TransactionState.ABORTED, True)


def test_a_transaction_still_taking_statements_is_the_last_forgotten() -> None:
    """The manager keeps `capacity` finished transactions; one that commits again moves to
    the recent end, so a long DuckDB transaction outlives the auto-commit ones around it."""
    manager = MemoryTransactionManager(capacity=3)
    long_lived = manager.begin_transaction(CTX)
    manager.commit_transaction(CTX, long_lived)
    others = []
    for _ in range(5):
        others.append(manager.begin_transaction(CTX))
        manager.commit_transaction(CTX, others[-1])
        manager.commit_transaction(CTX, long_lived)
    assert _state(manager, long_lived) == (TransactionState.COMMITTED, True)
    assert _state(manager, others[0]) == (None, False)
    assert len(manager._finished) == 3
