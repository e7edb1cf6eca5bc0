"""The Flight gRPC service: decodes calls, hands them to the generated dispatcher, and
turns the contract's errors into gRPC statuses.

It knows nothing of tables. A contract error becomes its code and exact message; any other
exception is logged with its traceback here and the client gets INTERNAL with a short
message: never a traceback or a file path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import grpc
import pyarrow as pa

from airport_contracts import (
    AirportError,
    Canceled,
    Context,
    MissingDescriptor,
    StatusCode,
    flight_pb2,
    flight_pb2_grpc,
    identity_from_context,
    with_context_meta,
    with_transaction_id,
)
from airport_contracts.dispatch import PROTOCOLS
from airport_contracts.vocabulary import Protocol

from ..access.audit import with_call_start
from ..access.gate import Access
from ..access.tokens import AUTHORIZATION_HEADER
from ..dispatch import (
    Dispatcher,
    OutputBatch,
    OutputFinal,
    OutputSchema,
    ProgressReport,
    ServedScan,
    context_meta,
    parse_exchange_headers,
    transaction_id_from_headers,
)
from ..dispatch.scan_location import WorkerPool, with_data_workers, with_scan_location
from ..observers import with_observer
from ..wire.compression import BatchEncoder, codec_for, on_this_host
from ..wire.go_text import go_string
from ..wire.ipc import FlightDataInput, encode_app_metadata, encode_batch, encode_schema
from ..wire.ipc_body import MAX_MESSAGE_BYTES
from . import call_log
from .ahead import Ahead
from .grpc_call import call_context, call_headers
from .internal_error import unexpected
from .metrics import ReadCounter, ServerMetrics
from .routing import (
    DATABASES_TICKET,
    Catalogs,
    catalog_in_body,
    decoded_body,
    decoded_ticket,
)
from .ticket_seal import PREFIX as SEALED

log = logging.getLogger("pyairport.transport")

T = TypeVar("T")


def client_messages(
    request_iterator: Iterator[flight_pb2.FlightData], grpc_context: grpc.ServicerContext
) -> Iterator[flight_pb2.FlightData]:
    """The client's messages, ending only if the client really finished sending.

    grpcio can end a cancelled call's request stream as if the client had half-closed it and
    flag the cancellation only when its polling thread gets to the next event — later still
    when other threads hold the GIL (a fixed wait missed most of them then). So at the end,
    ask for one more message: the call answers that request after any event already queued
    for it, so the answer is the end again only if the client did finish. A client that went
    away, here or earlier, is Canceled: the statement rolls back, and is never committed.
    """
    try:
        yield from request_iterator
        next(request_iterator, None)
    except grpc.RpcError:
        raise Canceled() from None
    if not grpc_context.is_active():
        raise Canceled()


_PROTOCOL_OF = {row.transport: Protocol(row.id) for row in PROTOCOLS.values()}
"""The protocol whose headers each RPC carries, from the contract's rows (ListFlights, which
no row names, carries GetFlightInfo's)."""


def _abort(grpc_context: grpc.ServicerContext, error: AirportError) -> None:
    grpc_context.abort(grpc.StatusCode[StatusCode(error.code).name], go_string(error.message))


