"""Scans for clients on this host, served by Arrow C++'s Flight server over a Unix socket.

grpcio's Python server takes a Python step per message, under the lock every other client's
call needs too; Arrow C++'s server encodes and sends without it, so several clients read at
once faster (docs/benchmarks.md, `tpch_q1_floor.py`; one query alone is about as fast: what
bounds it is DuckDB taking the columns in). A Unix socket, because only a client on this
host can use an address the catalog's grpcio server does not serve: with a data socket
configured, the endpoints a client on this host asks for (DuckDB's scans) name it instead of
the catalog's address. Python makes each batch (the same scan as the catalog's DoGet), never
a message.

The socket serves DoGet only, under the catalog's own rules: the caller's bearer token goes
through the same Authenticator, the ticket through the same routing and grants
(FlightService.scan). What it cannot do is the contract's exact statuses: Arrow's server
appends ". Detail: <code>" to every message and has no class for INVALID_ARGUMENT,
NOT_FOUND and the like (they arrive as UNKNOWN). Hence endpoints point here only for a table
that exists, where the contract's errors have already come from the catalog, exactly; and
any client can read every scan at the catalog's address as before.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.flight as flight

from airport_contracts import AirportError, Context, StatusCode

from ..dispatch import ProgressReport
from .ahead import Ahead
from .grpc_call import first_values
from .metrics import ReadCounter, ServerMetrics
from .transport import FlightService, unexpected

log = logging.getLogger("pyairport.data_plane")

AUTO = "auto"
"""data_socket's value for a socket in a directory of the server's own, removed at stop."""

Batches = Generator[tuple[pa.RecordBatch, bytes], None, None]  # with each batch's app_metadata

_HEADERS = "headers"  # the middleware that hands do_get the call's headers

# The statuses Arrow's Python server can send; any other arrives as UNKNOWN.
_FLIGHT_ERRORS: dict[StatusCode, type[flight.FlightError]] = {
    StatusCode.UNAUTHENTICATED: flight.FlightUnauthenticatedError,
    StatusCode.PERMISSION_DENIED: flight.FlightUnauthorizedError,
    StatusCode.UNAVAILABLE: flight.FlightUnavailableError,
    StatusCode.CANCELLED: flight.FlightCancelledError,
    StatusCode.DEADLINE_EXCEEDED: flight.FlightTimedOutError,
    StatusCode.INTERNAL: flight.FlightInternalError,
}
_STATUS_OF = {error: code.name for code, error in _FLIGHT_ERRORS.items()}


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
                self._server = _DoGetServer(self.location, service)
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


class _Headers(flight.ServerMiddlewareFactory):  # type: ignore[misc]
    def start_call(self, info: Any, headers: dict[str, list[Any]]) -> _CallHeaders:
        return _CallHeaders(headers)


class _CallHeaders(flight.ServerMiddleware):  # type: ignore[misc]
    """The call's headers as the port's calls read them (grpc_call.first_values)."""

    def __init__(self, headers: dict[str, list[Any]]) -> None:
        self.headers = first_values((k, v) for k, values in headers.items() for v in values)


class _DoGetServer(flight.FlightServerBase):  # type: ignore[misc]
    def __init__(self, location: str, service: FlightService) -> None:
        super().__init__(location, middleware={_HEADERS: _Headers()})
        self._service = service
        self.scans = 0  # streams opened here (a count, for the logs and the tests)
        self._counting = threading.Lock()

    def do_get(self, context: Any, ticket: flight.Ticket) -> flight.GeneratorStream:
        headers: dict[str, str] = context.get_middleware(_HEADERS).headers
        ctx, cancel = Context.background().with_cancel()
        call = _Call(self._service.metrics, context, cancel)
        try:
            ctx = self._service.admit(ctx, "DoGet", headers)
            served = self._service.scan(ctx, headers, ticket.ticket)
        except Exception as exc:
            error = _sent_as(exc, "DoGet")
            call.ended(error)
            raise error from None
        with self._counting:
            self.scans += 1
        log.debug("DoGet on the data plane")
        stream = _batches(ProgressReport(served), ReadCounter(self._service.metrics, served.table))
        return flight.GeneratorStream(served.reader.schema, _ending(stream, call))

    # Everything but DoGet is the catalog's: refused here in one line, without a traceback.
    def list_flights(self, context: Any, criteria: bytes) -> Iterator[Any]:
        raise _only_do_get()

    def get_flight_info(self, context: Any, descriptor: Any) -> Any:
        raise _only_do_get()

    def get_schema(self, context: Any, descriptor: Any) -> Any:
        raise _only_do_get()

    def do_put(self, context: Any, descriptor: Any, reader: Any, writer: Any) -> None:
        raise _only_do_get()

    def do_exchange(self, context: Any, descriptor: Any, reader: Any, writer: Any) -> None:
        raise _only_do_get()

    def do_action(self, context: Any, action: Any) -> Iterator[bytes]:
        raise _only_do_get()

    def list_actions(self, context: Any) -> list[Any]:
        raise _only_do_get()


def _batches(report: ProgressReport, counted: ReadCounter) -> Batches:
    """The scan's batches with their progress, made ahead while Arrow sends one."""
    ahead = Ahead(report.next)
    try:
        while (item := ahead.next()) is not None:
            counted.sent(item[0], item[0].nbytes)
            yield item
    finally:
        ahead.close()
        counted.done()  # what was sent, also when the client stopped reading


