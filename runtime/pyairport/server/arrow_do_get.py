"""DoGet served by Arrow C++'s Flight server (pyarrow's FlightServerBase): Arrow encodes and
sends each batch without Python's lock, which grpcio's Python server takes per message. The
data socket (data_plane.py) and the data workers (data_worker.py) are built on it; what
differs between them is how a call's ticket becomes a scan (an Opener).

What Arrow's server cannot do is the contract's exact statuses: it appends ". Detail:
<code>" to every message and has no class for INVALID_ARGUMENT, NOT_FOUND and the like (they
arrive as UNKNOWN). So its addresses are only ever handed out for scans whose contract errors
have already come from the catalog, exactly.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.flight as flight

from airport_contracts import AirportError, Context, StatusCode

from ..dispatch import ProgressReport, ServedScan
from ..wire.compression import codec_for
from ..wire.dictionaries import has_dictionaries
from ..wire.go_text import go_string
from .ahead import Ahead
from .grpc_call import first_values
from .internal_error import unexpected
from .metrics import ReadCounter, ReadMetrics

log = logging.getLogger("pyairport.data_plane")

Batches = Generator[tuple[pa.RecordBatch, bytes], None, None]  # with each batch's app_metadata

Opener = Callable[[Context, dict[str, str], bytes], ServedScan]
"""How a DoGet's (cancellable Context, headers, ticket) becomes the scan it streams; raises
what the client is refused with."""

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


class DoGetServer(flight.FlightServerBase):  # type: ignore[misc]
    """Serves DoGet at location, each ticket opened by opener; every other RPC is refused.
    compression: wire/compression.SETTINGS, decided per peer."""

    def __init__(
        self,
        location: str,
        opener: Opener,
        metrics: ReadMetrics | None = None,
        compression: str = "none",
        tls: tuple[bytes, bytes] | None = None,
    ) -> None:
        super().__init__(
            location,
            middleware={_HEADERS: _Headers()},
            tls_certificates=[tls] if tls is not None else None,
        )
        self._opener = opener
        self._metrics = metrics
        self._compression = compression
        self.scans = 0  # streams opened here (a count, for the logs and the tests)
        self._counting = threading.Lock()

    def do_get(self, context: Any, ticket: flight.Ticket) -> flight.GeneratorStream:
        headers: dict[str, str] = context.get_middleware(_HEADERS).headers
        ctx, cancel = Context.background().with_cancel()
        call = _Call(self._metrics, context, cancel)
        try:
            served = self._opener(ctx, headers, ticket.ticket)
        except Exception as exc:
            error = _sent_as(exc, "DoGet")
            call.ended(error)
            raise error from None
        if served.internal:
            call = _Call(None, context, cancel)
        with self._counting:
            self.scans += 1
        log.debug("DoGet on Arrow C++'s server")
        stream = _batches(ProgressReport(served), ReadCounter(call.metrics, served.table))
        codec = codec_for(self._compression, context.peer(), served.rows_only)
        options = pa.ipc.IpcWriteOptions(compression=codec) if codec else None
        schema = served.reader.schema
        if has_dictionaries(schema):
            # pyarrow's GeneratorStream sends no dictionary messages; a reader's stream does,
            # but without a batch's app_metadata: these streams report no progress.
            batches = (batch for batch, _ in _ending(stream, call))
            reader = pa.RecordBatchReader.from_batches(schema, batches)
            return flight.RecordBatchStream(reader, options=options)
        return flight.GeneratorStream(schema, _ending(stream, call), options=options)

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


class _Headers(flight.ServerMiddlewareFactory):  # type: ignore[misc]
    def start_call(self, info: Any, headers: dict[str, list[Any]]) -> _CallHeaders:
        return _CallHeaders(headers)


class _CallHeaders(flight.ServerMiddleware):  # type: ignore[misc]
    """The call's headers as the port's calls read them (grpc_call.first_values)."""

    def __init__(self, headers: dict[str, list[Any]]) -> None:
        self.headers = first_values((k, v) for k, values in headers.items() for v in values)


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
    """One DoGet: its Context's cancel, and its end counted as the catalog's calls are
    (pyairport_calls, rpc DoGet)."""

    def __init__(self, metrics: ReadMetrics | None, context: Any, cancel: Callable[[], None]):
        self.metrics = metrics
        self._context = context
        self._cancel = cancel
        self._started = time.perf_counter()

    def cancelled(self) -> bool:
        return bool(self._context.is_cancelled())

    def ended(self, error: Exception | None = None) -> None:
        """The call is over (error: what the client is sent)."""
        self._cancel()
        if self.metrics is not None:
            if error is None:
                code = "CANCELLED" if self.cancelled() else "OK"
            else:
                code = _STATUS_OF.get(type(error), "UNKNOWN")
            self.metrics.called("DoGet", None, code, time.perf_counter() - self._started)


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
        refused = _FLIGHT_ERRORS.get(StatusCode(exc.code), flight.FlightServerError)
        sent = refused(go_string(exc.message))
    elif isinstance(exc, flight.FlightError):
        sent = exc
    else:
        sent = flight.FlightInternalError(unexpected(what, exc))
    return sent


def _only_do_get() -> Exception:
    refused: Exception = flight.FlightServerError("this address serves scans (DoGet) only")
    return refused
