"""MemoryTransactionManager stays bounded however many transactions clients abandon (DuckDB
begins one for every statement, reads included), and a statement whose transaction ended
while it ran changes nothing."""

from __future__ import annotations

from typing import Any

import grpc
import pyarrow as pa
import pytest

from airport_contracts import (
    Context,
    DMLOptions,
    DMLResult,
    TransactionState,
    transaction_id_from_context,
)
from pyairport.demo import memory_demo_catalog
from pyairport.transactions import MemoryTransactionManager, TransactionError

from .conftest import serving, users

CTX = Context.background()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _status(manager: MemoryTransactionManager, tx: str) -> tuple[str | None, bool]:
    state, exists = manager.get_transaction_status(CTX, tx)
    return (state.value if state is not None else None), exists


def test_a_transaction_is_aborted_its_timeout_after_it_began() -> None:
    clock = FakeClock()
    manager = MemoryTransactionManager(timeout=60.0, clock=clock)
    tx = manager.begin_transaction(CTX)
    clock.now += 59.0
    assert _status(manager, tx) == ("active", True)
    clock.now += 1.0
    assert _status(manager, tx) == ("aborted", True)
    with pytest.raises(TransactionError, match="is aborted, cannot become committed"):
        manager.commit_transaction(CTX, tx)
    assert _status(manager, tx) == ("aborted", True)


def test_asking_for_a_status_changes_nothing() -> None:
    """The contract: GetTransactionStatus must not modify state. An expired transaction is
    reported aborted without being moved; asking does not keep one alive either."""
    clock = FakeClock()
    manager = MemoryTransactionManager(timeout=60.0, clock=clock)
    tx = manager.begin_transaction(CTX)
    for _ in range(2):
        clock.now += 20.0
        assert _status(manager, tx) == ("active", True)
    clock.now += 20.0  # 60 s after it began, however often it was asked about
    before = (dict(manager._active), dict(manager._finished))
    assert _status(manager, tx) == ("aborted", True)
    assert (dict(manager._active), dict(manager._finished)) == before


def test_only_the_expired_ones_are_aborted() -> None:
    clock = FakeClock()
    manager = MemoryTransactionManager(timeout=60.0, clock=clock)
    old = manager.begin_transaction(CTX)
    clock.now += 30.0
    young = manager.begin_transaction(CTX)
    clock.now += 40.0
    manager.commit_transaction(CTX, young)
    assert _status(manager, old) == ("aborted", True)
    assert _status(manager, young) == ("committed", True)


def test_without_a_timeout_nothing_expires() -> None:
    clock = FakeClock()
    manager = MemoryTransactionManager(timeout=None, clock=clock)
    tx = manager.begin_transaction(CTX)
    clock.now += 10 * 365 * 24 * 3600.0
    manager.begin_transaction(CTX)
    assert _status(manager, tx) == ("active", True)


def test_beyond_max_active_the_oldest_is_aborted() -> None:
    manager = MemoryTransactionManager(max_active=3, timeout=None)
    first, second, third = (manager.begin_transaction(CTX) for _ in range(3))
    fourth = manager.begin_transaction(CTX)
    assert _status(manager, first) == ("aborted", True)
    for tx in (second, third, fourth):
        assert _status(manager, tx) == ("active", True)


def test_finished_transactions_beyond_capacity_are_forgotten_oldest_first() -> None:
    manager = MemoryTransactionManager(capacity=2)
    abandoned = [manager.begin_transaction(CTX) for _ in range(1000)]
    finished = [manager.begin_transaction(CTX) for _ in range(3)]
    for tx in finished:
        manager.commit_transaction(CTX, tx)
    assert _status(manager, finished[0]) == (None, False)
    assert _status(manager, finished[1]) == ("committed", True)
    assert _status(manager, finished[2]) == ("committed", True)
    assert _status(manager, abandoned[0]) == ("active", True)  # active ones are not forgotten
    with pytest.raises(TransactionError, match="not found"):
        manager.commit_transaction(CTX, finished[0])


