"""A stream's next items made on a thread of their own while the current one is sent.

grpcio's server sends a streamed response one message at a time: it takes the next message
from the handler only once the last one is on its way, so a DoGet that reads, converts and
encodes each batch in the handler leaves the scan idle while the bytes go out and the wire
idle while the scan works. Made ahead, the two overlap (both release the GIL for their C++
and Rust work). At most `depth` items wait, so a stream's memory stays a few batches,
whatever the table's size.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_POLL_SECONDS = 0.1  # how often a blocked producer looks whether the consumer has gone


class _Failed:
    """The producer's exception, in the queue where its next item would be."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _End:
    """produce() said the stream has no more items."""


_END = _End()


class Ahead(Generic[T]):
    """produce()'s items, made up to depth ahead on a thread; produce() returns None at the
    end. The producer's exception is raised, as it was, by the next() that reaches it. The
    thread runs in the caller's contextvars (its log fields)."""

    def __init__(self, produce: Callable[[], T | None], depth: int = 2) -> None:
        self._produce = produce
        self._items: queue.Queue[T | _Failed | _End] = queue.Queue(maxsize=depth)
        self._closed = threading.Event()
        self._last: _Failed | _End | None = None  # once reached, every next() answers it
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._run,), name="pyairport-ahead", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._closed.is_set():
                item = self._produce()
                if item is None:
                    self._put(_END)
                    return
                self._put(item)
        except BaseException as exc:  # handed to the consumer, which raises it
            self._put(_Failed(exc))

    def _put(self, item: T | _Failed | _End) -> None:
        while not self._closed.is_set():
            try:
                self._items.put(item, timeout=_POLL_SECONDS)
                return
            except queue.Full:
                continue

    def next(self) -> T | None:
        """The next item, or None at the end."""
        item = self._last or self._items.get()
        if isinstance(item, _End):
            self._last = item
            return None
        if isinstance(item, _Failed):
            self._last = item
            raise item.error
        return item

    def close(self) -> None:
        """Stop producing: the consumer is done (the stream ended, failed or was cancelled).
        The thread ends after the item it is making."""
        self._closed.set()
        while True:
            try:
                self._items.get_nowait()
            except queue.Empty:
                return
