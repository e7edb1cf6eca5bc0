"""DoGet, GetFlightInfo and ListFlights (protocol §2.7): a table's rows for the ticket an
endpoint handed out (TicketData), and tables' FlightInfos."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from airport_contracts import (
    AirportError,
    Context,
    FlightInfoNotPath,
    FlightInfoPathLength,
    InvalidPayload,
    InvalidTicket,
    ScanFailed,
    ScanOptions,
    ScanSchemaMismatch,
    TicketData,
    TimeTravelUnsupported,
    flight_pb2,
    implements,
)

from ..access.grants import readable
from ..wire.column_ids import requested_only
from .catalog_actions import check_catalog, time_point
from .flight_infos import FlightInfos
from .functions import Functions
from .served_scan import ServedScan
from .tables import SCAN_LOOKUP, Tables


def parse_ticket(data: bytes, decoded: TicketData | None = None) -> TicketData:
    """A DoGet ticket (decoded: data already decoded, by the transport to route the call);
    what does not decode, or names no table, is InvalidTicket."""
    ticket = decoded
    if ticket is None:
        try:
            ticket = TicketData.from_json(data)
        except InvalidPayload as exc:
            raise InvalidTicket(reason=exc.problem) from None
    if not ticket.schema:
        raise InvalidTicket(reason="missing schema")
    if not ticket.table and not ticket.table_function:
        raise InvalidTicket(reason="missing table")
    if bool(ticket.time_point_unit) != bool(ticket.time_point_value):
        raise InvalidTicket(reason="time_point_unit and time_point_value go together")
    return ticket


class Scans:
    """DoGet and the FlightInfo RPCs over one catalog."""

    def __init__(self, tables: Tables, infos: FlightInfos, functions: Functions) -> None:
        self.tables = tables
        self.infos = infos
        self.functions = functions

    def scan(
        self, ctx: Context, ticket_bytes: bytes, decoded: TicketData | None = None
    ) -> ServedScan:
        ticket = parse_ticket(ticket_bytes, decoded)
        reader = self._rows(ctx, ticket)
        table = None
        if ticket.table:  # looked up and authorized by _rows: a name the catalog serves
            table = (self.infos.catalog.name(), ticket.schema, ticket.table)
        return ServedScan(reader, ticket.partition_rows or -1, table, ticket.rows_only)

    def _rows(self, ctx: Context, ticket: TicketData) -> pa.RecordBatchReader:
        check_catalog(self.infos.catalog, ticket.catalog)
        point = time_point(ticket.time_point_unit, ticket.time_point_value)
        if ticket.table_function and not ticket.table:
            options = ScanOptions(
                columns=list(ticket.columns), filter=ticket.filters or None, time_point=point
            )
            return self.functions.scan(ctx, ticket, options)
        table = self.tables.table(ctx, ticket.schema, ticket.table, SCAN_LOOKUP)
        if point is not None and not implements(table, "DynamicSchemaTable"):
            # deviation time_point_refused_when_unsupported: never today's rows for the past's
            raise TimeTravelUnsupported(schema=ticket.schema, table=ticket.table)
        options = ScanOptions(
            columns=list(ticket.columns),
            filter=ticket.filters or None,
            time_point=point,
            rows_only=ticket.rows_only,
            partition=ticket.partition,
        )
        try:
            reader = table.scan(ctx, options)
        except AirportError:
            raise
        except Exception as exc:
            raise ScanFailed(error=exc) from exc
        if point is None:  # the past's schema may differ from today's (Go skips the check)
            expected = table.arrow_schema(None)
            if len(reader.schema) != len(expected) or not all(
                reader.schema.field(i).equals(expected.field(i), check_metadata=True)
                for i in range(len(expected))
            ):
                raise ScanSchemaMismatch(
                    table_fields=len(expected), reader_fields=len(reader.schema)
                )
        if ticket.columns or ticket.rows_only:
            reader = requested_only(reader, ticket.columns)
        return self.infos.served_rows(reader)

    def flight_info(
        self, ctx: Context, descriptor: flight_pb2.FlightDescriptor
    ) -> flight_pb2.FlightInfo:
        if descriptor.type != flight_pb2.FlightDescriptor.PATH:
            raise FlightInfoNotPath()
        if len(descriptor.path) != 2:
            raise FlightInfoPathLength()
        schema_name, table_name = descriptor.path
        table = self.tables.table(ctx, schema_name, table_name, SCAN_LOOKUP)
        # the ticket names the catalog, as Go's GetFlightInfo's: DoGet checks it
        info = self.infos.for_table(schema_name, table, ticket_catalog=True)
        info.total_records = self.infos.row_count(ctx, table, None)
        return info

    def list_flights(self, ctx: Context) -> Iterator[flight_pb2.FlightInfo]:
        schemas = readable(ctx, self.tables.catalog.schemas(ctx), lambda s: s.name())
        for schema in sorted(schemas, key=lambda s: s.name()):
            for table in schema.tables(ctx):
                yield self.infos.for_table(schema.name(), table, ticket_catalog=True)
