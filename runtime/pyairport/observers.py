"""What a server watches happen inside the calls it serves: each statement's outcome and each
function a client calls. The transport puts its observer in the call's Context; the audit
point (every DML and DDL statement) and the function runner report to it. A server without
an observer (no --metrics-port) pays one dictionary lookup per statement."""

from __future__ import annotations

from typing import Protocol

from airport_contracts import Context

_OBSERVER = "pyairport.observer"  # the key the call's observer is kept under


class CallObserver(Protocol):
    def statement(
        self,
        operation: str,
        where: tuple[str, ...],
        rows: int | None,
        error: BaseException | None,
        nbytes: int | None,
    ) -> None:
        """A statement ended: operation, (catalog, schema[, table]), the rows it changed
        (None: not known), its error (None: committed) and the Arrow bytes the client sent
        (None: not known)."""
        ...

    def function_call(self, catalog: str, schema: str, name: str) -> None:
        """A client called a function the catalog serves."""
        ...


def with_observer(ctx: Context, observer: CallObserver) -> Context:
    return ctx.with_value(_OBSERVER, observer)


def observer_from_context(ctx: Context) -> CallObserver | None:
    observer: CallObserver | None = ctx.value(_OBSERVER)
    return observer