class _Call:
    """One DoGet on the socket: its Context's cancel, and its end counted as the catalog's
    calls are (pyairport_calls, rpc DoGet)."""

    def __init__(self, metrics: ServerMetrics | None, context: Any, cancel: Callable[[], None]):
        self._metrics = metrics
        self._context = context
        self._cancel = cancel
        self._started = time.perf_counter()

    def cancelled(self) -> bool:
        return bool(self._context.is_cancelled())

    def ended(self, error: Exception | None = None) -> None:
        """The call is over (error: what the client is sent)."""
        self._cancel()
        if self._metrics is not None:
            if error is None:
                code = "CANCELLED" if self.cancelled() else "OK"
            else:
                code = _STATUS_OF.get(type(error), "UNKNOWN")
            self._metrics.called("DoGet", None, code, time.perf_counter() - self._started)


def _ending(stream: Batches, call: _Call) -> Batches:
    """stream until it ends, fails or the client cancels; then the call ends, and a failure
    is sent as the catalog's DoGet would word it."""
    error: Exception | None = None
    try:
        for item in stream:
            if call.cancelled():
                return
            yield item
    except Exception as exc:
        error = _sent_as(exc, "DoGet")
        raise error from None
    finally:
        call.ended(error)
        stream.close()  # ends the scan now, not when the generator is collected


def _sent_as(exc: Exception, what: str) -> Exception:
    """The Flight error exc goes to the client as: a contract error's message under its
    status where Arrow has one; anything else logged here and INTERNAL, never a traceback."""
    sent: Exception
    if isinstance(exc, AirportError):
        sent = _FLIGHT_ERRORS.get(StatusCode(exc.code), flight.FlightServerError)(exc.message)
    elif isinstance(exc, flight.FlightError):
        sent = exc
    else:
        sent = flight.FlightInternalError(unexpected(what, exc))
    return sent


def _only_do_get() -> Exception:
    refused: Exception = flight.FlightServerError("this address serves scans (DoGet) only")
    return refused


def _unusable(path: str) -> str | None:
    """Why path cannot be the socket, or None. gRPC replaces a socket file it finds there:
    one a live server answers on is refused, a stale one is taken over."""
    if len(os.fsencode(path)) > _LONGEST_SOCKET_PATH:
        return f"longer than a Unix socket's path may be ({_LONGEST_SOCKET_PATH} bytes)"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except OSError:
            return None
    return "a server is listening there"


_LONGEST_SOCKET_PATH = 107  # sockaddr_un's sun_path, less its terminating NUL
