"""Go's context.Context for Python, and the transaction id it carries.

A Context carries cancellation, an optional deadline and request-scoped values such as the
transaction id. Derived contexts (with_value, with_transaction_id) share their parent's
cancellation; with_cancel and with_timeout make a child that is cancelled with its parent or
on its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class ContextError(Exception):
    """Why a context is done: the text is Go's (ctx.Err().Error())."""


class Canceled(ContextError):
    def __init__(self) -> None:
        super().__init__("context canceled")


class DeadlineExceeded(ContextError):
    def __init__(self) -> None:
        super().__init__("context deadline exceeded")


class _CancelState:
    """Shared by a context and the value-derived contexts below it."""

    def __init__(self, deadline: float | None) -> None:
        self.event = threading.Event()
        self.deadline = deadline
        self.cause: ContextError | None = None
        self.children: list[_CancelState] = []
        self.lock = threading.Lock()
        self.timer: threading.Timer | None = None
        self.after: list[Callable[[], object]] = []

    def cancel(self, cause: ContextError) -> None:
        with self.lock:
            if self.cause is not None:
                return
            self.cause = cause
            children, self.children = self.children, []
            after, self.after = self.after, []
            if self.timer is not None:
                self.timer.cancel()
        self.event.set()
        for child in children:
            child.cancel(cause)
        for function in after:
            threading.Thread(target=function, daemon=True).start()

    def adopt(self, child: _CancelState) -> None:
        with self.lock:
            cause = self.cause
            if cause is None:
                self.children.append(child)
        if cause is not None:
            child.cancel(cause)


_TRANSACTION_ID = object()


class Context:
    """Cancellation, deadline and request values for one call (Go: context.Context)."""

    __slots__ = ("_state", "_values")

    def __init__(
        self, _state: _CancelState | None = None, _values: dict[object, Any] | None = None
    ) -> None:
        self._state = _state if _state is not None else _CancelState(None)
        self._values: dict[object, Any] = _values if _values is not None else {}

    @classmethod
    def background(cls) -> Context:
        """A context that is never cancelled and has no deadline or values."""
        return cls()

    def done(self) -> threading.Event:
        """Set once the context is cancelled or its deadline has passed (Go: Done())."""
        self.err()
        return self._state.event

    def err(self) -> ContextError | None:
        """None while the context is live, else Canceled or DeadlineExceeded (Go: Err())."""
        state = self._state
        if (
            state.cause is None
            and state.deadline is not None
            and time.monotonic() >= state.deadline
        ):
            state.cancel(DeadlineExceeded())
        return state.cause

    def raise_if_done(self) -> None:
        """Raise err() when the context is done; tables call this between units of work."""
        error = self.err()
        if error is not None:
            raise error

    @property
    def deadline(self) -> float | None:
        """The deadline as a time.monotonic() value, or None."""
        return self._state.deadline

    def value(self, key: object) -> Any:
        """The value stored under key by with_value, or None."""
        return self._values.get(key)

    def with_value(self, key: object, value: Any) -> Context:
        """A context with key → value that shares this context's cancellation."""
        values = dict(self._values)
        values[key] = value
        return Context(self._state, values)

    def with_cancel(self) -> tuple[Context, Callable[[], None]]:
        """A child context and the function that cancels it (and only it)."""
        child = _CancelState(self._state.deadline)
        self._state.adopt(child)
        return Context(child, dict(self._values)), lambda: child.cancel(Canceled())

    def with_timeout(self, seconds: float) -> tuple[Context, Callable[[], None]]:
        """A child context whose deadline is seconds from now (or the parent's, if sooner)."""
        deadline = time.monotonic() + seconds
        if self._state.deadline is not None:
            deadline = min(deadline, self._state.deadline)
        child = _CancelState(deadline)
        self._state.adopt(child)
        timer = threading.Timer(
            max(0.0, deadline - time.monotonic()), child.cancel, (DeadlineExceeded(),)
        )
        timer.daemon = True
        child.timer = timer
        timer.start()
        return Context(child, dict(self._values)), lambda: child.cancel(Canceled())


def after_func(ctx: Context, function: Callable[[], object]) -> Callable[[], bool]:
    """Call function on a thread of its own once ctx is done (at once if it is); the stop
    function returned keeps it from being called, True if it did (Go: context.AfterFunc)."""
    state = ctx._state
    ctx.err()  # a deadline that has passed cancels the context now
    with state.lock:
        if state.cause is None:
            state.after.append(function)
            pending = True
        else:
            pending = False
    if not pending:
        threading.Thread(target=function, daemon=True).start()

    def stop() -> bool:
        with state.lock:
            if function in state.after:
                state.after.remove(function)
                return True
            return False

    return stop


def attach_transaction_id(ctx: Context, tx_id: str) -> Context:
    """ctx with the transaction id (the contract's with_transaction_id)."""
    return ctx.with_value(_TRANSACTION_ID, tx_id)


def transaction_id_of(ctx: Context) -> tuple[str, bool]:
    """(the transaction id, True), or ("", False) (the contract's transaction_id_from_context)."""
    value = ctx.value(_TRANSACTION_ID)
    if isinstance(value, str):
        return value, True
    return "", False
