"""An in-memory TransactionManager: UUID ids, active → committed | aborted, idempotent."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict

from airport_contracts import Context, TransactionState
from airport_contracts.types import TRANSACTION_STATE_TRANSITIONS


class TransactionError(Exception):
    """A commit the manager refuses (unknown id, or the transaction was aborted)."""


class MemoryTransactionManager:
    """Thread-safe; keeps the newest `capacity` finished transactions so a client can still
    ask for their status, and forgets older ones (active ones are never forgotten)."""

    def __init__(self, capacity: int = 100_000) -> None:
        self._states: OrderedDict[str, TransactionState] = OrderedDict()
        self._finished = 0
        self._capacity = capacity
        self._lock = threading.Lock()

    def begin_transaction(self, ctx: Context) -> str:
        ctx.raise_if_done()
        tx_id = str(uuid.uuid4())
        with self._lock:
            self._states[tx_id] = TransactionState.ACTIVE
        return tx_id

    def commit_transaction(self, ctx: Context, tx_id: str) -> None:
        self._finish(tx_id, TransactionState.COMMITTED, strict=True)

    def rollback_transaction(self, ctx: Context, tx_id: str) -> None:
        self._finish(tx_id, TransactionState.ABORTED, strict=False)

    def get_transaction_status(
        self, ctx: Context, tx_id: str
    ) -> tuple[TransactionState | None, bool]:
        with self._lock:
            state = self._states.get(tx_id)
        return state, state is not None

    def _finish(self, tx_id: str, target: TransactionState, strict: bool) -> None:
        with self._lock:
            state = self._states.get(tx_id)
            if state is None:
                if strict:
                    raise TransactionError(f"transaction {tx_id} not found")
                return  # rolling back what does not exist is not an infrastructure failure
            if state is target:
                return  # idempotent
            if (state, target) not in TRANSACTION_STATE_TRANSITIONS:
                if strict:
                    raise TransactionError(
                        f"transaction {tx_id} is {state.value}, cannot become {target.value}"
                    )
                return  # a committed transaction stays committed
            self._states[tx_id] = target
            self._states.move_to_end(tx_id)
            self._finished += 1
            self._forget_old()

    def _forget_old(self) -> None:
        while self._finished > self._capacity:
            for key, state in self._states.items():
                if state is not TransactionState.ACTIVE:
                    del self._states[key]
                    self._finished -= 1
                    break
            else:
                return
