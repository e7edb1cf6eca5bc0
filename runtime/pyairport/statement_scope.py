"""The statement scope: every DML statement runs in one, and a table that stages its changes
there (on_commit / on_rollback) is all-or-nothing even when the server calls it once per
input batch. pyairport's machinery, not the contract's: the dispatch library opens one per
statement and puts it in the call's Context, where tables find it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from airport_contracts import Context

T = TypeVar("T")

_STATEMENT = object()


class Statement:
    """The scope of one DML statement.

    The server opens one per statement, commits it after the last batch succeeded and rolls
    it back on any failure or client disconnect. A table that stages its changes keeps them
    in `staged(key, factory)` and applies them in an on_commit hook; until then nothing is
    visible to other statements, so a statement is all-or-nothing.
    Commit hooks run in registration order, rollback hooks in reverse order.

    A table that learns how many rows it changed only when it applies them (a Delta UPDATE
    reports its count from the commit) returns that count from its commit hook; the server
    then answers `changed_rows` in place of the DMLResult's affected_rows, which such a table
    can only estimate, and spares the table a query to count rows before they change.
    """

    def __init__(self, statement_id: str) -> None:
        self.id = statement_id
        self.state = "open"
        self._commit_hooks: list[Callable[[], int | None]] = []
        self._rollback_hooks: list[Callable[[], None]] = []
        self._staged: dict[object, Any] = {}
        self._lock = threading.Lock()
        # Rows the commit hooks said they changed; None when no hook counted.
        self.changed_rows: int | None = None

    def on_commit(self, hook: Callable[[], int | None]) -> None:
        self._commit_hooks.append(hook)

    def on_rollback(self, hook: Callable[[], None]) -> None:
        self._rollback_hooks.append(hook)

    def staged(self, key: object, factory: Callable[[], Any]) -> Any:
        """The statement-local value for key, created by factory on first use."""
        with self._lock:
            if key not in self._staged:
                self._staged[key] = factory()
            return self._staged[key]

    def join(
        self,
        key: object,
        factory: Callable[[], T],
        on_commit: Callable[[T], int | None],
        on_rollback: Callable[[T], None] | None = None,
    ) -> T:
        """A participant's statement-local state: the first call for key creates it with
        factory and registers the hooks that apply or discard it; later calls return it."""
        with self._lock:
            if key in self._staged:
                state: T = self._staged[key]
                return state
            state = factory()
            self._staged[key] = state
        self.on_commit(lambda: on_commit(state))
        if on_rollback is not None:
            self.on_rollback(lambda: on_rollback(state))
        return state

    def commit(self) -> None:
        """Run the commit hooks; the first hook error propagates (the caller rolls back)."""
        if self.state != "open":
            raise RuntimeError(f"statement {self.id} is already {self.state}")
        for hook in self._commit_hooks:
            changed = hook()
            # Only an int counts: a hook written as a lambda may return anything by accident.
            if isinstance(changed, int) and not isinstance(changed, bool):
                self.changed_rows = (self.changed_rows or 0) + changed
        self.state = "committed"

    def rollback(self) -> list[BaseException]:
        """Run every rollback hook, newest first; returns the errors they raised."""
        if self.state == "rolled_back":
            return []
        self.state = "rolled_back"
        errors: list[BaseException] = []
        for hook in reversed(self._rollback_hooks):
            try:
                hook()
            except Exception as exc:  # every hook must run; the caller logs what failed
                errors.append(exc)
        return errors


def with_statement(ctx: Context, statement: Statement) -> Context:
    """A context that carries the statement scope."""
    return ctx.with_value(_STATEMENT, statement)


def statement_from_context(ctx: Context) -> Statement | None:
    """The statement scope ctx carries, or None outside a DML statement."""
    value = ctx.value(_STATEMENT)
    return value if isinstance(value, Statement) else None
