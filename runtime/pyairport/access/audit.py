"""The audit trail: one line per DML or DDL statement on the `pyairport.audit` logger — who
(the call's identity), what (the operation), where ("catalog"."schema"."table"), how many
rows it changed, how it ended (ok, or failed with the gRPC status the client got) and how long
its call had run by then (receiving the client's rows included). The call's observer (the
server's metrics) hears of the same statement, without the identity."""

from __future__ import annotations

import logging
import time

from airport_contracts import AirportError, Context, StatusCode, identity_from_context

from ..observers import observer_from_context
from ..wire.go_text import go_quote

log = logging.getLogger("pyairport.audit")

_STARTED = "pyairport.call_started"  # the key the call's start (perf_counter) is kept under


def with_call_start(ctx: Context) -> Context:
    """ctx noting that its call starts now: its statements' audit lines give their time."""
    return ctx.with_value(_STARTED, time.perf_counter())


def audit(
    ctx: Context,
    operation: str,
    where: tuple[str, ...],
    rows: int | None,
    error: BaseException | None = None,
    nbytes: int | None = None,
) -> None:
    """Log one statement; where: catalog, schema and (when the statement has one) table;
    nbytes: the Arrow bytes of the rows the client sent, for the observer."""
    identity = identity_from_context(ctx) or "-"
    target = ".".join(go_quote(name) for name in where)
    if error is None:
        outcome = "ok"
    elif isinstance(error, AirportError):
        outcome = f"failed {StatusCode(error.code).name}"
    else:
        outcome = "failed INTERNAL"
    changed = "-" if rows is None else str(rows)
    started: float | None = ctx.value(_STARTED)
    took = "-" if started is None else f"{time.perf_counter() - started:.3f}s"
    log.info("%s %s %s rows=%s %s took=%s", identity, operation, target, changed, outcome, took)
    observer = observer_from_context(ctx)
    if observer is not None:
        observer.statement(operation, where, rows, error, nbytes)
