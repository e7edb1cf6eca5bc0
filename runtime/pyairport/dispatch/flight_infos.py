"""A table's FlightInfo, as the catalog (list_schemas), the flight_info action, GetFlightInfo
and ListFlights hand it out: its schema, a PATH descriptor and a ticket (TicketData)."""

from __future__ import annotations

from airport_contracts import Table, TableAppMetadata, TicketData, flight_pb2

from ..catalog import MutableCatalog
from ..column_ids import served_schema
from ..ipc import serialize_schema

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
        return flight_pb2.FlightInfo(
            schema=serialize_schema(served_schema(table.arrow_schema(None))),
            flight_descriptor=flight_pb2.FlightDescriptor(
                type=flight_pb2.FlightDescriptor.PATH, path=[schema_name, table.name()]
            ),
            endpoint=[flight_pb2.FlightEndpoint(ticket=flight_pb2.Ticket(ticket=ticket.to_json()))],
            total_records=-1,
            total_bytes=-1,
            ordered=False,
            app_metadata=app_metadata.encode() if with_catalog else b"",
        )
