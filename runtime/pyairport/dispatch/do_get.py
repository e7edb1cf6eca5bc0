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

from ..column_ids import served_reader
from .catalog_actions import check_catalog, time_point
from .flight_infos import FlightInfos
from .functions import Functions
from .tables import SCAN_LOOKUP, Tables


def parse_ticket(data: bytes) -> TicketData:
    """A DoGet ticket; what does not decode, or names no table, is InvalidTicket."""
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

    def scan(self, ctx: Context, ticket_bytes: bytes) -> pa.RecordBatchReader:
        ticket = parse_ticket(ticket_bytes)
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
            columns=list(ticket.columns), filter=ticket.filters or None, time_point=point
        )
        try:
            reader = table.scan(ctx, options)
        except AirportError:
            raise
        except Exception as exc:
            raise ScanFailed(error=exc) from exc
        if point is not None:  # the past's schema may differ from today's (Go skips the check)
            return served_reader(reader)
        expected = table.arrow_schema(None)
        if len(reader.schema) != len(expected) or not all(
            reader.schema.field(i).equals(expected.field(i), check_metadata=True)
            for i in range(len(expected))
        ):
            raise ScanSchemaMismatch(table_fields=len(expected), reader_fields=len(reader.schema))
        return served_reader(reader)

    def flight_info(
        self, ctx: Context, descriptor: flight_pb2.FlightDescriptor
    ) -> flight_pb2.FlightInfo:
        if descriptor.type != flight_pb2.FlightDescriptor.PATH:
            raise FlightInfoNotPath()
        if len(descriptor.path) != 2:
            raise FlightInfoPathLength()
        schema_name, table_name = descriptor.path
        table = self.tables.table(ctx, schema_name, table_name, SCAN_LOOKUP)
        return self.infos.for_table(schema_name, table)

    def list_flights(self, ctx: Context) -> Iterator[flight_pb2.FlightInfo]:
        for schema in sorted(self.tables.catalog.schemas(ctx), key=lambda s: s.name()):
            for table in schema.tables(ctx):
                yield self.infos.for_table(schema.name(), table)
