"""An in-memory TransactionManager: UUID ids, active → committed | aborted, idempotent."""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable

from airport_contracts import Context, TransactionState
from airport_contracts.types import TRANSACTION_STATE_TRANSITIONS


class TransactionError(Exception):
    """A commit the manager refuses (unknown id, or the transaction was aborted)."""


class MemoryTransactionManager:
    """Thread-safe and bounded.

    A transaction takes any number of statements (deviation transaction_spans_statements):
    the first that succeeds commits it, later ones commit it again (a no-op), and one that
    fails aborts it, committed or not; an aborted transaction stays aborted.

    DuckDB begins a transaction for every statement, reads included, and only a DML
    statement finishes it: a server that kept every transaction it began would grow without
    end. So a transaction still active `timeout` seconds after it began is aborted, and so is
    the oldest active one when more than `max_active` are active. The newest `capacity`
    finished transactions are kept, so that a client can still ask for their status and a
    committed one can take further statements; older ones are forgotten (then unknown).
    Asking for a status changes nothing (the contract: it "must not modify state"): a
    transaction past its timeout is reported aborted, and becomes so at the manager's next
    change."""

    def __init__(
        self,
        capacity: int = 100_000,
        timeout: float | None = 3600.0,
        max_active: int = 1_000_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._active: OrderedDict[str, float] = OrderedDict()  # id → when it began, oldest first
        self._finished: OrderedDict[str, TransactionState] = OrderedDict()  # oldest first
        self._capacity = capacity
        self._timeout = timeout
        self._max_active = max_active
        self._clock = clock
        self._lock = threading.Lock()

    def begin_transaction(self, ctx: Context) -> str:
        ctx.raise_if_done()
        tx_id = str(uuid.uuid4())
        with self._lock:
            self._abort_expired()
            self._active[tx_id] = self._clock()
            if len(self._active) > self._max_active:
                self._finish_locked(next(iter(self._active)), TransactionState.ABORTED)
        return tx_id

    def commit_transaction(self, ctx: Context, tx_id: str) -> None:
        self._finish(tx_id, TransactionState.COMMITTED, strict=True)

    def rollback_transaction(self, ctx: Context, tx_id: str) -> None:
        self._finish(tx_id, TransactionState.ABORTED, strict=False)

    def get_transaction_status(
        self, ctx: Context, tx_id: str
    ) -> tuple[TransactionState | None, bool]:
        with self._lock:
            began = self._active.get(tx_id)
            if began is not None:
                expired = began <= self._expiry()
                return (TransactionState.ABORTED if expired else TransactionState.ACTIVE), True
            state = self._finished.get(tx_id)
        return state, state is not None

    def active_count(self) -> int:
        """How many transactions are under way (the server's metrics)."""
        with self._lock:
            self._abort_expired()
            return len(self._active)

    def _finish(self, tx_id: str, target: TransactionState, strict: bool) -> None:
        with self._lock:
            self._abort_expired()
            state = TransactionState.ACTIVE if tx_id in self._active else self._finished.get(tx_id)
            if state is None:
                if strict:
                    raise TransactionError(f"transaction {tx_id} not found")
                return  # rolling back what does not exist is not an infrastructure failure
            if state is target:
                if tx_id in self._finished:  # still in use: the last to be forgotten
                    self._finished.move_to_end(tx_id)
                return  # idempotent
            if (state, target) not in TRANSACTION_STATE_TRANSITIONS:
                if strict:
                    raise TransactionError(
                        f"transaction {tx_id} is {state.value}, cannot become {target.value}"
                    )
                return  # an aborted transaction stays aborted
            self._finish_locked(tx_id, target)

    def _expiry(self) -> float:
        """Active transactions that began at or before this time are past their timeout."""
        return -math.inf if self._timeout is None else self._clock() - self._timeout

    def _abort_expired(self) -> None:
        expiry = self._expiry()
        while self._active:
            tx_id, began = next(iter(self._active.items()))
            if began > expiry:
                return
            self._finish_locked(tx_id, TransactionState.ABORTED)

    def _finish_locked(self, tx_id: str, target: TransactionState) -> None:
        self._active.pop(tx_id, None)  # absent when a committed transaction is aborted
        self._finished[tx_id] = target
        self._finished.move_to_end(tx_id)
        if len(self._finished) > self._capacity:
            self._finished.popitem(last=False)
