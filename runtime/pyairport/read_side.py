"""What DuckDB reads before it changes anything (protocol §2.5-2.8): the catalog
(list_schemas, catalog_version), scan endpoints and tickets, FlightInfo, and DoGet scans.

DuckDB's UPDATE and DELETE scan the table for rowids first, so a server is only usable from
DuckDB with this side served too. Byte layouts follow the Go server: msgpack maps as Go's
map[string]any (key order free), Go strings (even binary ones) as msgpack str, [][]byte as
bin; the catalog is zstd-compressed msgpack.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import msgpack
import pyarrow as pa
import zstandard

from airport_contracts import (
    AirportError,
    CatalogNameMismatch,
    CatalogPayloadEmpty,
    CatalogPayloadInvalid,
    Context,
    DynamicSchemaTable,
    EndpointsDescriptorNotPath,
    EndpointsInvalidDescriptor,
    EndpointsInvalidRequest,
    FlightInfoNotPath,
    FlightInfoPathInvalid,
    FlightInfoPathLength,
    InvalidTicket,
    ListSchemasFailed,
    ScanFailed,
    ScanOptions,
    ScanSchemaMismatch,
    ScanSchemaNotFound,
    ScanTableNotFound,
    SchemaRequest,
    Table,
    TimePoint,
    TimeTravelUnsupported,
    flight_pb2,
    implements,
)

from .catalog import MutableCatalog
from .column_ids import names_for_ids
from .ipc import serialize_schema

DEFAULT_SCHEMA = "main"  # Go: catalog.DefaultSchemaName
EMPTY_SHA256 = "0" * 64
REUSE_CONNECTION = "arrow-flight-reuse-connection://?"


def _go_quote(value: str) -> str:
    """Go's %q for the plain names catalogs have."""
    return json.dumps(value, ensure_ascii=False)


def _pack(value: Any, bin_type: bool = False) -> bytes:
    packed: bytes = msgpack.packb(value, use_bin_type=bin_type)
    return packed


def _decode_map(body: bytes) -> dict[str, Any]:
    value = msgpack.unpackb(body, raw=False, strict_map_key=False)
    if not isinstance(value, dict):
        raise ValueError(f"expected a msgpack map, got {type(value).__name__}")
    return value


