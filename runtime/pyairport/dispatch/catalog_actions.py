"""DoAction, the read side's actions (protocol §2.5-2.7): the catalog (list_schemas,
catalog_version), a scan's endpoints and tickets, and a table's FlightInfo at a point in time.

DuckDB's UPDATE and DELETE scan the table for rowids first, so a server is only usable from
DuckDB with this side served too. Bodies and answers are the contract's payloads (ACTIONS);
the catalog itself is Go's map[string]any tree, msgpack with [][]byte as bin, zstd-compressed.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

import pyarrow as pa

from airport_contracts import (
    AirportError,
    CatalogNameMismatch,
    CatalogPayloadEmpty,
    CatalogVersionResponse,
    Context,
    DynamicSchemaTable,
    EndpointsDescriptorNotPath,
    EndpointsInvalidDescriptor,
    EndpointsParameters,
    FlightInfoPathInvalid,
    FunctionCallRequest,
    InvalidPayload,
    ListSchemasFailed,
    ScanOptions,
    ScanPartition,
    ScanSchemaNotFound,
    SchemaRequest,
    Table,
    TableRef,
    TicketData,
    TimePoint,
    TimeTravelUnsupported,
    flight_pb2,
    implements,
)
from airport_contracts.dispatch import ACTIONS
from airport_contracts.vocabulary import Action
from airport_support.arrow_ipc import serialize_schema
from airport_support.compressed import pack_compressed, pack_endpoints
from airport_support.rows import ActionRow

from ..access.grants import readable
from ..catalog import MutableCatalog
from ..wire.column_ids import names_for_ids, needs_no_columns
from ..wire.go_text import go_quote
from .flight_infos import REUSE_CONNECTION, FlightInfos, scan_partitions
from .functions import Functions
from .scan_location import DataWorkers, DetachableTable, data_workers, scan_location
from .statistics import Statistics
from .table_refs import function_call_uri
from .tables import SCAN_LOOKUP, Tables

DEFAULT_SCHEMA = "main"  # Go: catalog.DefaultSchemaName
EMPTY_SHA256 = "0" * 64


def check_catalog(catalog: MutableCatalog, requested: str) -> None:
    if requested != catalog.name():
        raise CatalogNameMismatch(expected=go_quote(catalog.name()), got=go_quote(requested))


def decode(action: ActionRow, body: bytes, decoded: Any = None) -> Any:
    """An action's body as its request payload (decoded: the body already decoded, by the
    transport when it routed the call); the action's own error when it does not decode."""
    assert action.request is not None
    if decoded is not None:
        return decoded
    try:
        return action.request.decode(body)
    except InvalidPayload as exc:
        if action.bad_request is None:
            raise
        raise action.bad_request(error=exc.problem) from None


def time_point(unit: str, value: str) -> TimePoint | None:
    """A time point when both unit and value are given (DuckDB's units are upper case: Go
    lowers the ones it knows; pyairport compares them without case)."""
    if not unit or not value:
        return None
    return TimePoint(unit=unit.lower(), value=value)


def schema_at(ctx: Context, table: Table, point: TimePoint | None) -> pa.Schema:
    """The table's schema at point (today's without one, or when it cannot say)."""
    if point is None or not implements(table, "DynamicSchemaTable"):
        return table.arrow_schema(None)
    dynamic: DynamicSchemaTable = table  # type: ignore[assignment]
    return dynamic.schema_for_request(ctx, SchemaRequest(time_point=point))


def _descriptor(raw: bytes) -> flight_pb2.FlightDescriptor:
    descriptor = flight_pb2.FlightDescriptor()
    try:
        descriptor.ParseFromString(raw)
    except Exception as exc:
        raise EndpointsInvalidDescriptor(error=exc) from None
    return descriptor


