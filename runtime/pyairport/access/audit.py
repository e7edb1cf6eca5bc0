"""The audit trail: one line per DML or DDL statement on the `pyairport.audit` logger — who
(the call's identity), what (the operation), where ("catalog"."schema"."table"), how many
rows it changed and how it ended (ok, or failed with the gRPC status the client got). The
call's observer (the server's metrics) hears of the same statement, without the identity."""

from __future__ import annotations

import logging

from airport_contracts import AirportError, Context, StatusCode, identity_from_context

from ..observers import observer_from_context
from ..wire.go_text import go_quote

log = logging.getLogger("pyairport.audit")


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
    log.info("%s %s %s rows=%s %s", identity, operation, target, changed, outcome)
    observer = observer_from_context(ctx)
    if observer is not None:
        observer.statement(operation, where, rows, error, nbytes)