class FlightService(flight_pb2_grpc.FlightServiceServicer):
    """Arrow Flight over grpcio: every RPC of the contract, handed to the dispatcher of the
    catalog it is for (catalogs.py).

    extra_actions: DoAction types of the embedding application's own, served before the
    contract's: name → fn(ctx, body, headers) returning the Result bodies. data_plane: the
    address whose scans a client on this host is sent to read (server/data_plane.py).
    max_batch_bytes: the most a client's compressed batch may decompress to."""

    def __init__(
        self,
        catalogs: Catalogs,
        extra_actions: dict[str, Callable[..., list[bytes]]] | None = None,
        access: Access | None = None,
        metrics: ServerMetrics | None = None,
        compression: str = "auto",
        data_plane: str | None = None,
        max_batch_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self.catalogs = catalogs
        self.max_batch_bytes = max_batch_bytes  # the most a client's batch decompresses to
        self.data_plane = data_plane  # where clients on this host read scans (data_plane.py)
        self.data_workers: WorkerPool | None = None  # who reads tables' parts (data_workers.py)
        self.extra_actions = dict(extra_actions or {})
        self.access = access or Access()
        self.metrics = metrics
        self.compression = compression  # wire/compression.SETTINGS

    def _call(self, grpc_context: grpc.ServicerContext, rpc: str) -> tuple[Context, dict[str, str]]:
        """The call's Context and its headers; a caller the Authenticator refuses ends here."""
        headers = call_headers(grpc_context)
        ctx = self._guard(
            grpc_context, rpc, lambda: self.admit(call_context(grpc_context), rpc, headers)
        )
        return ctx, headers

    def admit(self, ctx: Context, rpc: str, headers: dict[str, str]) -> Context:
        """ctx carrying the call's ContextMeta (trace id, session, …) and the caller's
        identity, or the Authenticator's refusal. Every log line of the call names its
        identity, trace and session (call_log)."""
        meta = context_meta(
            _PROTOCOL_OF.get(rpc, Protocol.GETFLIGHTINFO), headers, AUTHORIZATION_HEADER
        )
        call_log.serving("-", meta.trace_id, meta.session_id)
        ctx = with_call_start(with_context_meta(ctx, meta))
        if self.metrics is not None:
            ctx = with_observer(ctx, self.metrics)
        ctx = self.access.admit(ctx)
        call_log.serving(identity_from_context(ctx), meta.trace_id, meta.session_id)
        log.debug("%s agent=%s", rpc, meta.user_agent or "-")
        return ctx

    def _route(
        self, ctx: Context, protocol: str, headers: dict[str, str], named: str | None = None
    ) -> tuple[Context, Dispatcher]:
        """The catalog the call is for, authorized for the caller before it is looked up (a
        refused caller learns nothing of whether it exists), and its dispatcher."""
        name = self.catalogs.target(ctx, protocol, headers, named)
        ctx = self.access.authorize(ctx, name)
        return ctx, self.catalogs.serving(name)

    def _shown_catalogs(self, ctx: Context) -> list[str]:
        return self.access.visible(ctx, self.catalogs.names())

    def _guard(self, grpc_context: grpc.ServicerContext, what: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except AirportError as error:
            _abort(grpc_context, error)  # raises: grpc ends the call with this status
        except Exception as exc:
            grpc_context.abort(grpc.StatusCode.INTERNAL, unexpected(what, exc))
        raise AssertionError("unreachable: abort raises")

    def Handshake(
        self, request_iterator: Iterator[flight_pb2.HandshakeRequest], context: grpc.ServicerContext
    ) -> Iterator[flight_pb2.HandshakeResponse]:
        """OK with no answer, as airport-go's: the bearer token is checked on every call,
        this one too."""
        self._call(context, "Handshake")
        return iter(())

    def DoExchange(
        self, request_iterator: Iterator[flight_pb2.FlightData], context: grpc.ServicerContext
    ) -> Iterator[bytes]:  # FlightData wire bytes (see add_to_server)
        ctx, headers = self._call(context, "DoExchange")
        routed, dispatcher = self._guard(
            context, "DoExchange", lambda: self._route(ctx, Protocol.DOEXCHANGE, headers)
        )
        request = self._guard(context, "DoExchange", lambda: parse_exchange_headers(headers))
        stream = FlightDataInput(client_messages(request_iterator, context), self.max_batch_bytes)
        events = self._guard(
            context, "DoExchange", lambda: dispatcher.exchange(routed, request, stream)
        )
        try:
            while True:
                event = self._guard(context, request.operation.upper(), lambda: next(events, None))
                if event is None:
                    return
                if isinstance(event, OutputSchema):
                    yield encode_schema(event.schema, event.app_metadata)
                elif isinstance(event, OutputBatch):
                    yield encode_batch(event.batch, event.app_metadata)
                elif isinstance(event, OutputFinal):
                    yield encode_app_metadata(event.app_metadata)
        finally:
            # A client that goes away while we wait to send leaves the dispatcher suspended;
            # closing it rolls the statement back now rather than at garbage collection.
            events.close()

    def DoPut(
        self, request_iterator: Iterator[flight_pb2.FlightData], context: grpc.ServicerContext
    ) -> Iterator[flight_pb2.PutResult]:
        ctx, headers = self._call(context, "DoPut")
        stream = FlightDataInput(client_messages(request_iterator, context), self.max_batch_bytes)

        def put() -> bytes:
            routed, dispatcher = self._route(ctx, Protocol.DOPUT, headers)
            descriptor = stream.read_descriptor()
            if descriptor is None or descriptor.type != flight_pb2.FlightDescriptor.CMD:
                raise MissingDescriptor()
            tx_id = transaction_id_from_headers(Protocol.DOPUT, headers)
            return dispatcher.put(routed, descriptor.cmd, tx_id, stream)

        metadata = self._guard(context, "DoPut", put)
        yield flight_pb2.PutResult(app_metadata=metadata)

    def DoAction(
        self, request: flight_pb2.Action, context: grpc.ServicerContext
    ) -> Iterator[flight_pb2.Result]:
        ctx, headers = self._call(context, "DoAction")
        if self.data_plane is not None and on_this_host(context.peer()):
            ctx = with_scan_location(ctx, self.data_plane)
        workers = self.data_workers.for_peer(context.peer()) if self.data_workers else None
        if workers is not None:
            ctx = with_data_workers(ctx, workers)
        extra = self.extra_actions.get(request.type)
        if extra is not None:
            bodies = self._guard(context, request.type, lambda: extra(ctx, request.body, headers))
        else:
            tx_id = transaction_id_from_headers(Protocol.DOACTION, headers)

            def act() -> list[bytes]:
                decoded = decoded_body(request.type, request.body)  # for routing and action
                listing = self.catalogs.databases_endpoints(
                    request.type, decoded, lambda: self._shown_catalogs(ctx)
                )
                if listing is not None:
                    return [listing]
                several = self.catalogs.several()
                named = catalog_in_body(request.type, request.body, decoded) if several else None
                routed, dispatcher = self._route(ctx, Protocol.DOACTION, headers, named)
                return dispatcher.action(routed, request.type, request.body, tx_id, decoded)

            bodies = self._guard(context, request.type, act)
        for body in bodies:
            yield flight_pb2.Result(body=body)

    def DoGet(
        self, request: flight_pb2.Ticket, context: grpc.ServicerContext
    ) -> Iterator[bytes]:  # FlightData wire bytes (see add_to_server)
        ctx, headers = self._call(context, "DoGet")
        served = self._guard(context, "DoGet", lambda: self.scan(ctx, headers, request.ticket))
        report = ProgressReport(served)
        counted = ReadCounter(self.metrics, served.table)
        codec = codec_for(self.compression, context.peer(), served.rows_only)
        encoder = BatchEncoder(served.reader.schema, codec)

        def encoded() -> tuple[pa.RecordBatch, list[bytes]] | None:
            item = report.next()
            return None if item is None else (item[0], encoder.encode(*item))

        ahead = Ahead(encoded)  # the next batches read and encoded while one is sent
        try:
            yield encode_schema(served.reader.schema)
            while (item := self._guard(context, "DoGet", ahead.next)) is not None:
                counted.sent(item[0], sum(len(message) for message in item[1]))
                yield from item[1]
        finally:
            ahead.close()
            counted.done()  # what was sent, also when the client stopped reading

    def scan(self, ctx: Context, headers: dict[str, str], ticket: bytes) -> ServedScan:
        """The stream a DoGet of ticket serves the admitted caller (here or on the data
        plane): the catalog's list, or a scan of the catalog the ticket names."""
        transaction_id = transaction_id_from_headers(Protocol.DOGET, headers)
        if transaction_id:
            ctx = with_transaction_id(ctx, transaction_id)
        if ticket == DATABASES_TICKET:
            return ServedScan(self.catalogs.databases(self._shown_catalogs(ctx)))
        if self.data_workers is not None and ticket.startswith(SEALED):
            return self.data_workers.open_here(ctx, ticket)
        decoded = decoded_ticket(ticket) if self.catalogs.several() else None
        named = decoded.catalog if decoded is not None else None
        routed, dispatcher = self._route(ctx, Protocol.DOGET, headers, named)
        return dispatcher.get(routed, ticket, decoded)

    def GetFlightInfo(
        self, request: flight_pb2.FlightDescriptor, context: grpc.ServicerContext
    ) -> flight_pb2.FlightInfo:
        ctx, headers = self._call(context, "GetFlightInfo")
        if self.catalogs.lists_databases(request):
            return self.catalogs.databases_info(self._shown_catalogs(ctx))

        def info() -> flight_pb2.FlightInfo:
            routed, dispatcher = self._route(ctx, Protocol.GETFLIGHTINFO, headers)
            return dispatcher.get_flight_info(routed, request)

        return self._guard(context, "GetFlightInfo", info)

    def ListFlights(
        self, request: flight_pb2.Criteria, context: grpc.ServicerContext
    ) -> Iterator[flight_pb2.FlightInfo]:
        ctx, headers = self._call(context, "ListFlights")

        def infos() -> list[flight_pb2.FlightInfo]:
            routed, dispatcher = self._route(ctx, Protocol.GETFLIGHTINFO, headers)
            return list(dispatcher.list_flights(routed))

        yield from self._guard(context, "ListFlights", infos)

    def ListActions(
        self, request: flight_pb2.Empty, context: grpc.ServicerContext
    ) -> Iterator[flight_pb2.ActionType]:
        self._call(context, "ListActions")
        for name, description in sorted(Dispatcher.action_descriptions().items()):
            yield flight_pb2.ActionType(type=name, description=description)


# The methods whose answers FlightService encodes itself (ipc.encode_*): gRPC sends them as
# they are instead of serializing FlightData objects.
WIRE_ENCODED = ("DoGet", "DoExchange")


def add_to_server(service: FlightService, server: grpc.Server) -> None:
    """Register service's methods on server: the generated registration, with the answers of
    WIRE_ENCODED methods passed through as bytes."""
    generated = _Registrations()
    flight_pb2_grpc.add_FlightServiceServicer_to_server(service, generated)  # type: ignore[no-untyped-call]
    handlers = {
        # grpcio's handlers are named tuples (its type stubs do not say so)
        name: handler._replace(response_serializer=bytes) if name in WIRE_ENCODED else handler  # type: ignore[attr-defined]
        for name, handler in generated.handlers.items()
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(generated.service, handlers),)
    )
    server.add_registered_method_handlers(generated.service, handlers)  # type: ignore[attr-defined]


class _Registrations:
    """Stands in for a grpc.Server to receive what the generated registration registers."""

    def __init__(self) -> None:
        self.service = ""
        self.handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}

    def add_generic_rpc_handlers(self, handlers: object) -> None:
        """The same handlers arrive by add_registered_method_handlers."""

    def add_registered_method_handlers(
        self, service: str, handlers: dict[str, grpc.RpcMethodHandler[Any, Any]]
    ) -> None:
        self.service, self.handlers = service, dict(handlers)
