"""The catalogs one server serves, by name, each behind a dispatcher of its own (airport-go's
MultiCatalogServer), and which one a call is for.

A server of one catalog sends every call to it, and that catalog's dispatcher checks the
names the call carries as a single airport-go server does. With several, a call goes to the
catalog its `airport-catalog` header names (DuckDB 1.5 sends it), else to the one its body or
ticket names (DuckDB 1.4 names it only there), else to the one whose transaction the call
carries, else to the default catalog "" (deviation catalog_not_found_named).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from typing import Any

import msgpack
import pyarrow as pa

from airport_contracts import (
    CatalogExists,
    CatalogNotFound,
    CatalogNotServed,
    Context,
    InvalidPayload,
    TicketData,
    flight_pb2,
)
from airport_contracts.dispatch import PROTOCOLS, ROUTES
from airport_contracts.vocabulary import Action, Protocol
from airport_support.arrow_ipc import serialize_schema
from airport_support.compressed import pack_endpoints
from airport_support.rows import DdlActionRow

from ..dispatch import Dispatcher, catalog_from_headers, transaction_id_from_headers
from ..dispatch.flight_infos import REUSE_CONNECTION
from ..wire.go_text import go_quote

DEFAULT = ""

DATABASES_PATH = PROTOCOLS[Protocol.GETFLIGHTINFO].databases_path
"""The one-part PATH DuckDB's airport_databases() asks for (deviation databases_listed)."""
DATABASES = pa.schema([pa.field("name", pa.string(), nullable=False)])
DATABASES_TICKET = TicketData(schema=DATABASES_PATH).to_json()


class Catalogs:
    """Dispatchers by catalog name; added and removed while serving (a call already routed
    finishes on the catalog it started on)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._dispatchers: dict[str, Dispatcher] = {}
        self.location = ""

    def add(self, name: str, dispatcher: Dispatcher) -> None:
        """Serve dispatcher's catalog as name; a name already served is CatalogExists."""
        dispatcher.location = self.location
        with self._lock:
            if name in self._dispatchers:
                raise CatalogExists()
            self._dispatchers[name] = dispatcher

    def remove(self, name: str) -> None:
        """Stop serving the catalog name; a name not served is CatalogNotServed."""
        with self._lock:
            if self._dispatchers.pop(name, None) is None:
                raise CatalogNotServed()

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._dispatchers)

    def get(self, name: str) -> Dispatcher | None:
        with self._lock:
            return self._dispatchers.get(name)

    def set_location(self, location: str) -> None:
        """The address scan endpoints name, for every catalog served now and later."""
        with self._lock:
            self.location = location
            for dispatcher in self._dispatchers.values():
                dispatcher.location = location

    def target(
        self, ctx: Context, protocol: str, headers: Mapping[str, str], named: str | None = None
    ) -> str:
        """The name of the catalog a call is for: its airport-catalog header's, else the one
        its body or ticket names (named), else the one whose transaction it carries (DuckDB
        1.4 names the catalog only when it begins one), else the default "". A server of one
        catalog sends every call to it."""
        with self._lock:
            if len(self._dispatchers) == 1:
                return next(iter(self._dispatchers))
            dispatchers = list(self._dispatchers.items())
        name = catalog_from_headers(protocol, headers)
        if name is not None:
            return name
        if named is not None:
            return named
        tx_id = transaction_id_from_headers(protocol, headers)
        if tx_id:
            for catalog, dispatcher in dispatchers:
                if dispatcher.knows_transaction(ctx, tx_id):
                    return catalog
        return DEFAULT

    def serving(self, name: str) -> Dispatcher:
        """The dispatcher of the catalog name, or NOT_FOUND naming it."""
        dispatcher = self.get(name)
        if dispatcher is None:
            raise CatalogNotFound(catalog=go_quote(name))
        return dispatcher

    def several(self) -> bool:
        with self._lock:
            return len(self._dispatchers) > 1

    def databases_info(self, shown: list[str]) -> flight_pb2.FlightInfo:
        """The FlightInfo of the catalogs' listing (airport_databases()) of the catalogs
        shown (those the caller may use)."""
        location = self.location
        return flight_pb2.FlightInfo(
            schema=serialize_schema(DATABASES),
            flight_descriptor=flight_pb2.FlightDescriptor(
                type=flight_pb2.FlightDescriptor.PATH, path=[DATABASES_PATH]
            ),
            endpoint=[
                flight_pb2.FlightEndpoint(
                    ticket=flight_pb2.Ticket(ticket=DATABASES_TICKET),
                    location=[flight_pb2.Location(uri=location or REUSE_CONNECTION)],
                )
            ],
            total_records=len(shown),
            total_bytes=-1,
        )

    def databases_endpoints(
        self, action: str, request: Any, shown: Callable[[], list[str]]
    ) -> bytes | None:
        """The endpoints answer for the catalogs' listing (DuckDB asks endpoints for it
        before it reads), or None for any other endpoints or action; request: the action's
        body decoded (decoded_body); shown: the catalogs the caller may use, asked only for
        the listing."""
        if action != Action.ENDPOINTS or request is None:
            return None
        try:
            descriptor = flight_pb2.FlightDescriptor.FromString(request.descriptor)
        except Exception:  # the dispatcher answers a bad body with the contract's error
            return None
        if not self.lists_databases(descriptor):
            return None
        endpoints = self.databases_info(shown()).endpoint
        return pack_endpoints((e.SerializeToString() for e in endpoints), bin_type=True)

    @staticmethod
    def databases(shown: list[str]) -> pa.RecordBatchReader:
        """The catalogs shown, a row each, by name."""
        table = pa.table({"name": pa.array(shown, pa.string())}, schema=DATABASES)
        return pa.RecordBatchReader.from_batches(DATABASES, table.to_batches())

    @staticmethod
    def lists_databases(descriptor: flight_pb2.FlightDescriptor) -> bool:
        return descriptor.type == flight_pb2.FlightDescriptor.PATH and list(descriptor.path) == [
            DATABASES_PATH
        ]


