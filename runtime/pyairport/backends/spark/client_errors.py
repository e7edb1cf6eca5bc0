"""Spark's failures as a client may see them: the client's own (a constraint, a time point
that does not exist) as the contract's INVALID_ARGUMENT errors, a JVM that is gone as
UNAVAILABLE, the rest as one line; the plan and the stack only in the server's log."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from airport_contracts import AirportError, EngineUnavailable, RowsRefused, TimePointInvalid

from ..time_points import TimePointError
from .session import SPARK_STOPPED, engine_lost
from .sql import client_cause, one_line

log = logging.getLogger("pyairport.spark")


@contextmanager
def client_errors(operation: str, fqn: str) -> Iterator[None]:
    """Run operation (scan, insert, update, …) on the table fqn, its failures as a client
    may see them."""
    try:
        yield
    except TimePointError as exc:
        raise TimePointInvalid(error=str(exc)) from None
    except (AirportError, ValueError, TypeError):
        raise
    except Exception as exc:
        log.error("%s on %s failed", operation, fqn, exc_info=exc)
        if engine_lost(exc):
            raise EngineUnavailable(error=SPARK_STOPPED) from None
        cause = client_cause(exc)
        if cause == "time point":
            raise TimePointInvalid(error=one_line(exc)) from None
        if cause == "rows":
            raise RowsRefused(operation=operation.upper(), reason=one_line(exc)) from None
        raise RuntimeError(one_line(exc)) from None
