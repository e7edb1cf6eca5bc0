"""Prometheus metrics of one server (`serve --metrics-port N`: the text format at /metrics).

What is counted: every Flight call by RPC, by the action or operation it named and by the
gRPC status it ended with, and its latency; the rows and bytes each table sent to readers;
the rows and bytes each DML statement wrote and how every statement ended (from the audit point); the
functions called; the transactions under way; whether the engine under the catalogs (Spark)
is up. Label values are catalog, schema, table and function names the catalog serves, and
the contract's own action and operation names — never an identity, a token or anything else
a client chose (an action or operation the contract does not name is `other`), so neither
privacy nor the number of series depends on what clients send.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import grpc
import pyarrow as pa
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from airport_contracts.dispatch import ROUTES

if TYPE_CHECKING:  # grpc-stubs make it generic; grpcio's class is not subscriptable
    _Interceptor = grpc.ServerInterceptor[Any, Any]
else:
    _Interceptor = grpc.ServerInterceptor

FLIGHT_SERVICE = "/arrow.flight.protocol.FlightService/"
OPERATION_HEADER = "airport-operation"

KNOWN_NAMES = frozenset(name for _protocol, name in ROUTES)
"""The action and operation names a label may hold: the contract's."""

DML_OPERATIONS = frozenset({"insert", "update", "delete"})
NO_STATEMENT = frozenset({"read"})  # a function's read of a table is audited, not a statement


class ReadMetrics(Protocol):
    """What a DoGet server reports of its calls (arrow_do_get.py): a server's own
    ServerMetrics, or a data worker's report to the server that started it."""

    def called(self, rpc: str, method: str | None, code: str, seconds: float) -> None: ...

    def read(self, where: tuple[str, str, str], rows: int, nbytes: int, sent: int) -> None: ...


def _known(name: str | None) -> str:
    if not name:
        return "-"
    return name if name in KNOWN_NAMES else "other"


