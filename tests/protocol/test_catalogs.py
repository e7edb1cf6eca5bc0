"""Several catalogs on one server (catalogs.py): routed by the airport-catalog header, else by
the catalog a body or ticket names, else to the default catalog ""; a catalog nobody serves
is NOT_FOUND naming it; a server of one catalog answers as a single airport-go server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import msgpack
import pyarrow as pa
import pytest

from airport_contracts import flight_pb2
from pyairport.client import AirportClient, RemoteError
from pyairport.demo import memory_demo_catalog
from pyairport.server import AirportServer, ServerConfig

from .conftest import assert_error_row

ROWS = pa.table({"id": pa.array([5], pa.int64()), "name": ["Ann"], "email": ["a@x"]})


@pytest.fixture
def two() -> Iterator[AirportServer]:
    """Catalogs "" and "sales", each the demo catalog of its own."""
    server = AirportServer(memory_demo_catalog(), None, ServerConfig(port=0))
    server.add_catalog(memory_demo_catalog("sales"))
    server.start()
    yield server
    server.stop(0)


def _names(client: AirportClient) -> list[str]:
    return sorted(str(n) for n in client.scan("dml_schema", "users", ["name"]).read_all()["name"])


def test_the_header_routes_every_rpc(two: AirportServer) -> None:
    with (
        AirportClient(two.location, catalog="sales") as sales,
        AirportClient(two.location) as default,
    ):
        sales.insert("dml_schema", "users", ROWS)
        assert _names(sales) == ["Ann"]
        assert _names(default) == []  # the default catalog is untouched
        listed = sales.stub.ListFlights(flight_pb2.Criteria(), metadata=sales.metadata())
        assert len(list(listed)) == 3
        assert {s.name for s in sales.list_schemas("sales")} >= {"dml_schema"}


def test_a_body_names_the_catalog_without_the_header(two: AirportServer) -> None:
    """DuckDB 1.4 names the catalog only in its bodies (list_schemas, catalog_version,
    create_transaction, DDL): they reach the catalog they name."""
    with AirportClient(two.location) as client:
        tables = client.list_tables("dml_schema", catalog_name="sales")
        assert {t.name for t in tables} == {"users"}
        assert client.catalog_version("sales") >= 1


def test_an_unknown_catalog_is_not_found_naming_it(two: AirportServer) -> None:
    with AirportClient(two.location) as client:
        with pytest.raises(RemoteError) as raised:
            client.list_schemas("nope")
        assert_error_row(
            "catalog_not_found", {"catalog": '"nope"'}, raised.value.code, raised.value.message
        )
    with AirportClient(two.location, catalog="x") as client:
        with pytest.raises(RemoteError) as raised:
            client.insert("dml_schema", "users", ROWS)
        assert_error_row(
            "catalog_not_found", {"catalog": '"x"'}, raised.value.code, raised.value.message
        )


def test_a_catalog_removed_while_serving_is_not_found(two: AirportServer) -> None:
    with AirportClient(two.location) as client:
        two.add_catalog(memory_demo_catalog("hr"))
        two.remove_catalog("sales")
        with pytest.raises(RemoteError, match='catalog not found: "sales"'):
            client.list_schemas("sales")
        assert client.action("catalog_version", msgpack.packb({"catalog_name": ""}))


def test_a_server_of_one_named_catalog_answers_as_a_single_go_server() -> None:
    """With one catalog every call reaches it, with or without a header (DuckDB 1.4 sends
    none), and a body naming another catalog is `catalog name mismatch`, as airport-go's
    single server answers."""
    with AirportServer(memory_demo_catalog("test1"), None, ServerConfig(port=0)) as server:
        with AirportClient(server.location) as client:
            assert {s.name for s in client.list_schemas("test1")} >= {"dml_schema"}
            client.insert("dml_schema", "users", ROWS)
            with pytest.raises(RemoteError) as raised:
                client.list_schemas("")
            assert raised.value.message == 'catalog name mismatch: expected "test1", got ""'


def test_the_databases_path_lists_the_catalogs_as_pyarrow_reads_it(two: AirportServer) -> None:
    """GetFlightInfo of ["__databases"], then DoGet of its ticket (deviation databases_listed);
    any other one-part path is still Go's error."""
    import pyarrow.flight as flight

    client = flight.FlightClient(two.location)
    info = client.get_flight_info(flight.FlightDescriptor.for_path("__databases"))
    assert info.schema.names == ["name"] and info.total_records == 2
    names = client.do_get(info.endpoints[0].ticket).read_all().column("name").to_pylist()
    assert names == ["", "sales"]
    with pytest.raises(pa.ArrowInvalid, match="path must contain exactly 2 elements"):
        client.get_flight_info(flight.FlightDescriptor.for_path("__tables"))
    client.close()