class CatalogActions:
    """The read side's actions over one catalog, for one server address (location:
    grpc://host:port, or "" to let clients reuse their connection)."""

    def __init__(self, tables: Tables, infos: FlightInfos, functions: Functions) -> None:
        self.tables = tables
        self.infos = infos
        self.functions = functions
        self.statistics = Statistics(tables)

    @property
    def location(self) -> str:
        return self.functions.location

    @property
    def catalog(self) -> MutableCatalog:
        return self.tables.catalog  # type: ignore[return-value]

    def catalog_version(self, ctx: Context, body: bytes, decoded: Any = None) -> bytes:
        if not body:
            raise CatalogPayloadEmpty()
        request = decode(ACTIONS[Action.CATALOG_VERSION], body, decoded)
        check_catalog(self.catalog, request.catalog_name)
        self.catalog.refresh()
        version, fixed = self.catalog.version()
        return CatalogVersionResponse(catalog_version=version, is_fixed=fixed).encode()

    def list_schemas(self, ctx: Context, body: bytes, decoded: Any = None) -> bytes:
        requested = ""
        if body:
            try:  # Go logs a bad body and carries on
                requested = decode(ACTIONS[Action.LIST_SCHEMAS], body, decoded).catalog_name
            except AirportError:
                requested = ""
        check_catalog(self.catalog, requested)
        try:
            self.catalog.refresh()
            schemas = readable(ctx, self.catalog.schemas(ctx), lambda s: s.name())
        except AirportError:
            raise
        except Exception as exc:
            raise ListSchemasFailed(error=exc) from exc
        version, fixed = self.catalog.version()
        entries = []
        for schema in sorted(schemas, key=lambda s: s.name()):
            infos = [
                self.infos.for_table(schema.name(), table, with_catalog=True).SerializeToString()
                for table in schema.tables(ctx)
            ]
            infos += [i.SerializeToString() for i in self.functions.catalog_infos(ctx, schema)]
            serialized = pack_compressed(infos, bin_type=True)
            entries.append(
                {
                    "name": schema.name(),
                    "description": schema.comment(),
                    "tags": {},
                    "contents": {
                        "sha256": hashlib.sha256(serialized).hexdigest(),
                        "url": None,
                        "serialized": serialized,
                    },
                    "is_default": schema.name() == DEFAULT_SCHEMA,
                }
            )
        root = {
            "contents": {"sha256": EMPTY_SHA256, "url": None, "serialized": None},
            "schemas": entries,
            "version_info": {"catalog_version": version, "is_fixed": fixed},
        }
        return pack_compressed(root)

    def endpoints(self, ctx: Context, body: bytes, decoded: Any = None) -> bytes:
        request = decode(ACTIONS[Action.ENDPOINTS], body, decoded)
        parameters = request.parameters or EndpointsParameters()
        descriptor = _descriptor(request.descriptor)
        if descriptor.type != flight_pb2.FlightDescriptor.PATH or len(descriptor.path) != 2:
            raise EndpointsDescriptorNotPath()
        schema_name, table_name = descriptor.path
        point = time_point(parameters.at_unit, parameters.at_value)
        if parameters.table_function_parameters:
            ticket = self.functions.ticket(
                ctx,
                schema_name,
                table_name,
                parameters.table_function_parameters,
                parameters.column_ids,
                parameters.json_filters.encode(),
                point,
            )
            return self._endpoint(ticket)
        # a table not (yet) there still gets its endpoint: DoGet says it is not found
        schema = self.tables.schema(
            ctx, schema_name, lambda error: ScanSchemaNotFound(schema=schema_name)
        )
        table = self.tables.table_in(ctx, schema, table_name, None) if schema else None
        columns: list[str] = []
        rows_only = needs_no_columns(parameters.column_ids, parameters.json_filters)
        if table is not None:
            # DuckDB numbers the columns of the schema it bound: the past's, with a time point.
            # A count names only the rowid, which DuckDB may still read (a cross product
            # copies its vector): it stays typed, the values a table may leave null.
            columns = names_for_ids(schema_at(ctx, table, point), parameters.column_ids)
        ticket = TicketData(
            catalog=self.catalog.name(),
            schema=schema_name,
            table=table_name,
            time_point_unit=point.unit if point else "",
            time_point_value=point.value if point else "",
            columns=columns,
            filters=parameters.json_filters.encode(),
            rows_only=rows_only,
        )
        if table is not None and implements(table, "TableRef"):
            ref: TableRef = table  # type: ignore[assignment]
            request_calls = FunctionCallRequest(
                filters=parameters.json_filters, columns=columns, time_point=point
            )
            calls = ref.function_calls(ctx, request_calls)
            if calls:  # DuckDB reads the scan itself (deviation table_refs_beside_tables)
                return self._endpoint(
                    *(ticket for _ in calls), uris=[function_call_uri(c) for c in calls]
                )
        # Only a table that is there is read elsewhere: the contract's errors (not found, …)
        # come from this server, exactly.
        at = scan_location(ctx) if table is not None else None
        if table is None or not implements(table, "PartitionedTable"):
            return self._endpoint(ticket, at=at)
        options = ScanOptions(
            columns=columns,
            filter=ticket.filters or None,
            time_point=point,
            rows_only=rows_only,
        )
        parts = scan_partitions(ctx, table, options)
        workers = data_workers(ctx)
        if workers is not None and isinstance(table, DetachableTable):
            at_workers = self._at_workers(ctx, workers, table, ticket, options, parts)
            if at_workers is not None:
                return at_workers
        return self._endpoint(
            *(
                replace(ticket, partition=part.token, partition_rows=max(part.rows, 0))
                for part in parts
            ),
            at=at,
        )

    def _at_workers(
        self,
        ctx: Context,
        workers: DataWorkers,
        table: DetachableTable,
        ticket: TicketData,
        options: ScanOptions,
        parts: list[ScanPartition],
    ) -> bytes | None:
        """The parts' endpoints at data workers, each ticket sealed for the caller; None when
        a part cannot be read apart from this server (Spark reads it)."""
        plans = [table.detached_part(ctx, replace(options, partition=p.token)) for p in parts]
        if not parts or any(plan is None for plan in plans):
            return None
        named = (self.catalog.name(), ticket.schema, ticket.table)
        placed = [
            workers.endpoint(
                ctx,
                named,
                plan,
                part.rows if part.rows > 0 else -1,
                list(ticket.columns),
                ticket.rows_only,
                self.infos.string_dictionaries,
            )
            for plan, part in zip(plans, parts, strict=True)
            if plan is not None
        ]
        return pack_endpoints(
            flight_pb2.FlightEndpoint(
                ticket=flight_pb2.Ticket(ticket=sealed), location=[flight_pb2.Location(uri=uri)]
            ).SerializeToString()
            for sealed, uri in placed
        )

    def _endpoint(
        self, *tickets: TicketData, uris: list[str] | None = None, at: str | None = None
    ) -> bytes:
        """One endpoint per ticket, at `at` or else this server (or at uris, one each: a
        TableRef's function calls)."""
        here = at or self.location or REUSE_CONNECTION
        return pack_endpoints(
            flight_pb2.FlightEndpoint(
                ticket=flight_pb2.Ticket(ticket=ticket.to_json()),
                location=[flight_pb2.Location(uri=uris[i] if uris else here)],
            ).SerializeToString()
            for i, ticket in enumerate(tickets)
        )

    def column_statistics(self, ctx: Context, body: bytes, decoded: Any = None) -> bytes:
        request = decode(ACTIONS[Action.COLUMN_STATISTICS], body, decoded)
        return self.statistics.column_statistics(ctx, request)

    def table_function_flight_info(self, ctx: Context, body: bytes, decoded: Any = None) -> bytes:
        return self.functions.flight_info(
            ctx, decode(ACTIONS[Action.TABLE_FUNCTION_FLIGHT_INFO], body, decoded)
        )

    def flight_info(self, ctx: Context, body: bytes, decoded: Any = None) -> bytes:
        """DuckDB's time travel (`AT (VERSION => …)`) asks for the table's FlightInfo at a
        point first: its schema then, and a ticket (the point travels in endpoints' one)."""
        request = decode(ACTIONS[Action.FLIGHT_INFO], body, decoded)
        descriptor = _descriptor(request.descriptor)
        path = list(descriptor.path)
        if len(path) != 2:
            raise FlightInfoPathInvalid(path="[" + " ".join(path) + "]")
        schema_name, table_name = path
        table = self.tables.table(ctx, schema_name, table_name, SCAN_LOOKUP)
        point = time_point(request.at_unit, request.at_value)
        info = self.infos.for_table(schema_name, table, with_catalog=True, ticket_catalog=False)
        if point is not None:
            if not implements(table, "DynamicSchemaTable"):
                raise TimeTravelUnsupported(schema=schema_name, table=table_name)
            # without can_produce_statistics: a table's statistics describe its rows now
            info.schema = serialize_schema(self.infos.served(schema_at(ctx, table, point)))
        info.total_records = self.infos.row_count(ctx, table, point)
        info.flight_descriptor.CopyFrom(descriptor)
        return info.SerializeToString()