class ServerMetrics:
    """The metrics of one server, in a registry of their own (a process may run several
    servers: tests, an application embedding two)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.calls = Counter(
            "pyairport_calls",
            "Flight calls by RPC, the action or operation they named and their gRPC status",
            ["rpc", "method", "code"],
            registry=r,
        )
        self.latency = Histogram(
            "pyairport_call_seconds",
            "Flight calls' duration, from the call's start to its last message",
            ["rpc"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=r,
        )
        table = ["catalog", "schema", "table"]
        self.rows_read = Counter("pyairport_rows_read", "Rows sent to readers", table, registry=r)
        self.bytes_read = Counter(
            "pyairport_bytes_read", "Arrow bytes sent to readers", table, registry=r
        )
        self.bytes_sent = Counter(
            "pyairport_bytes_sent",
            "Bytes of the Flight messages sent to readers, as compressed (--compression)",
            table,
            registry=r,
        )
        self.rows_written = Counter(
            "pyairport_rows_written",
            "Rows committed by INSERT, UPDATE and DELETE",
            [*table, "operation"],
            registry=r,
        )
        self.bytes_written = Counter(
            "pyairport_bytes_written",
            "Arrow bytes clients sent in committed INSERT, UPDATE and DELETE statements",
            [*table, "operation"],
            registry=r,
        )
        self.statements = Counter(
            "pyairport_statements",
            "DML and DDL statements by outcome (committed, failed: rolled back)",
            ["catalog", "operation", "outcome"],
            registry=r,
        )
        self.function_calls = Counter(
            "pyairport_function_calls",
            "Calls of the catalog's functions",
            ["catalog", "schema", "function"],
            registry=r,
        )
        self.active_transactions = Gauge(
            "pyairport_active_transactions", "Transactions begun and not yet ended", registry=r
        )
        self.engine_up = Gauge(
            "pyairport_engine_up",
            "1 while the engine under the catalogs answers (Spark's JVM), 0 once it is gone",
            registry=r,
        )
        self.engine_up.set(1)
        self.worker_up = Gauge(
            "pyairport_data_worker_up",
            "1 while a data worker is named in endpoints (its own: own/N; another host's: its"
            " address), 0 while it is down; gone once a joined worker left",
            ["worker"],
            registry=r,
        )
        self.worker_parts = Counter(
            "pyairport_data_worker_parts",
            "Scan parts whose endpoints named a data worker",
            ["worker"],
            registry=r,
        )
        self._http: Any = None

    # --- what the transport and the observers report ----------------------------------------

    def statement(
        self,
        operation: str,
        where: tuple[str, ...],
        rows: int | None,
        error: BaseException | None,
        nbytes: int | None = None,
    ) -> None:
        if operation in NO_STATEMENT:
            return
        operation = _known(operation)
        outcome = "committed" if error is None else "failed"
        self.statements.labels(where[0], operation, outcome).inc()
        if error is None and operation in DML_OPERATIONS and len(where) == 3:
            if rows:
                self.rows_written.labels(*where, operation).inc(rows)
            if nbytes:
                self.bytes_written.labels(*where, operation).inc(nbytes)

    def function_call(self, catalog: str, schema: str, name: str) -> None:
        self.function_calls.labels(catalog, schema, name).inc()

    def called(self, rpc: str, method: str | None, code: str, seconds: float) -> None:
        """A Flight call ended with the gRPC status code (its name) after seconds."""
        self.calls.labels(rpc, _known(method), code).inc()
        self.latency.labels(rpc).observe(seconds)

    def read(self, where: tuple[str, str, str], rows: int, nbytes: int, sent: int) -> None:
        self.rows_read.labels(*where).inc(rows)
        self.bytes_read.labels(*where).inc(nbytes)
        self.bytes_sent.labels(*where).inc(sent)

    def count_transactions(self, active: Callable[[], int]) -> None:
        self.active_transactions.set_function(active)

    # --- serving /metrics ------------------------------------------------------------------

    def serve(self, host: str, port: int) -> int:
        """Serve /metrics on host:port (0: a free one); the port."""
        server, _ = start_http_server(port, host, registry=self.registry)
        self._http = server
        return int(server.server_port)

    def stop(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None


class CallMetrics(_Interceptor):
    """Counts and times every Flight call at the edge, whatever ends it: an answer, an abort
    with a status, the client going away (CANCELLED)."""

    def __init__(self, metrics: ServerMetrics) -> None:
        self.metrics = metrics

    def intercept_service(self, continuation: Callable[..., Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None or not details.method.startswith(FLIGHT_SERVICE):
            return handler  # the health service, an unknown method: not Flight calls
        rpc = details.method[len(FLIGHT_SERVICE) :]
        headers = dict(details.invocation_metadata or ())
        operation = headers.get(OPERATION_HEADER)
        if handler.unary_unary is not None:
            return handler._replace(unary_unary=self._unary(rpc, handler.unary_unary))
        if handler.unary_stream is not None:
            return handler._replace(
                unary_stream=self._streaming(rpc, operation, handler.unary_stream)
            )
        if handler.stream_stream is not None:
            return handler._replace(
                stream_stream=self._streaming(rpc, operation, handler.stream_stream)
            )
        return handler

    def _record(
        self,
        rpc: str,
        method: str | None,
        context: Any,
        started: float,
        error: BaseException | None,
    ) -> None:
        code = context.code() if callable(getattr(context, "code", None)) else None
        if code is None:
            if error is None:
                code = grpc.StatusCode.OK
            elif isinstance(error, GeneratorExit):
                code = grpc.StatusCode.CANCELLED
            else:
                code = grpc.StatusCode.UNKNOWN
        self.metrics.called(rpc, method, code.name, time.perf_counter() - started)

    def _unary(self, rpc: str, behavior: Callable[..., Any]) -> Callable[..., Any]:
        def observed(request: Any, context: Any) -> Any:
            started, error = time.perf_counter(), None
            try:
                return behavior(request, context)
            except BaseException as exc:
                error = exc
                raise
            finally:
                self._record(rpc, None, context, started, error)

        return observed

    def _streaming(
        self, rpc: str, operation: str | None, behavior: Callable[..., Any]
    ) -> Callable[..., Any]:
        def observed(request: Any, context: Any) -> Iterator[Any]:
            started, error = time.perf_counter(), None
            # DoAction names its action in the request, DoExchange its operation in a header
            method = getattr(request, "type", None) if rpc == "DoAction" else operation
            try:
                yield from behavior(request, context)
            except BaseException as exc:
                error = exc
                raise
            finally:
                self._record(rpc, method, context, started, error)

        return observed


class ReadCounter:
    """Counts what one DoGet sends for a table, and reports it once the stream ends."""

    def __init__(self, metrics: ReadMetrics | None, where: tuple[str, str, str] | None) -> None:
        self._metrics = metrics if where is not None else None
        self._where = where
        self.rows = 0
        self.nbytes = 0
        self.wire_bytes = 0
        self._lock = threading.Lock()

    def sent(self, batch: pa.RecordBatch, wire_bytes: int) -> None:
        """batch went out in wire_bytes (its FlightData, compressed or not)."""
        if self._metrics is not None:
            self.rows += batch.num_rows
            self.nbytes += batch.nbytes
            self.wire_bytes += wire_bytes

    def done(self) -> None:
        with self._lock:
            if self._metrics is not None and self._where is not None:
                self._metrics.read(self._where, self.rows, self.nbytes, self.wire_bytes)
                self._metrics = None


def active_transactions(managers: Callable[[], Iterable[object]]) -> Callable[[], int]:
    """How many transactions are under way in the managers that can say (an in-memory
    TransactionManager can; an application's own may not)."""

    def count() -> int:
        total = 0
        for manager in managers():
            active = getattr(manager, "active_count", None)
            if callable(active):
                total += int(active())
        return total

    return count
