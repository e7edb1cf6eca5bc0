"""The data socket (`ServerConfig(data_socket=…)`, `serve --data-socket`): endpoints asked from
this host name it for a table that exists; a pyarrow.flight client reads there what the
catalog's DoGet serves, under the same token and grants; everything else is refused in one
line without a traceback, and the socket goes when the server stops."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import grpc
import pyarrow as pa
import pyarrow.flight as flight
import pytest

from airport_contracts import TicketData, flight_pb2, flight_pb2_grpc
from pyairport.client import AirportClient
from pyairport.client.remote_catalog import decode_endpoints, endpoints_request
from pyairport.server import AirportServer, ServerConfig
from pyairport.server.airport_server import ListenError
from pyairport.server.data_plane import AUTO
from pyairport.wire.compression import codec_for, on_this_host

from ..metrics import Scrape
from ..team import SECRET_NAMES, Team, make_team, team_server

ROWS = pa.table({"id": pa.array([7, 8], pa.int64()), "name": ["Ann", "Bo"], "email": ["a", "b"]})


@pytest.fixture
def team(tmp_path: Path) -> Team:
    return make_team(tmp_path)


@pytest.fixture
def server(team: Team) -> Iterator[AirportServer]:
    running = team_server(team, data_socket=AUTO)
    with AirportClient(running.location, token=team.tokens["admin"], catalog="sales") as admin:
        admin.insert("dml_schema", "users", ROWS)
    yield running
    running.stop(0)


def _endpoints(server: AirportServer, token: str, schema: str, table: str) -> list[str]:
    with AirportClient(server.location, token=token, catalog="sales") as client:
        body = client.action("endpoints", endpoints_request(schema, table, [0, 1, 2], ""))
    return [e.location[0].uri for e in decode_endpoints(body[0])]


def _read(server: AirportServer, token: str, ticket: TicketData | bytes) -> pa.Table:
    assert server.data_plane is not None
    raw = ticket if isinstance(ticket, bytes) else ticket.to_json()
    options = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {token}".encode())])
    with flight.connect(server.data_plane.location) as client:
        return client.do_get(flight.Ticket(raw), options=options).read_all()


def _users(catalog: str = "sales", table: str = "users") -> TicketData:
    return TicketData(catalog=catalog, schema="dml_schema", table=table)


def test_endpoints_asked_from_this_host_name_the_data_socket(
    server: AirportServer, team: Team
) -> None:
    assert server.data_plane is not None
    assert server.data_plane.location == f"grpc+unix://{server.data_plane.path}"
    admin = team.tokens["admin"]
    assert _endpoints(server, admin, "dml_schema", "users") == [server.data_plane.location]
    # a table that is not there: DoGet at the catalog says so, with the contract's words
    assert _endpoints(server, admin, "dml_schema", "nope") == [server.location]


def test_the_data_socket_serves_what_the_catalog_serves(server: AirportServer, team: Team) -> None:
    assert server.data_plane is not None
    reader = team.tokens["reader"]
    with AirportClient(server.location, token=reader, catalog="sales") as client:
        at_the_catalog = client.scan("dml_schema", "users").read_all()
    here = _read(server, reader, _users())
    assert here.equals(at_the_catalog)
    assert sorted(here.column("id").to_pylist()) == [7, 8]
    assert server.data_plane.scans == 1


def _refusal(server: AirportServer, token: str | None, ticket: TicketData | bytes) -> grpc.RpcError:
    """What the data socket answers a DoGet that must fail, as gRPC carries it."""
    assert server.data_plane is not None
    raw = ticket if isinstance(ticket, bytes) else ticket.to_json()
    metadata = [("authorization", f"Bearer {token}")] if token is not None else []
    with grpc.insecure_channel(f"unix:{server.data_plane.path}") as channel:
        stub = flight_pb2_grpc.FlightServiceStub(channel)
        try:
            list(stub.DoGet(flight_pb2.Ticket(ticket=raw), metadata=metadata))
        except grpc.RpcError as error:
            return error
    raise AssertionError("the DoGet was served")


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("not-a-token", "unauthenticated"),
        ("", "authorization token is empty"),
        (None, "authorization header must use Bearer scheme"),
    ],
)
def test_a_caller_without_a_valid_token_reads_nothing(
    server: AirportServer, token: str | None, message: str
) -> None:
    """The catalog's message, and the code where Arrow's server has one, with its suffix."""
    refused = _refusal(server, token, _users())
    assert refused.code() == grpc.StatusCode.UNAUTHENTICATED
    assert refused.details() == f"{message}. Detail: Unauthenticated"


def test_the_grants_hold_on_the_data_socket(server: AirportServer, team: Team) -> None:
    """reader's ticket for hr (no grant there) and for hr's secret table are refused as the
    catalog refuses them; admin reads both."""
    reader, admin = team.tokens["reader"], team.tokens["admin"]
    secret = TicketData(catalog="hr", schema=SECRET_NAMES[0], table=SECRET_NAMES[1])
    for ticket in (_users("hr"), secret):
        refused = _refusal(server, reader, ticket)
        assert refused.code() == grpc.StatusCode.PERMISSION_DENIED
        assert refused.details() == (
            'catalog authorization failed: "reader" has no grant on catalog "hr"'
            ". Detail: Unauthorized"
        )
    assert _read(server, admin, _users("hr")).num_rows == 0
    assert _read(server, admin, secret).num_rows == 0


@pytest.mark.parametrize(
    "ticket",
    [
        b"not json",
        b'{"catalog": "sales", "schema": "../../etc", "table": "passwd"}',
        TicketData(catalog="sales", schema="dml_schema", table="nope").to_json(),
        b'{"catalog": "sales", "schema": "\\ud800", "table": "users"}',  # no UTF-8 holds it
    ],
)
def test_a_forged_ticket_is_refused_in_one_line(
    server: AirportServer, team: Team, ticket: bytes
) -> None:
    refused = _refusal(server, team.tokens["admin"], ticket)
    assert refused.code() == grpc.StatusCode.UNKNOWN  # Arrow's server has no NOT_FOUND
    text = refused.details() or ""
    assert text.endswith(". Detail: Failed") and len(text.splitlines()) == 1, text
    assert "Traceback" not in text and "/tmp" not in text and "etc/" not in text, text


def test_the_data_socket_serves_scans_only(server: AirportServer, team: Team) -> None:
    assert server.data_plane is not None
    options = flight.FlightCallOptions(
        headers=[(b"authorization", f"Bearer {team.tokens['admin']}".encode())]
    )
    with flight.connect(server.data_plane.location) as client:
        with pytest.raises(flight.FlightServerError, match="serves scans \\(DoGet\\) only"):
            list(client.do_action(flight.Action("create_transaction", b""), options=options))
        with pytest.raises(flight.FlightServerError, match="serves scans \\(DoGet\\) only"):
            list(client.list_flights(options=options))


def test_its_socket_is_reachable_as_a_loopback_port_and_goes_at_stop(team: Team) -> None:
    running = team_server(team, data_socket=AUTO)
    assert running.data_plane is not None
    path = Path(running.data_plane.path)
    assert stat.S_ISSOCK(os.stat(path).st_mode)
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o711
    running.stop(0)
    assert not path.parent.exists()


def test_a_socket_it_cannot_make_stops_the_start(tmp_path: Path) -> None:
    where = tmp_path / "missing-folder" / "data.sock"
    server = AirportServer(None, None, ServerConfig(port=0, data_socket=str(where)))
    with pytest.raises(ListenError, match=f"cannot listen on {where}: no such folder"):
        server.start()
    server.stop(0)


def test_a_socket_at_a_path_of_the_operators(tmp_path: Path) -> None:
    where = tmp_path / "data.sock"
    server = AirportServer(None, None, ServerConfig(port=0, data_socket=str(where))).start()
    try:
        assert server.data_plane is not None
        assert server.data_plane.location == f"grpc+unix://{where}"
        assert stat.S_ISSOCK(os.stat(where).st_mode)
    finally:
        server.stop(0)


@pytest.mark.parametrize(
    ("peer", "local"),
    [
        ("ipv4:127.0.0.1:5000", True),
        ("ipv6:[::1]:5000", True),
        ("unix:/tmp/x.sock", True),
        ("ipv4:10.0.0.7:5000", False),
        ("ipv6:[2001:db8::1]:5000", False),
        ("dns:example.com:5000", False),
    ],
)
def test_which_peers_are_sent_to_the_data_socket(peer: str, local: bool) -> None:
    assert on_this_host(peer) is local


def test_which_streams_are_compressed_for_which_peers() -> None:
    """auto: ZSTD to another host, nothing to this one, LZ4 to both for a count's stream (null
    values: zeros); a codec named is used for every stream, none for none."""
    here, there = "ipv4:127.0.0.1:5000", "ipv4:10.0.0.7:5000"
    assert [codec_for("auto", peer) for peer in (here, there)] == [None, "zstd"]
    assert [codec_for("auto", peer, all_null=True) for peer in (here, there)] == ["lz4", "lz4"]
    for setting, codec in (("none", None), ("lz4", "lz4"), ("zstd", "zstd")):
        for peer in (here, there):
            assert codec_for(setting, peer) == codec_for(setting, peer, all_null=True) == codec


def test_a_server_without_one_names_its_own_address(team: Team) -> None:
    running = team_server(team)
    try:
        assert running.data_plane is None
        endpoints = _endpoints(running, team.tokens["admin"], "dml_schema", "users")
        assert endpoints == [running.location]
    finally:
        running.stop(0)


def test_a_socket_another_server_listens_on_is_not_taken(tmp_path: Path) -> None:
    where = str(tmp_path / "data.sock")
    first = AirportServer(None, None, ServerConfig(port=0, data_socket=where)).start()
    second = AirportServer(None, None, ServerConfig(port=0, data_socket=where))
    try:
        with pytest.raises(ListenError, match="a server is listening there"):
            second.start()
        assert first.data_plane is not None
        with flight.connect(first.data_plane.location) as client:  # still the first's
            with pytest.raises(flight.FlightServerError, match="serves scans"):
                list(client.list_flights())
    finally:
        second.stop(0)
        first.stop(0)


def test_a_stale_socket_is_taken_over(tmp_path: Path) -> None:
    where = tmp_path / "data.sock"
    with socket.socket(socket.AF_UNIX) as stale:  # a crashed server's: bound, nobody listens
        stale.bind(str(where))
    server = AirportServer(None, None, ServerConfig(port=0, data_socket=str(where))).start()
    try:
        assert server.data_plane is not None
        with flight.connect(server.data_plane.location) as client:
            with pytest.raises(flight.FlightServerError, match="serves scans"):
                list(client.list_flights())
    finally:
        server.stop(0)


def test_a_path_too_long_for_a_socket_is_one_line(tmp_path: Path) -> None:
    where = tmp_path / ("x" * 120)
    server = AirportServer(None, None, ServerConfig(port=0, data_socket=str(where)))
    with pytest.raises(ListenError, match="longer than a Unix socket's path may be"):
        server.start()
    server.stop(0)


def test_its_scans_are_counted_as_the_servers(team: Team) -> None:
    """pyairport_calls and pyairport_rows_read count the socket's DoGets as the port's."""
    running = team_server(team, data_socket=AUTO, metrics_port=0)
    try:
        admin = team.tokens["admin"]
        with AirportClient(running.location, token=admin, catalog="sales") as client:
            client.insert("dml_schema", "users", ROWS)
        assert _read(running, admin, _users()).num_rows == 2
        _refusal(running, "not-a-token", _users())
        scrape = Scrape(running)
        assert scrape.get("pyairport_calls_total", rpc="DoGet", method="-", code="OK") == 1
        refused = scrape.get(
            "pyairport_calls_total", rpc="DoGet", method="-", code="UNAUTHENTICATED"
        )
        assert refused == 1
        where = {"catalog": "sales", "schema": "dml_schema", "table": "users"}
        assert scrape.get("pyairport_rows_read_total", **where) == 2
    finally:
        running.stop(0)
