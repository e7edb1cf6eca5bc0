"""The values of pyairport's rowid column for a table's new rows, counted in this process from
the blocks it claimed in the table's log (rowid_claims.py), another claimed each time one runs
out. No other writer gives out the same rowids, so an INSERT commits them as they are."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from .client_errors import client_errors
from .rowid_claims import RowidClaims, block_range


class RowidCounter:
    def __init__(self, claims: RowidClaims, fqn: Callable[[], str]) -> None:
        self._claims = claims
        self._fqn = fqn
        self._lock = threading.Lock()
        self._block: int | None = None  # the block last claimed
        self._next: int | None = None  # None until a block is claimed
        self._end = 0  # the first rowid after the block's

    def allocate(self, count: int) -> np.ndarray:
        """count new rowids, in order."""
        parts = []
        with self._lock:
            while count:
                if self._next is None or self._next == self._end:
                    with client_errors("insert", self._fqn()):
                        self._block = self._claims.claim(self._block)
                    self._next, self._end = block_range(self._block)
                taken = min(count, self._end - self._next)
                parts.append(np.arange(self._next, self._next + taken, dtype=np.int64))
                self._next += taken
                count -= taken
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def peek(self) -> int | None:
        """The next rowid to give out, if the counter has started. (Read without the lock: a
        scan asking need not wait for a claim, about a second.)"""
        return self._next

    def restart(self) -> None:
        """Give out the block again from its start: for a table emptied of its rows by another
        way than a statement of this server (tests share one table). The block is this
        process's, so none of its rowids is anyone else's."""
        with self._lock:
            if self._block is not None:
                self._next = block_range(self._block)[0]
