"""Waiting in tests for what another thread or process does in its own time (a watcher's
probe, a worker's report): the condition polled until it holds or the time is up."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Whether condition came to hold within seconds (polled each 0.1 s)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True
