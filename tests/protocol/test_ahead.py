"""server/ahead.py: a DoGet's next batches made on a thread while one is sent."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from pyairport.server.ahead import Ahead

TRACE: contextvars.ContextVar[str] = contextvars.ContextVar("trace", default="-")


def _counting(limit: int, made: list[int]) -> Callable[[], int | None]:
    numbers: Iterator[int] = iter(range(limit))

    def produce() -> int | None:
        value = next(numbers, None)
        if value is not None:
            made.append(value)
        return value

    return produce


def test_items_come_in_order_and_the_end_stays_the_end() -> None:
    ahead = Ahead(_counting(5, []))
    assert [ahead.next() for _ in range(5)] == [0, 1, 2, 3, 4]
    assert ahead.next() is None
    assert ahead.next() is None
    ahead.close()


def test_no_more_than_depth_items_are_made_ahead() -> None:
    made: list[int] = []
    ahead = Ahead(_counting(100, made), depth=2)
    deadline = time.monotonic() + 2
    while len(made) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # time to make more, if it would
    assert len(made) == 3  # two waiting, a third made and waiting to be put
    assert ahead.next() == 0
    ahead.close()


def test_the_producers_error_is_raised_where_the_stream_reaches_it() -> None:
    failure = LookupError("the table went away")
    values = iter([1, 2])

    def produce() -> int | None:
        value = next(values, None)
        if value is None:
            raise failure
        return value

    ahead = Ahead(produce)
    assert ahead.next() == 1
    assert ahead.next() == 2
    with pytest.raises(LookupError) as raised:
        ahead.next()
    assert raised.value is failure
    with pytest.raises(LookupError):  # and again: the stream does not go on
        ahead.next()
    ahead.close()


def test_closing_stops_a_producer_that_waits_for_room() -> None:
    made: list[int] = []
    ahead = Ahead(_counting(10**9, made), depth=1)
    assert ahead.next() == 0
    ahead.close()
    ahead._thread.join(timeout=2)
    assert not ahead._thread.is_alive()
    assert len(made) < 10


def test_the_producer_runs_in_the_callers_context() -> None:
    seen: list[str] = []
    TRACE.set("call-7")

    def produce() -> int | None:
        seen.append(TRACE.get())
        seen.append(threading.current_thread().name)
        return None

    ahead = Ahead(produce)
    assert ahead.next() is None
    assert seen == ["call-7", "pyairport-ahead"]
