"""The workers a server hands scan parts to (server/data_workers.py), without a lake: a worker
on another host is named in endpoints only while it accepts connections, so a worker that is
down costs no query (the server serves the parts itself until it is back)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from pyairport.server.data_worker import DataWorker
from pyairport.server.data_workers import DataWorkers, WorkerFlags
from pyairport.server.ticket_seal import TicketSeal, new_key


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _unread(ctx: object, plan: bytes) -> object:
    raise AssertionError("no plan is read here")


def test_a_remote_worker_is_named_only_while_it_answers() -> None:
    key = new_key()
    port = _free_port()
    at = f"grpc://127.0.0.1:{port}"
    workers = DataWorkers(key, 0, [at], WorkerFlags(), _unread)  # type: ignore[arg-type]
    try:
        assert workers.for_peer("ipv4:127.0.0.1:5000") is None  # down: the server serves
        worker = DataWorker(at, TicketSeal(key), _unread)  # type: ignore[arg-type]
        try:
            assert _until(lambda: workers.for_peer("ipv4:10.1.2.3:5000") is not None)
            placement = workers.for_peer("ipv4:10.1.2.3:5000")
            assert placement is not None and placement.locations == [at]
        finally:
            worker.stop(0)
        assert _until(lambda: workers.for_peer("ipv4:10.1.2.3:5000") is None)
    finally:
        workers.stop()
