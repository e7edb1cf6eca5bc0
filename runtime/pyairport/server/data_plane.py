"""Scans for clients on this host, served by Arrow C++'s Flight server over a Unix socket.

grpcio's Python server takes a Python step per message, under the lock every other client's
call needs too; Arrow C++'s server encodes and sends without it, so several clients read at
once faster (docs/benchmarks.md, `tpch_q1_floor.py`; one query alone is about as fast: what
bounds it is DuckDB taking the columns in). A Unix socket, because only a client on this
host can use an address the catalog's grpcio server does not serve: with a data socket
configured, the endpoints a client on this host asks for (DuckDB's scans) name it instead of
the catalog's address. Python makes each batch (the same scan as the catalog's DoGet), never
a message.

The socket serves DoGet only (arrow_do_get.py), under the catalog's own rules: the caller's
bearer token goes through the same Authenticator, the ticket through the same routing and
grants (FlightService.scan). Endpoints point here only for a table that exists, where the
contract's errors have already come from the catalog, exactly; and any client can read every
scan at the catalog's address as before.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from airport_contracts import Context

from ..dispatch import ServedScan
from .arrow_do_get import DoGetServer
from .transport import FlightService

AUTO = "auto"
"""data_socket's value for a socket in a directory of the server's own, removed at stop."""


class DataPlane:
    """DoGet of service's scans on a Unix socket at path (AUTO: one of its own); location
    is what endpoints name. Stopped with stop(); the socket file goes with it."""

    def __init__(self, path: str, service: FlightService) -> None:
        self._own_dir = tempfile.mkdtemp(prefix="pyairport-data-") if path == AUTO else None
        self.path = str(Path(self._own_dir, "data.sock")) if self._own_dir else path
        self.location = f"grpc+unix://{self.path}"
        why = _unusable(self.path)
        try:
            if why is None:
                self._server = DoGetServer(
                    self.location, _catalog_scans(service), service.metrics, service.compression
                )
        except (OSError, pa.ArrowException):
            why = "no such folder, not a socket, or no permission"
        if why is not None:
            self._remove_own_dir()
            raise OSError(f"cannot listen on {self.path}: {why}")
        if self._own_dir is not None:
            # Clients of other users on this host reach it as they reach a loopback port;
            # the bearer token decides, as there.
            os.chmod(self._own_dir, 0o711)
            os.chmod(self.path, 0o666)

    @property
    def scans(self) -> int:
        """How many scans it has opened."""
        count: int = self._server.scans
        return count

    def stop(self, grace: float | None) -> None:
        """Stop serving; streams under way get grace seconds (None: as long as they take)."""
        stopper = threading.Thread(target=self._server.shutdown, daemon=True)
        stopper.start()
        stopper.join(grace)
        self._remove_own_dir()

    def _remove_own_dir(self) -> None:
        if self._own_dir is not None:
            shutil.rmtree(self._own_dir, ignore_errors=True)


def _catalog_scans(
    service: FlightService,
) -> Callable[[Context, dict[str, str], bytes], ServedScan]:
    """Opens a ticket as the catalog's DoGet does: the caller admitted, then routed."""

    def scan(ctx: Context, headers: dict[str, str], ticket: bytes) -> ServedScan:
        return service.scan(service.admit(ctx, "DoGet", headers), headers, ticket)

    return scan


def _unusable(path: str) -> str | None:
    """Why path cannot be the socket, or None. gRPC replaces a socket file it finds there:
    one a live server answers on is refused, a stale one is taken over."""
    if len(os.fsencode(path)) > LONGEST_SOCKET_PATH:
        return f"longer than a Unix socket's path may be ({LONGEST_SOCKET_PATH} bytes)"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except OSError:
            return None
    return "a server is listening there"


LONGEST_SOCKET_PATH = 107  # sockaddr_un's sun_path, less its terminating NUL