class _OneManagerForAll:
    """A CatalogTransactionManager: every catalog's transactions in one place, each knowing
    the catalog it began in."""

    def __init__(self) -> None:
        from pyairport.transactions import MemoryTransactionManager

        self.inner = MemoryTransactionManager()
        self.began: dict[str, str] = {}

    def begin_transaction(self, ctx: Any, catalog_name: str) -> str:
        tx_id = self.inner.begin_transaction(ctx)
        self.began[tx_id] = catalog_name
        return tx_id

    def commit_transaction(self, ctx: Any, tx_id: str) -> None:
        self.inner.commit_transaction(ctx, tx_id)

    def rollback_transaction(self, ctx: Any, tx_id: str) -> None:
        self.inner.rollback_transaction(ctx, tx_id)

    def get_transaction_status(self, ctx: Any, tx_id: str) -> tuple[Any, str, bool]:
        state, exists = self.inner.get_transaction_status(ctx, tx_id)
        return state, self.began.get(tx_id, ""), exists


def test_one_catalog_transaction_manager_serves_every_catalog() -> None:
    """AirportServer(catalog_transactions=…): each catalog's transactions begin in it (Go's
    catalogTxManagerAdapter); a DML call carrying one, without a header (DuckDB 1.4), goes to
    the catalog it began in."""
    manager = _OneManagerForAll()
    server = AirportServer(None, None, ServerConfig(port=0), catalog_transactions=manager)
    server.add_catalog(memory_demo_catalog("sales"))
    server.add_catalog(memory_demo_catalog("hr"))
    with server, AirportClient(server.location) as client:
        tx = client.begin_transaction("hr")
        assert tx is not None and manager.began == {tx: "hr"}
        client.insert("dml_schema", "users", ROWS, transaction_id=tx)
        with AirportClient(server.location, catalog="hr") as hr:
            assert _names(hr) == ["Ann"]
        with AirportClient(server.location, catalog="sales") as sales:
            assert _names(sales) == []


def test_adding_a_served_name_or_removing_an_unknown_one_is_refused() -> None:
    from airport_contracts import CatalogExists, CatalogNotServed

    server = AirportServer(memory_demo_catalog("sales"), None, ServerConfig(port=0))
    with pytest.raises(CatalogExists, match="catalog already exists"):
        server.add_catalog(memory_demo_catalog("sales"))
    with pytest.raises(CatalogNotServed, match="catalog not found"):
        server.remove_catalog("hr")
    assert server.is_exists("sales") and not server.is_exists("hr")
    server.stop(0)


def test_a_named_catalogs_flight_info_ticket_reads_it_from_pyarrow(two: AirportServer) -> None:
    """pyarrow.flight's GetFlightInfo then DoGet on catalog "sales": the ticket names the
    catalog (as Go's GetFlightInfo's does), so DoGet reads sales' table, header or not."""
    import pyarrow.flight as flight

    with AirportClient(two.location, catalog="sales") as sales:
        sales.insert("dml_schema", "users", ROWS)
    client = flight.connect(two.location)
    try:
        header = flight.FlightCallOptions(headers=[(b"airport-catalog", b"sales")])
        info = client.get_flight_info(
            flight.FlightDescriptor.for_path("dml_schema", "users"), header
        )
        for options in (header, flight.FlightCallOptions()):
            table = client.do_get(info.endpoints[0].ticket, options).read_all()
            assert table.column("name").to_pylist() == ["Ann"]
        listed = list(client.list_flights(options=header))
        assert all(json.loads(i.endpoints[0].ticket.ticket)["catalog"] == "sales" for i in listed)
    finally:
        client.close()


def test_a_body_and_a_ticket_are_decoded_once_with_several_catalogs(
    two: AirportServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Routing reads the catalog from the body or ticket it decodes, and hands what it
    decoded on: an endpoints body and a DoGet ticket are decoded once each per call."""
    from airport_contracts import EndpointsRequest, TicketData

    decoded: list[str] = []
    endpoints_decode, ticket_decode = EndpointsRequest.decode, TicketData.from_json

    def counted_endpoints(data: bytes) -> Any:
        decoded.append("endpoints")
        return endpoints_decode(data)

    def counted_ticket(data: bytes) -> Any:
        decoded.append("ticket")
        return ticket_decode(data)

    with AirportClient(two.location) as client:
        client.insert("dml_schema", "users", ROWS)
        monkeypatch.setattr(EndpointsRequest, "decode", staticmethod(counted_endpoints))
        monkeypatch.setattr(TicketData, "from_json", staticmethod(counted_ticket))
        assert _names(client) == ["Ann"]
    assert decoded.count("endpoints") == 1
    assert decoded.count("ticket") == decoded.count("endpoints")  # one ticket, once
