"""What a client is told of a failure no contract error names: that it failed, never how (the
exception, its traceback and any path in it go to the server's log only)."""

from __future__ import annotations

import logging

log = logging.getLogger("pyairport.transport")


def unexpected(what: str, exc: BaseException) -> str:
    """The INTERNAL message a client gets for an exception no contract error names; the
    exception itself is logged here, never sent (no traceback, no path)."""
    log.error("%s failed unexpectedly", what, exc_info=exc)
    return f"{what} failed: internal server error"
