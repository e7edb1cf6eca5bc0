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
    EndpointsDescriptorNotPath,
    EndpointsInvalidDescriptor,
    EndpointsInvalidRequest,
    FlightInfoNotPath,
    FlightInfoPathLength,
    InvalidTicket,
    ListSchemasFailed,
    ScanFailed,
    ScanOptions,
    ScanSchemaMismatch,
    ScanSchemaNotFound,
    ScanTableNotFound,
    Table,
    flight_pb2,
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
        try:
            request = _decode_map(body)
            raw_descriptor = request.get("descriptor", b"")
            parameters = request.get("parameters") or {}
            if isinstance(raw_descriptor, str):
                raw_descriptor = raw_descriptor.encode("latin-1", "surrogateescape")
            if not isinstance(parameters, dict):
                raise ValueError("parameters must be a map")
        except Exception as exc:
            raise EndpointsInvalidRequest(error=exc) from None
        descriptor = flight_pb2.FlightDescriptor()
        try:
            descriptor.ParseFromString(raw_descriptor)
        except Exception as exc:
            raise EndpointsInvalidDescriptor(error=exc) from None
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
        columns = (
            names_for_ids(table.arrow_schema(None), parameters.get("column_ids") or [])
            if table is not None
            else []
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
        self, schema_name: str, table: Table, with_catalog: bool = False
    ) -> flight_pb2.FlightInfo:
        ticket = (
            {"catalog": self.catalog_name, "schema": schema_name, "table": table.name()}
            if with_catalog
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
        options = ScanOptions(columns=list(ticket.get("columns", [])), filter=filters)
        try:
            reader = table.scan(ctx, options)
        except AirportError:
            raise
        except Exception as exc:
            raise ScanFailed(error=exc) from exc
        expected = table.arrow_schema(None)
        if len(reader.schema) != len(expected) or not all(
            reader.schema.field(i).equals(expected.field(i), check_metadata=True)
            for i in range(len(expected))
        ):
            raise ScanSchemaMismatch(table_fields=len(expected), reader_fields=len(reader.schema))
        return reader


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
    if "filters" in ticket:
        try:
            base64.b64decode(ticket["filters"], validate=True)
        except Exception:
            raise InvalidTicket(reason="filters must be base64") from None
    return ticket