@pytest.mark.parametrize("dml_every", [10, None])
def test_duckdb_reads_do_not_grow_the_manager_without_end(dml_every: int | None) -> None:
    """Every statement begins a transaction; only the DML ones finish theirs (one in ten,
    or none: a read-only workload)."""
    clock = FakeClock()
    manager = MemoryTransactionManager(capacity=100, timeout=60.0, clock=clock)
    for statement in range(20_000):
        tx = manager.begin_transaction(CTX)
        if dml_every and statement % dml_every == 0:
            manager.commit_transaction(CTX, tx)
        clock.now += 1 / 128  # 128 statements a second (exact in binary: no drift)
    held = len(manager._active) + len(manager._finished)
    assert held <= 60 * 128 + 1 + 100  # a minute of transactions, the new one, 100 finished


# --- on the wire ---------------------------------------------------------------------------


def test_dml_in_an_expired_transaction_is_refused_and_changes_nothing() -> None:
    clock = FakeClock()
    manager = MemoryTransactionManager(timeout=60.0, clock=clock)
    with serving(memory_demo_catalog(), manager) as running:
        tx = running.client.begin_transaction()
        assert tx is not None
        clock.now += 61.0
        with pytest.raises(Exception) as err:
            running.client.insert("dml_schema", "users", users([1]), transaction_id=tx)
        assert err.value.code == grpc.StatusCode.FAILED_PRECONDITION  # type: ignore[attr-defined]
        assert err.value.message == f"transaction {tx} is not active (state: aborted)"  # type: ignore[attr-defined]
        assert running.rows("dml_schema") == []


class _FinishedMeanwhile:
    """Wraps a table: while the statement runs, its transaction ends (rolled back, or
    committed by another statement of the same transaction)."""

    def __init__(self, inner: Any, manager: MemoryTransactionManager, finish: str) -> None:
        self.inner, self.manager, self.finish = inner, manager, finish

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def insert(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        result = self.inner.insert(ctx, rows, opts)
        tx, _ = transaction_id_from_context(ctx)
        getattr(self.manager, self.finish)(ctx, tx)
        return result


def _insert_while_the_transaction(finish: str) -> tuple[Exception | None, int, Any]:
    """INSERT two rows in a transaction that `finish` ends while the table works: (what the
    client got, the rows the table holds after, the transaction's status)."""
    manager = MemoryTransactionManager()
    catalog = memory_demo_catalog()
    schema = catalog.schema(CTX, "dml_schema")
    table = schema.table(CTX, "users")
    schema.add(_FinishedMeanwhile(table, manager, finish))  # type: ignore[arg-type]
    with serving(catalog, manager) as running:
        tx = running.client.begin_transaction()
        assert tx is not None
        error: Exception | None = None
        try:
            running.client.insert("dml_schema", "users", users([1, 2]), transaction_id=tx)
        except Exception as exc:
            error = exc
            assert exc.message == f"transaction {tx} is not active (state: aborted)"  # type: ignore[attr-defined]
        return error, table.to_table().num_rows, manager.get_transaction_status(CTX, tx)


def test_a_statement_whose_transaction_was_aborted_meanwhile_changes_nothing() -> None:
    error, rows, status = _insert_while_the_transaction("rollback_transaction")
    assert error is not None and error.code == grpc.StatusCode.FAILED_PRECONDITION  # type: ignore[attr-defined]
    assert rows == 0
    assert status == (TransactionState.ABORTED, True)


def test_a_statement_whose_transaction_was_committed_meanwhile_is_applied() -> None:
    """Another statement of the same transaction committed it: that is no reason to refuse
    (deviation transaction_spans_statements)."""
    error, rows, status = _insert_while_the_transaction("commit_transaction")
    assert error is None
    assert rows == 2
    assert status == (TransactionState.COMMITTED, True)
