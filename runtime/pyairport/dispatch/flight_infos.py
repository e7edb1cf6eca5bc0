"""A table's FlightInfo, as the catalog (list_schemas), the flight_info action, GetFlightInfo
and ListFlights hand it out: its schema (saying can_produce_statistics where DuckDB may ask),
a PATH descriptor and a ticket (TicketData); and the parts a scan of it splits into."""

from __future__ import annotations

import logging

import pyarrow as pa

from airport_contracts import (
    AirportError,
    Context,
    PartitionedTable,
    ScanOptions,
    ScanPartition,
    Table,
    TableAppMetadata,
    TicketData,
    TimePoint,
    flight_pb2,
    implements,
)
from airport_support.arrow_ipc import serialize_schema

from ..catalog import MutableCatalog
from ..wire.column_ids import served_reader, served_schema
from ..wire.dictionaries import declared, encoded
from .statistics import produces_statistics, with_statistics_flag

log = logging.getLogger("pyairport.dispatch")


def scan_partitions(ctx: Context, table: Table, opts: ScanOptions) -> list[ScanPartition]:
    """The parts a PartitionedTable splits a scan into, at least one. A table that fails to
    split is scanned whole: DoGet then meets (and reports) whatever made it fail."""
    if not implements(table, "PartitionedTable"):
        return [ScanPartition(token="")]
    partitioned: PartitionedTable = table  # type: ignore[assignment]
    try:
        parts = partitioned.scan_partitions(ctx, opts)
    except AirportError:
        raise
    except Exception:
        log.warning("%s: splitting a scan failed; one endpoint", table.name(), exc_info=True)
        return [ScanPartition(token="")]
    return parts or [ScanPartition(token="", rows=0)]


def served_rows(reader: pa.RecordBatchReader, string_dictionaries: bool) -> pa.RecordBatchReader:
    """A scan's rows as FlightInfos.served declares them (the same rule, so that the stream
    and the declaration agree), wherever the scan is served."""
    reader = served_reader(reader)
    return encoded(reader) if string_dictionaries else reader


REUSE_CONNECTION = "arrow-flight-reuse-connection://?"
"""The location that tells a client to reuse its connection (no address configured)."""


class FlightInfos:
    """string_dictionaries: tables' string columns are declared, and streamed, as Arrow
    dictionaries (wire/dictionaries.py)."""

    def __init__(self, catalog: MutableCatalog, string_dictionaries: bool = False) -> None:
        self.catalog = catalog
        self.string_dictionaries = string_dictionaries

    def served(self, schema: pa.Schema) -> pa.Schema:
        """A table's schema as its clients are told it: in the served order, with its string
        columns as dictionaries when the server serves them so."""
        schema = served_schema(schema)
        return declared(schema) if self.string_dictionaries else schema

    def served_rows(self, reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
        return served_rows(reader, self.string_dictionaries)

    def for_table(
        self,
        schema_name: str,
        table: Table,
        with_catalog: bool = False,
        ticket_catalog: bool | None = None,
    ) -> flight_pb2.FlightInfo:
        """A table's FlightInfo; with_catalog adds the app_metadata DuckDB reads (and, unless
        ticket_catalog says otherwise, the catalog name in the ticket)."""
        in_ticket = with_catalog if ticket_catalog is None else ticket_catalog
        ticket = TicketData(
            catalog=self.catalog.name() if in_ticket else "", schema=schema_name, table=table.name()
        )
        app_metadata = TableAppMetadata(
            schema=schema_name,
            catalog=self.catalog.name(),
            name=table.name(),
            comment=table.comment(),
            input_schema=None,
            action_name=None,
            description=None,
            extra_data=None,
        )
        schema = self.served(table.arrow_schema(None))
        if produces_statistics(table, schema):
            schema = with_statistics_flag(schema)
        return flight_pb2.FlightInfo(
            schema=serialize_schema(schema),
            flight_descriptor=flight_pb2.FlightDescriptor(
                type=flight_pb2.FlightDescriptor.PATH, path=[schema_name, table.name()]
            ),
            endpoint=[flight_pb2.FlightEndpoint(ticket=flight_pb2.Ticket(ticket=ticket.to_json()))],
            total_records=-1,
            total_bytes=-1,
            ordered=False,
            app_metadata=app_metadata.encode() if with_catalog else b"",
        )

    @staticmethod
    def row_count(ctx: Context, table: Table, point: TimePoint | None) -> int:
        """The table's rows (at point) when it knows them cheaply (a PartitionedTable's parts
        say; deviation total_records_counted), else -1."""
        if not implements(table, "PartitionedTable"):
            return -1
        parts = scan_partitions(ctx, table, ScanOptions(time_point=point, rows_only=True))
        rows = [part.rows for part in parts]
        return sum(rows) if all(r >= 0 for r in rows) else -1