def _catalog_fields() -> dict[str, str]:
    """Action type → the body field that names its catalog, as the contract words it: a DDL
    row's catalog_field (`catalog_name`, or the ALTER actions' `catalog`), and the read-side
    and transaction requests' `catalog_name` field."""
    fields = {}
    for (protocol, name), route in ROUTES.items():
        if protocol != Protocol.DOACTION:
            continue
        if isinstance(route.row, DdlActionRow):
            fields[name] = route.row.catalog_field
            continue
        request = getattr(route.row, "request", None)
        if request is not None and "catalog_name" in {f.name for f in dataclasses.fields(request)}:
            fields[name] = "catalog_name"
    return fields


CATALOG_FIELDS = _catalog_fields()


def decoded_body(action_type: str, body: bytes) -> Any:
    """An action's body as its request payload, decoded once for routing and the action, or
    None (an action without a payload, an empty body, or one that does not decode: the
    action's own decoding says why)."""
    route = ROUTES.get((Protocol.DOACTION, action_type))
    payload = getattr(route.row, "request", None) if route is not None else None
    if payload is None or not body:
        return None
    try:
        return payload.decode(body)
    except Exception:
        return None


def catalog_in_body(action_type: str, body: bytes, decoded: Any = None) -> str | None:
    """The catalog an action's body names (decoded: the body as decoded_body gave it), or
    None (an action without such a field, or a body that does not decode: the action's own
    decoding says what is wrong)."""
    field = CATALOG_FIELDS.get(action_type)
    if field is None:
        return None
    if decoded is not None:
        named = getattr(decoded, field, None)
        return named if isinstance(named, str) else None
    try:  # raw: DuckDB packs binary fields (create_table's arrow_schema) as msgpack str
        request = msgpack.unpackb(body, raw=True, strict_map_key=False)
    except Exception:
        return None
    raw = request.get(field.encode()) if isinstance(request, dict) else None
    if not isinstance(raw, bytes):
        return None
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return None


def decoded_ticket(ticket: bytes) -> TicketData | None:
    """A DoGet ticket decoded once, for routing (the catalog it names; absent: the default)
    and the scan, or None when it does not decode (DoGet's own parsing says why)."""
    try:
        return TicketData.from_json(ticket)
    except InvalidPayload:
        return None
