"""Who a log line is about: every record logged while a call is served carries the call's
identity, trace id and session id (record.identity, record.trace, record.session; "-" when
unknown), whichever logger writes it, so a formatter can print them on every line."""

from __future__ import annotations

import contextvars
import logging
import threading
from typing import Any

_CALL: contextvars.ContextVar[tuple[str, str, str]] = contextvars.ContextVar(
    "pyairport_call", default=("-", "-", "-")
)
_installed = threading.Lock()
_factory_installed = False

FORMAT = "%(asctime)s %(levelname)s %(name)s [%(identity)s trace=%(trace)s session=%(session)s]: %(message)s"
"""The CLI's log format: the call's identity, trace and session on every line."""


def serving(identity: str, trace_id: str, session_id: str) -> None:
    """The call this thread now serves (gRPC runs a call's handler on one worker thread)."""
    _CALL.set((identity or "-", trace_id or "-", session_id or "-"))


def install() -> None:
    """Give every log record the call's fields (once per process)."""
    global _factory_installed
    with _installed:
        if _factory_installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            record.identity, record.trace, record.session = _CALL.get()
            return record

        logging.setLogRecordFactory(factory)
        _factory_installed = True
