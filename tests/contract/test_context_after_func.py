"""after_func, Go's context.AfterFunc: what stops a Spark statement once its call is over."""

from __future__ import annotations

import threading

from airport_contracts import Context
from airport_support.context import after_func


def test_runs_once_when_cancelled_and_not_before() -> None:
    ctx, cancel = Context.background().with_cancel()
    ran = threading.Event()
    calls: list[int] = []
    after_func(ctx, lambda: (calls.append(1), ran.set()))
    assert not ran.wait(0.05)
    cancel()
    cancel()
    assert ran.wait(2) and calls == [1]


def test_runs_at_once_on_a_context_already_done_or_past_its_deadline() -> None:
    ctx, cancel = Context.background().with_cancel()
    cancel()
    ran = threading.Event()
    after_func(ctx, ran.set)
    assert ran.wait(2)
    late, _ = Context.background().with_timeout(0)
    ran_late = threading.Event()
    after_func(late, ran_late.set)
    assert ran_late.wait(2)


def test_stop_keeps_it_from_running() -> None:
    ctx, cancel = Context.background().with_cancel()
    ran = threading.Event()
    stop = after_func(ctx, ran.set)
    assert stop() is True and stop() is False
    cancel()
    assert not ran.wait(0.1)


def test_a_child_context_runs_it_when_its_parent_is_cancelled() -> None:
    parent, cancel = Context.background().with_cancel()
    child, _ = parent.with_timeout(60)
    ran = threading.Event()
    after_func(child.with_value("k", "v"), ran.set)
    cancel()
    assert ran.wait(2)
