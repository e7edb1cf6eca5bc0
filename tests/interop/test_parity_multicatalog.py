"""Parity with airport-go's MultiCatalogServer: catalogs sales and hr on one server, an
Authenticator that is also a CatalogAuthorizer (tokens and grants alike on both sides: the Go
side is tests/interop/go/internal/team), calls routed by the airport-catalog header as DuckDB
1.5 sends it. Every answer must be the same but the differences listed, each a deviation."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import grpc
import msgpack
import pyarrow as pa
import pytest

from airport_contracts import Context, flight_pb2, identity_from_context
from pyairport.access.identities import bearer_auth
from pyairport.client.remote_catalog import decode_catalog
from pyairport.demo import memory_demo_catalog
from pyairport.server import AirportServer, ServerConfig

from .gobuild import go_server
from .parity import DEVIATION_DOCS
from .wire import Wire, status

ROWS = pa.table({"id": pa.array([5], pa.int64()), "name": ["Ann"], "email": ["a@x"]})
IDENTITIES = {"admin-token": "admin", "reader-token": "reader"}


class _Tokens:
    """pyairport's side of team.Tokens: the same tokens, the same grants, the same words."""

    def __init__(self) -> None:
        self._identity = bearer_auth(self._validate)

    @staticmethod
    def _validate(token: str) -> str:
        return IDENTITIES[token]

    def authenticate(self, ctx: Context, token: str) -> str:
        return self._identity.authenticate(ctx, token)

    def authorize_catalog(self, ctx: Context, catalog: str) -> Context:
        identity = identity_from_context(ctx)
        if identity == "admin" or (identity == "reader" and catalog == "sales"):
            return ctx
        raise PermissionError(f'"{identity}" has no grant on catalog "{catalog}"')


@contextmanager
def _pyairport() -> Iterator[str]:
    server = AirportServer(None, None, ServerConfig(port=0), authenticator=_Tokens())
    server.add_catalog(memory_demo_catalog("sales"))
    server.add_catalog(memory_demo_catalog("hr"))
    with server:
        yield server.location


@contextmanager
def _airport_go() -> Iterator[str]:
    with go_server("-multi") as location:
        yield location


def _wire(location: str, token: str | None, catalog: str | None) -> Wire:
    headers = {}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    if catalog is not None:
        headers["airport-catalog"] = catalog
    return Wire(location, headers)


def _schemas(wire: Wire, catalog: str) -> Any:
    answer = wire.action("list_schemas", msgpack.packb({"catalog_name": catalog}))
    if answer["status"] != ("OK", ""):
        return answer["status"]
    return sorted(s.name for s in decode_catalog(answer["results"][0]))


def _flights(wire: Wire) -> Any:
    try:
        infos = wire.stub.ListFlights(flight_pb2.Criteria(), metadata=wire.metadata())
        return sorted(tuple(i.flight_descriptor.path) for i in infos)
    except grpc.RpcError as error:
        return status(error)


def _handshake(wire: Wire) -> Any:
    try:
        return list(
            wire.stub.Handshake(iter([flight_pb2.HandshakeRequest()]), metadata=wire.metadata())
        )
    except grpc.RpcError as error:
        return status(error)


def _rows(wire: Wire) -> Any:
    try:
        return [{k: v for k, v in r.items() if k != "rowid"} for r in wire.rows("dml_schema")]
    except grpc.RpcError as error:
        return status(error)


def observe(server: Callable[[], AbstractContextManager[str]]) -> dict[str, Any]:
    """The same calls against one implementation, answers by step."""
    seen: dict[str, Any] = {}
    with server() as location:
        admin_sales = _wire(location, "admin-token", "sales")
        admin_hr = _wire(location, "admin-token", "hr")
        reader_sales = _wire(location, "reader-token", "sales")
        reader_hr = _wire(location, "reader-token", "hr")
        seen["admin lists sales"] = _schemas(admin_sales, "sales")
        seen["admin inserts into sales"] = admin_sales.dml("insert", "dml_schema/users", ROWS)
        seen["sales has the row"] = _rows(admin_sales)
        seen["hr does not"] = _rows(admin_hr)
        seen["reader inserts into sales"] = reader_sales.dml("insert", "dml_schema/users", ROWS)
        seen["reader reads sales"] = _rows(reader_sales)
        seen["reader lists hr"] = _schemas(reader_hr, "hr")
        seen["reader inserts into hr"] = reader_hr.dml("insert", "dml_schema/users", ROWS)
        seen["reader lists flights of hr"] = _flights(reader_hr)
        seen["admin lists flights of hr"] = _flights(admin_hr)
        seen["unknown catalog"] = _schemas(_wire(location, "admin-token", "nope"), "nope")
        seen["reader, unknown catalog"] = _schemas(_wire(location, "reader-token", "nope"), "nope")
        for case, token in (("no token", None), ("empty token", ""), ("wrong token", "nobody")):
            wire = _wire(location, token, "sales")
            seen[f"{case}: list_schemas"] = _schemas(wire, "sales")
            seen[f"{case}: insert"] = wire.dml("insert", "dml_schema/users", ROWS)["status"]
            seen[f"{case}: ListFlights"] = _flights(wire)
            seen[f"{case}: Handshake"] = _handshake(wire)
        seen["admin handshake"] = _handshake(admin_sales)
        seen["sales after all"] = _rows(admin_sales)
        seen["hr after all"] = _rows(admin_hr)
        for wire in (admin_sales, admin_hr, reader_sales, reader_hr):
            wire.close()
    return seen


# {step: (deviation, what differs)}
EXPECTED = {
    "admin lists flights of hr": (
        "list_flights_per_table",
        "one FlightInfo per table of hr vs one catalog blob",
    ),
    "unknown catalog": (
        "catalog_not_found_named",
        'NOT_FOUND `catalog not found: "nope"`; Go: `catalog not found`',
    ),
}


@pytest.mark.usefixtures("go_programs")
def test_a_multi_catalog_server_answers_as_airport_go() -> None:
    go = observe(_airport_go)
    py = observe(_pyairport)
    assert go.keys() == py.keys()
    differing = {step for step in go if go[step] != py[step]}
    unexpected = {
        step: {"airport-go": go[step], "pyairport": py[step]}
        for step in differing - EXPECTED.keys()
    }
    assert not unexpected
    assert differing == EXPECTED.keys(), "an expected difference no longer occurs"
    for deviation, _what in EXPECTED.values():
        assert deviation in DEVIATION_DOCS
    # and the calls did what they say: the refusals are refusals
    assert go["reader lists hr"] == (
        "PERMISSION_DENIED",
        'catalog authorization failed: "reader" has no grant on catalog "hr"',
    )
    assert go["no token: insert"] == (
        "UNAUTHENTICATED",
        "authorization header must use Bearer scheme",
    )
    assert go["empty token: insert"] == ("UNAUTHENTICATED", "authorization token is empty")
    assert go["wrong token: insert"] == ("UNAUTHENTICATED", "unauthenticated")
    assert [r["name"] for r in go["sales after all"]] == ["Ann", "Ann"] and go["hr after all"] == []