class ReadSide:
    """The read operations over one catalog, for one server address."""

    def __init__(self, catalog: MutableCatalog, location: str = "") -> None:
        self.catalog = catalog
        self.location = location  # grpc://host:port, or "" to let clients reuse their connection

    @property
    def catalog_name(self) -> str:
        return self.catalog.name()

    def _check_catalog(self, requested: str) -> None:
        if requested != self.catalog_name:
            raise CatalogNameMismatch(
                expected=_go_quote(self.catalog_name), got=_go_quote(requested)
            )

    # --- actions --------------------------------------------------------------------------

    def catalog_version(self, ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        if not body:
            raise CatalogPayloadEmpty()
        try:
            requested = str(_decode_map(body).get("catalog_name", ""))
        except Exception as exc:
            raise CatalogPayloadInvalid(error=exc) from None
        self._check_catalog(requested)
        self.catalog.refresh()
        version, fixed = self.catalog.version()
        # Go encodes a struct {catalog_version uint64, is_fixed bool}: fixed key order and width.
        return [
            b"\x82"
            + _pack("catalog_version")
            + b"\xcf"
            + version.to_bytes(8, "big")
            + _pack("is_fixed")
            + _pack(fixed)
        ]

    def list_schemas(self, ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        requested = ""
        if body:
            try:  # Go logs a bad body and carries on
                requested = str(_decode_map(body).get("catalog_name", ""))
            except Exception:
                requested = ""
        self._check_catalog(requested)
        try:
            self.catalog.refresh()
            schemas = self.catalog.schemas(ctx)
        except AirportError:
            raise
        except Exception as exc:
            raise ListSchemasFailed(error=exc) from exc
        version, fixed = self.catalog.version()
        entries = []
        for schema in sorted(schemas, key=lambda s: s.name()):
            serialized = self._schema_contents(ctx, schema)
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
        return [_compressed(_pack(root))]

    def _schema_contents(self, ctx: Context, schema: Any) -> bytes:
        infos = [
            self.flight_info_for(schema.name(), table, with_catalog=True).SerializeToString()
            for table in schema.tables(ctx)
        ]
        return _compressed(_pack(infos, bin_type=True))

    def endpoints(self, ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        request, descriptor = _descriptor_request(body)
        parameters = request.get("parameters") or {}
        if not isinstance(parameters, dict):
            raise EndpointsInvalidRequest(error="parameters must be a map")
        if descriptor.type != flight_pb2.FlightDescriptor.PATH or len(descriptor.path) != 2:
            raise EndpointsDescriptorNotPath()
        schema_name, table_name = descriptor.path
        try:
            schema = self.catalog.schema(ctx, schema_name)
        except Exception:
            raise ScanSchemaNotFound(schema=schema_name) from None
        table = schema.table(ctx, table_name) if schema is not None else None
        ticket: dict[str, Any] = {
            "catalog": self.catalog_name,
            "schema": schema_name,
            "table": table_name,
        }
        filters = parameters.get("json_filters")
        if filters:
            ticket["filters"] = base64.b64encode(
                filters.encode() if isinstance(filters, str) else filters
            ).decode()
        point = _time_point(parameters.get("at_unit"), parameters.get("at_value"))
        if point is not None:
            ticket["time_point_unit"], ticket["time_point_value"] = point.unit, point.value
        if table is not None:
            # DuckDB numbers the columns of the schema it bound: the past's, with a time point
            columns = names_for_ids(
                self._schema_at(ctx, table, point), parameters.get("column_ids") or []
            )
            if columns:
                ticket["columns"] = columns
        endpoint = flight_pb2.FlightEndpoint(
            ticket=flight_pb2.Ticket(ticket=_ticket_json(ticket)),
            location=[flight_pb2.Location(uri=self.location or REUSE_CONNECTION)],
        )
        return [_pack([endpoint.SerializeToString()])]

    # --- FlightInfo ---------------------------------------------------------------------------

    def flight_info_for(
        self,
        schema_name: str,
        table: Table,
        with_catalog: bool = False,
        ticket_catalog: bool | None = None,
    ) -> flight_pb2.FlightInfo:
        """A table's FlightInfo; with_catalog adds the app_metadata DuckDB reads (and, unless
        ticket_catalog says otherwise, the catalog name in the ticket)."""
        in_ticket = with_catalog if ticket_catalog is None else ticket_catalog
        ticket = (
            {"catalog": self.catalog_name, "schema": schema_name, "table": table.name()}
            if in_ticket
            else {"schema": schema_name, "table": table.name()}
        )
        app_metadata = {
            "type": "table",
            "schema": schema_name,
            "catalog": self.catalog_name,
            "name": table.name(),
            "comment": table.comment(),
            "input_schema": None,
            "action_name": None,
            "description": None,
            "extra_data": None,
        }
        return flight_pb2.FlightInfo(
            schema=serialize_schema(table.arrow_schema(None)),
            flight_descriptor=flight_pb2.FlightDescriptor(
                type=flight_pb2.FlightDescriptor.PATH, path=[schema_name, table.name()]
            ),
            endpoint=[
                flight_pb2.FlightEndpoint(ticket=flight_pb2.Ticket(ticket=_ticket_json(ticket)))
            ],
            total_records=-1,
            total_bytes=-1,
            ordered=False,
            app_metadata=_pack(app_metadata) if with_catalog else b"",
        )

    def flight_info_action(self, ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        """DuckDB's time travel (`AT (VERSION => …)`) asks for the table's FlightInfo at a
        point first: its schema then, and a ticket (the point travels in endpoints' one)."""
        request, descriptor = _descriptor_request(body)
        path = list(descriptor.path)
        if len(path) != 2:
            raise FlightInfoPathInvalid(path="[" + " ".join(path) + "]")
        schema_name, table_name = path
        table = self._table(ctx, schema_name, table_name)
        point = _time_point(request.get("at_unit"), request.get("at_value"))
        info = self.flight_info_for(schema_name, table, with_catalog=True, ticket_catalog=False)
        if point is not None:
            if not implements(table, "DynamicSchemaTable"):
                raise TimeTravelUnsupported(schema=schema_name, table=table_name)
            info.schema = serialize_schema(self._schema_at(ctx, table, point))
        info.flight_descriptor.CopyFrom(descriptor)
        return [info.SerializeToString()]

    @staticmethod
    def _schema_at(ctx: Context, table: Table, point: TimePoint | None) -> pa.Schema:
        """The table's schema at point (today's without one, or when it cannot say)."""
        if point is None or not implements(table, "DynamicSchemaTable"):
            return table.arrow_schema(None)
        dynamic: DynamicSchemaTable = table  # type: ignore[assignment]
        return dynamic.schema_for_request(ctx, SchemaRequest(time_point=point))

    def flight_info(
        self, ctx: Context, descriptor: flight_pb2.FlightDescriptor
    ) -> flight_pb2.FlightInfo:
        if descriptor.type != flight_pb2.FlightDescriptor.PATH:
            raise FlightInfoNotPath()
        if len(descriptor.path) != 2:
            raise FlightInfoPathLength()
        schema_name, table_name = descriptor.path
        return self.flight_info_for(schema_name, self._table(ctx, schema_name, table_name))

    def list_flights(self, ctx: Context) -> Iterator[flight_pb2.FlightInfo]:
        for schema in sorted(self.catalog.schemas(ctx), key=lambda s: s.name()):
            for table in schema.tables(ctx):
                yield self.flight_info_for(schema.name(), table)

    # --- DoGet --------------------------------------------------------------------------------

    def _table(self, ctx: Context, schema_name: str, table_name: str) -> Table:
        schema = self.catalog.schema(ctx, schema_name)
        if schema is None:
            raise ScanSchemaNotFound(schema=schema_name)
        table = schema.table(ctx, table_name)
        if table is None:
            raise ScanTableNotFound(schema=schema_name, table=table_name)
        return table

    def scan(self, ctx: Context, ticket_bytes: bytes) -> pa.RecordBatchReader:
        ticket = _parse_ticket(ticket_bytes)
        self._check_catalog(ticket.get("catalog", ""))
        table = self._table(ctx, ticket["schema"], ticket["table"])
        filters = base64.b64decode(ticket["filters"]) if ticket.get("filters") else None
        point = _time_point(ticket.get("time_point_unit"), ticket.get("time_point_value"))
        if point is not None and not implements(table, "DynamicSchemaTable"):
            # deviation time_point_refused_when_unsupported: never today's rows for the past's
            raise TimeTravelUnsupported(schema=ticket["schema"], table=ticket["table"])
        options = ScanOptions(
            columns=list(ticket.get("columns", [])), filter=filters, time_point=point
        )
        try:
            reader = table.scan(ctx, options)
        except AirportError:
            raise
        except Exception as exc:
            raise ScanFailed(error=exc) from exc
        if point is not None:  # the past's schema may differ from today's (Go skips the check)
            return reader
        expected = table.arrow_schema(None)
        if len(reader.schema) != len(expected) or not all(
            reader.schema.field(i).equals(expected.field(i), check_metadata=True)
            for i in range(len(expected))
        ):
            raise ScanSchemaMismatch(table_fields=len(expected), reader_fields=len(reader.schema))
        return reader


def _descriptor_request(body: bytes) -> tuple[dict[str, Any], flight_pb2.FlightDescriptor]:
    """An action body {descriptor, …} (endpoints, flight_info): the map and its descriptor."""
    try:
        request = _decode_map(body)
        raw_descriptor = request.get("descriptor", b"")
        if isinstance(raw_descriptor, str):
            raw_descriptor = raw_descriptor.encode("latin-1", "surrogateescape")
    except Exception as exc:
        raise EndpointsInvalidRequest(error=exc) from None
    descriptor = flight_pb2.FlightDescriptor()
    try:
        descriptor.ParseFromString(raw_descriptor)
    except Exception as exc:
        raise EndpointsInvalidDescriptor(error=exc) from None
    return request, descriptor


def _time_point(unit: Any, value: Any) -> TimePoint | None:
    """A time point when both unit and value are given (DuckDB's units are upper case: Go
    lowers the ones it knows; pyairport compares them without case)."""
    if not unit or not value:
        return None
    return TimePoint(unit=str(unit).lower(), value=str(value))


def _compressed(data: bytes) -> bytes:
    """Go's [uint32 uncompressed length, string(zstd bytes)] pair."""
    return _pack([len(data), zstandard.ZstdCompressor(level=3).compress(data)])


def _ticket_json(ticket: dict[str, Any]) -> bytes:
    """Go's TicketData: keys in declaration order, empty ones left out, no spaces."""
    order = (
        "catalog",
        "schema",
        "table",
        "table_function",
        "function_params",
        "time_point_unit",
        "time_point_value",
        "columns",
        "filters",
    )
    return json.dumps(
        {k: ticket[k] for k in order if ticket.get(k)}, separators=(",", ":")
    ).encode()


def _parse_ticket(data: bytes) -> dict[str, Any]:
    try:
        ticket = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidTicket(reason=f"not valid JSON: {exc}") from None
    if not isinstance(ticket, dict):
        raise InvalidTicket(reason="expected a JSON object")
    for key in ("schema", "table"):
        if not isinstance(ticket.get(key), str) or not ticket[key]:
            raise InvalidTicket(reason=f"missing {key}")
    if not isinstance(ticket.get("catalog", ""), str):
        raise InvalidTicket(reason="catalog must be a string")
    columns = ticket.get("columns", [])
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise InvalidTicket(reason="columns must be a list of strings")
    if bool(ticket.get("time_point_unit")) != bool(ticket.get("time_point_value")):
        raise InvalidTicket(reason="time_point_unit and time_point_value go together")
    if "filters" in ticket:
        try:
            base64.b64decode(ticket["filters"], validate=True)
        except Exception:
            raise InvalidTicket(reason="filters must be base64") from None
    return ticket
