"""Compaction off the statements' path: a statement commits what the client sent as it came
(2,048-row chunks from DuckDB, UPDATE values as a patch, DELETEs as marks), and one thread
per process rewrites a table's storage afterwards when that pays: many small chunks become
large ones, the patch is written into the columns, dead rows are dropped. The table makes
the rewrite outside its lock and swaps it in only if the rows it rewrote are still as they
were (rows appended meanwhile follow it; otherwise the next commit asks again), so a
statement never waits for a compaction and a reader never sees one happen."""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Protocol

log = logging.getLogger("pyairport.memory")


class Compactable(Protocol):
    def compact(self) -> None: ...


class Compactor:
    """The thread that compacts tables asked for, one at a time, in the order asked."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._waiting: dict[int, weakref.ref[Compactable]] = {}
        self._thread: threading.Thread | None = None
        self._busy = False

    def ask(self, table: Compactable) -> None:
        """Compact table when the thread gets to it (asking twice before then is once)."""
        with self._lock:
            self._waiting.setdefault(id(table), weakref.ref(table))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="pyairport-compaction", daemon=True
                )
                self._thread.start()
            self._lock.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no table waits for compaction or is being compacted (tests, tools)."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._waiting and not self._busy, timeout)

    def _run(self) -> None:
        while True:
            with self._lock:
                self._busy = False
                self._lock.notify_all()
                while not self._waiting:
                    self._lock.wait()
                key = next(iter(self._waiting))
                table = self._waiting.pop(key)()
                self._busy = True
            if table is None:  # dropped meanwhile
                continue
            try:
                table.compact()
            except Exception:  # the table stays as it was, uncompacted but correct
                log.exception("compacting a memory table failed")


COMPACTOR = Compactor()
