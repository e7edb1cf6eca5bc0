"""A table's FlightInfo, as the catalog (list_schemas), the flight_info action, GetFlightInfo
and ListFlights hand it out: its schema (saying can_produce_statistics where DuckDB may ask),
a PATH descriptor and a ticket (TicketData); and the parts a scan of it splits into."""

from __future__ import annotations

import logging

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
from ..wire.column_ids import served_schema
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


REUSE_CONNECTION = "arrow-flight-reuse-connection://?"
"""The location that tells a client to reuse its connection (no address configured)."""


class FlightInfos:
    def __init__(self, catalog: MutableCatalog) -> None:
        self.catalog = catalog

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
        schema = served_schema(table.arrow_schema(None))
        if produces_statistics(table):
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
