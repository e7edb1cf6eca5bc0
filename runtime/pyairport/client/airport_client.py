"""AirportClient: INSERT, UPDATE and DELETE over Flight the way DuckDB sends them, and the
catalog listing and scans DuckDB reads with.

Built on the generated gRPC stubs rather than pyarrow.flight so that callers (tests,
benchmarks, scripts) see the server's exact status code, message and final-metadata bytes.
With RETURNING the server answers each input batch before it reads the next (protocol
§1.12). DuckDB waits for that answer before it sends again (lock_step=True does the same);
by default the client keeps sending while it reads, so a statement costs no round trip per
batch.
"""

from __future__ import annotations

import queue
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import grpc
import pyarrow as pa

from airport_contracts import (
    CatalogVersionParams,
    CatalogVersionResponse,
    CreateTransactionRequest,
    CreateTransactionResponse,
    DeleteActionResult,
    DMLResponse,
    FinalMetadata,
    GetTransactionStatusRequest,
    GetTransactionStatusResponse,
    ListSchemasRequest,
    flight_pb2,
    flight_pb2_grpc,
)
from airport_contracts.client import DdlCalls, DmlCalls
from airport_contracts.dispatch import PROTOCOLS
from airport_contracts.vocabulary import Action, Header, Protocol
from airport_support.vocabulary import HeaderRole

from .. import filters
from ..wire.column_ids import ids_for_names
from ..wire.ipc import encode_batch, read_message, schema_message
from .errors import remote_error
from .remote_catalog import (
    SchemaInfo,
    TableInfo,
    decode_catalog,
    decode_endpoints,
    endpoints_request,
    table_info,
)
from .streams import END, input_batches, pipelined, streaming_call

RETURNING_TRUE = next(
    h.true_value for h in PROTOCOLS[Protocol.DOEXCHANGE].headers if h.role is HeaderRole.RETURNING
)
"""The return-chunks value that asks for RETURNING rows."""
CATALOG_HEADER = next(
    h.name for h in PROTOCOLS[Protocol.DOACTION].headers if h.role is HeaderRole.CATALOG
)

# The headers the client takes in an answer (trailers with long messages): the server's default.
MAX_HEADER_BYTES = 64 * 1024


@dataclass(frozen=True)
class DMLAnswer:
    """What the server answered: the output schema, RETURNING rows, the changed-row count and
    the raw final metadata."""

    schema: pa.Schema | None
    returning: pa.Table | None
    total_changed: int
    final_metadata: bytes


@dataclass(frozen=True)
class PutAnswer:
    """A spec-002 answer: status, affected rows, RETURNING rows, and the decoded payload."""

    status: str
    affected_rows: int
    returning: pa.Table | None
    payload: DMLResponse | DeleteActionResult


def _ipc_table(data: bytes | None) -> pa.Table | None:
    return pa.ipc.open_stream(data).read_all() if data else None


