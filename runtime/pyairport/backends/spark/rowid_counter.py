"""The values of pyairport's rowid column for a table's new rows: max(rowid)+1 at first use,
then counted in this process; moved past what the table holds when another writer took them
(the commit checks, commits.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from .client_errors import client_errors
from .lake import Lake
from .layout import ROWID
from .sql import quote


class RowidCounter:
    def __init__(self, lake: Lake, fqn: Callable[[], str]) -> None:
        self._lake = lake
        self._fqn = fqn
        self._lock = threading.Lock()
        self._next: int | None = None  # None until first used: then the table is asked

    def allocate(self, count: int) -> np.ndarray:
        """count new rowids, in order."""
        with self._lock:
            if self._next is None:
                with client_errors("insert", self._fqn()):
                    self._next = self._largest() + 1
            start = self._next
            self._next += count
        return np.arange(start, start + count, dtype=np.int64)

    def peek(self) -> int | None:
        """The next rowid to give out, if the counter has started."""
        with self._lock:
            return self._next

    def restart(self) -> None:
        """Ask the table again at the next allocation (after its rows were removed by
        another way than a statement of this server: a tool, a test)."""
        with self._lock:
            self._next = None

    def move_past(self, low: int, high: int) -> int:
        """How far to move the rowids low..high so that they follow every rowid the table
        holds and this counter gave out; the counter moves past them."""
        largest = self._largest()
        with self._lock:
            start = max(largest + 1, self._next or 0)
            self._next = start + (high - low) + 1
        return start - low

    def _largest(self) -> int:
        (largest,) = self._lake.spark.sql(f"SELECT max({quote(ROWID)}) FROM {self._fqn()}").first()
        return int(largest or 0)