class AirportClient(DdlCalls[TableInfo], DmlCalls[DMLAnswer, PutAnswer]):
    """A Flight client for pyairport and airport-go servers.

    location: "grpc://host:port" or "grpc+tls://host:port" (tls_root_certificates: PEM to
    trust, e.g. a self-signed server certificate). token: sent as "authorization: Bearer <token>".
    """

    def __init__(
        self,
        location: str,
        token: str | None = None,
        max_message_bytes: int = 64 * 1024 * 1024,
        tls_root_certificates: bytes | None = None,
        catalog: str | None = None,
    ) -> None:
        """catalog: the catalog of a server of several to address, sent as DuckDB 1.5 does
        (the airport-catalog header on every call); None addresses the default catalog."""
        parsed = urlparse(location)
        if (
            parsed.scheme not in ("grpc", "grpc+tcp", "grpc+tls")
            or not parsed.hostname
            or not parsed.port
        ):
            raise ValueError(f"expected grpc://host:port or grpc+tls://host:port, got {location!r}")
        options = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_metadata_size", MAX_HEADER_BYTES),
            ("grpc.absolute_max_metadata_size", MAX_HEADER_BYTES),
        ]
        target = f"{parsed.hostname}:{parsed.port}"
        if parsed.scheme == "grpc+tls":
            credentials = grpc.ssl_channel_credentials(root_certificates=tls_root_certificates)
            self._channel = grpc.secure_channel(target, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(target, options=options)
        self.stub = flight_pb2_grpc.FlightServiceStub(self._channel)  # type: ignore[no-untyped-call]
        # DoExchange and DoPut send FlightData wire bytes built from pyarrow's buffer
        # (ipc.encode_batch): a FlightData object would copy each batch's body three more times.
        self._do_exchange: Any = self._channel.stream_stream(  # untyped, like self.stub
            "/arrow.flight.protocol.FlightService/DoExchange",
            request_serializer=bytes,
            response_deserializer=flight_pb2.FlightData.FromString,
        )
        self._do_put: Any = self._channel.stream_stream(
            "/arrow.flight.protocol.FlightService/DoPut",
            request_serializer=bytes,
            response_deserializer=flight_pb2.PutResult.FromString,
        )
        self._token = token
        self._catalog = catalog

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> AirportClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def metadata(self, extra: dict[str, str] | None = None) -> list[tuple[str, str]]:
        headers = dict(extra or {})
        if self._token:
            headers["authorization"] = f"Bearer {self._token}"
        if self._catalog is not None:
            headers.setdefault(CATALOG_HEADER, self._catalog)
        return sorted(headers.items())

    # --- DoExchange DML ------------------------------------------------------------------------

    def exchange(
        self,
        operation: str,
        schema: str,
        table: str,
        data: pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch],
        *,
        returning: bool = False,
        transaction_id: str | None = None,
        batch_rows: int | None = None,
        headers: dict[str, str] | None = None,
        lock_step: bool = False,
    ) -> DMLAnswer:
        """One DoExchange DML call with DuckDB's headers and message order.

        lock_step (with returning): send a batch only after the answer to the previous one
        has arrived, as DuckDB does."""
        input_schema, batches = input_batches(data, batch_rows)
        call_headers: dict[str, str] = {
            Header.AIRPORT_OPERATION: operation,
            Header.AIRPORT_FLIGHT_PATH: f"{schema}/{table}",
        }
        if returning:
            call_headers[Header.RETURN_CHUNKS] = RETURNING_TRUE
        if transaction_id:
            call_headers[Header.AIRPORT_TRANSACTION_ID] = transaction_id
        call_headers.update(headers or {})
        descriptor = flight_pb2.FlightDescriptor(
            type=flight_pb2.FlightDescriptor.PATH, path=[schema, table]
        )
        first = schema_message(input_schema)
        first.flight_descriptor.CopyFrom(descriptor)
        with streaming_call(
            self._do_exchange, first.SerializeToString(), self.metadata(call_headers)
        ) as (responses, outbox):
            if returning and lock_step:
                return self._lock_step(responses, outbox, batches)
            return pipelined(responses, outbox, batches, _collect)

    def _lock_step(
        self,
        responses: Iterator[flight_pb2.FlightData],
        outbox: queue.Queue[object],
        batches: Iterator[pa.RecordBatch],
    ) -> DMLAnswer:
        first = next(responses)
        out_schema = pa.ipc.read_schema(read_message(first))
        returned = []
        for batch in batches:
            outbox.put(encode_batch(batch))
            message = read_message(next(responses))
            returned.append(pa.ipc.read_record_batch(message, out_schema))
        outbox.put(END)
        answer = _collect(responses, out_schema)
        table = pa.Table.from_batches(
            returned + (answer.returning.to_batches() if answer.returning else []),
            schema=out_schema,
        )
        return DMLAnswer(out_schema, table, answer.total_changed, answer.final_metadata)

    # --- spec 002: DoPut INSERT/UPDATE, DoAction DELETE -------------------------------------------

    def put_command(
        self,
        command: bytes,
        data: pa.Table | pa.RecordBatchReader | Iterable[pa.RecordBatch],
        *,
        transaction_id: str | None = None,
    ) -> PutAnswer:
        """DoPut with any descriptor command (for clients that build their own JSON)."""
        return self._answer(DMLResponse.decode(self._put(command, data, transaction_id)))

    def _put(
        self,
        command: bytes,
        data: pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch],
        transaction_id: str | None,
    ) -> bytes:
        schema, batches = input_batches(data, None)
        first = schema_message(schema)
        first.flight_descriptor.CopyFrom(
            flight_pb2.FlightDescriptor(type=flight_pb2.FlightDescriptor.CMD, cmd=command)
        )
        headers: dict[str, str] = (
            {Header.X_TRANSACTION_ID: transaction_id} if transaction_id else {}
        )
        call = streaming_call(self._do_put, first.SerializeToString(), self.metadata(headers))
        with call as (results, outbox):
            return pipelined(results, outbox, batches, _put_metadata)

    def _answer(self, response: DMLResponse | DeleteActionResult) -> PutAnswer:
        return PutAnswer(
            response.status, response.affected_rows, _ipc_table(response.returning_data), response
        )

    # --- transactions ------------------------------------------------------------------------

    def begin_transaction(self, catalog_name: str = "") -> str | None:
        """create_transaction: the new transaction id, or None when the server has no manager."""
        body = CreateTransactionRequest(catalog_name=catalog_name).to_msgpack()
        (result,) = self.action(Action.CREATE_TRANSACTION, body)
        return CreateTransactionResponse.from_msgpack(result).identifier

    def transaction_status(self, transaction_id: str) -> tuple[str, bool]:
        """get_transaction_status: (state or "", exists)."""
        body = GetTransactionStatusRequest(transaction_id=transaction_id).to_msgpack()
        (result,) = self.action(Action.GET_TRANSACTION_STATUS, body)
        response = GetTransactionStatusResponse.from_msgpack(result)
        return response.status, response.exists

    # --- reading: the catalog and scans, as DuckDB reads them ---------------------------------

    def list_schemas(self, catalog_name: str = "") -> list[SchemaInfo]:
        """Every schema of the catalog with its tables (list_schemas, decoded as DuckDB does)."""
        body = ListSchemasRequest(catalog_name=catalog_name).encode()
        (answer,) = self.action(Action.LIST_SCHEMAS, body)
        return decode_catalog(answer)

    def catalog_version(self, catalog_name: str = "") -> int:
        """The catalog's version (catalog_version): it moves whenever the catalog changes."""
        body = CatalogVersionParams(catalog_name=catalog_name).encode()
        (answer,) = self.action(Action.CATALOG_VERSION, body)
        version: int = CatalogVersionResponse.decode(answer).catalog_version
        return version

    def list_tables(self, schema: str, catalog_name: str = "") -> list[TableInfo]:
        """The tables of one schema: names, comments and Arrow schemas (rowid column included)."""
        for found in self.list_schemas(catalog_name):
            if found.name == schema:
                return list(found.tables)
        raise LookupError(f"the catalog has no schema {schema!r}")

    def scan(
        self,
        schema: str,
        table: str,
        columns: Sequence[str] | None = None,
        filter: filters.Predicate | str | None = None,  # noqa: A002 - the SQL word
        *,
        transaction_id: str | None = None,
    ) -> pa.RecordBatchReader:
        """Read a table as DuckDB does (endpoints, then DoGet), streamed batch by batch.

        columns: the columns to return (None: all of them, the rowid column included, so the
        rows can be updated or deleted by rowid). filter: a `pyairport.filters` predicate
        (e.g. `And((Compare("id", ">", 2), IsNull("email", negated=True)))`), sent as DuckDB's
        `json_filters` and applied again here exactly, as DuckDB does: a server may push down
        part of a filter or none of it. A str is DuckDB's json_filters as it is; then only the
        parts pyairport understands are applied again."""
        headers: dict[str, str] = (
            {Header.AIRPORT_TRANSACTION_ID: transaction_id} if transaction_id else {}
        )
        descriptor = flight_pb2.FlightDescriptor(
            type=flight_pb2.FlightDescriptor.PATH, path=[schema, table]
        )
        try:
            info = self.stub.GetFlightInfo(descriptor, metadata=self.metadata(headers))
        except grpc.RpcError as error:
            raise remote_error(error) from None
        table_schema = pa.ipc.read_schema(pa.py_buffer(info.schema))
        wanted = list(columns) if columns is not None else table_schema.names
        if isinstance(filter, str):
            json_filters, predicate = filter, filters.parse(filter, table_schema)
        elif filter is not None:
            json_filters, predicate = filters.to_json(filter, table_schema), filter
        else:
            json_filters, predicate = "", None
        # Ask for the filter's columns too: a server may leave unrequested columns empty
        # (Spark does), and the filter is applied again here.
        filtered = filters.columns_of(predicate) if predicate is not None else []
        read = wanted + [name for name in filtered if name not in wanted]
        request = endpoints_request(schema, table, ids_for_names(table_schema, read), json_filters)
        (answer,) = self.action(Action.ENDPOINTS, request, headers)
        tickets = [endpoint.ticket for endpoint in decode_endpoints(answer)]
        expression = filters.arrow_expression(predicate) if predicate is not None else None
        # One server, one connection: an endpoint's location names this server (or asks to
        # reuse the connection) on pyairport and airport-go alike.
        streams = [self.stub.DoGet(ticket, metadata=self.metadata(headers)) for ticket in tickets]
        try:
            stream_schema = pa.ipc.read_schema(read_message(next(streams[0])))
        except grpc.RpcError as error:
            raise remote_error(error) from None
        out_schema = pa.schema([stream_schema.field(name) for name in wanted])

        def batches() -> Iterator[pa.RecordBatch]:
            try:
                for number, stream in enumerate(streams):
                    if number:
                        next(stream)  # each stream starts with its schema
                    for data in stream:
                        batch = pa.ipc.read_record_batch(read_message(data), stream_schema)
                        if expression is not None:
                            batch = batch.filter(expression)
                        yield batch.select(wanted)
            except grpc.RpcError as error:
                raise remote_error(error) from None

        return pa.RecordBatchReader.from_batches(out_schema, batches())

    # --- DoAction ------------------------------------------------------------------------------

    def action(
        self, action_type: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> list[bytes]:
        """One DoAction: its Result bodies."""
        try:
            results = self.stub.DoAction(
                flight_pb2.Action(type=action_type, body=body), metadata=self.metadata(headers)
            )
            return [r.body for r in results]
        except grpc.RpcError as error:
            raise remote_error(error) from None

    def _table_info(self, answer: bytes) -> TableInfo | None:
        return table_info(answer)


def _put_metadata(results: Iterator[flight_pb2.PutResult]) -> bytes:
    """A spec-002 DoPut's answer: its one PutResult's app_metadata (a msgpack DMLResponse)."""
    first = next(results, None)
    if first is None:
        raise ValueError("the server ended DoPut without a PutResult")
    for _ in results:  # to the end of the call, for its status
        continue
    metadata: bytes = first.app_metadata
    return metadata


def _collect(
    responses: Iterator[flight_pb2.FlightData], schema: pa.Schema | None = None
) -> DMLAnswer:
    """Read the rest of a DoExchange answer: schema (if not yet read), batches, final metadata."""
    batches = []
    final = b""
    for data in responses:
        if data.data_header:
            message = read_message(data)
            if message.type == "schema":
                schema = pa.ipc.read_schema(message)
            else:
                batches.append(pa.ipc.read_record_batch(message, schema))
        if data.app_metadata:
            final = data.app_metadata
    total = FinalMetadata.from_msgpack(final).total_changed if final else 0
    table = (
        pa.Table.from_batches(batches, schema=schema) if batches and schema is not None else None
    )
    return DMLAnswer(schema, table, total, final)
