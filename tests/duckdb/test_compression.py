"""DoGet streams compressed (`--compression lz4|zstd`): both DuckDB clients, each in its own
Python with its own build of the extension, read exactly the rows of an uncompressed stream,
and a Flight client counts fewer bytes on the wire."""

from __future__ import annotations

from contextlib import AbstractContextManager

import grpc
import pyarrow as pa
import pytest

from airport_contracts import flight_pb2, flight_pb2_grpc
from pyairport.backends.memory.catalog import MemoryCatalog
from pyairport.server import AirportServer, ServerConfig

from ..metrics import Scrape
from .sqllogic.clients import CLIENTS, Client
from .wide import ROWS, ask, serving_wide, wide_table

pytestmark = pytest.mark.duckdb


def _serving(compression: str) -> AbstractContextManager[AirportServer]:
    return serving_wide(ServerConfig(port=0, compression=compression, metrics_port=0))


@pytest.mark.parametrize("client", CLIENTS, ids=[c.name for c in CLIENTS])
def test_both_duckdb_clients_read_compressed_streams_exactly(client: Client) -> None:
    with _serving("none") as server:
        plain = ask(client, server.location)
    assert plain[0] == str(ROWS)
    for codec in ("lz4", "zstd"):
        with _serving(codec) as server:
            assert ask(client, server.location) == plain, codec


@pytest.mark.parametrize("client", CLIENTS, ids=[c.name for c in CLIENTS])
def test_a_counts_stream_goes_compressed_to_this_host_too(client: Client) -> None:
    """A count's stream is null values (its rowid column typed, 8 bytes a row): `auto`, which
    sends other streams to a client on this host as they are, compresses it; `none` does not."""
    count = "SELECT count(*) FROM lake.data.wide"
    where = {"catalog": "lake", "schema": "data", "table": "wide"}
    sent = {}
    for codec in ("auto", "none"):
        with _serving(codec) as server:
            assert ask(client, server.location, count) == [str(ROWS)], codec
            sent[codec] = Scrape(server).get("pyairport_bytes_sent_total", **where)
    assert sent["none"] >= 8 * ROWS, sent
    assert sent["auto"] < ROWS // 10, sent


def _wire_bytes(location: str) -> tuple[int, pa.Table]:
    """The bytes of a whole-table DoGet's FlightData messages, and the rows pyarrow.flight
    reads from the same ticket."""
    import pyarrow.flight as flight

    channel = grpc.insecure_channel(location.removeprefix("grpc://"))
    try:
        stub = flight_pb2_grpc.FlightServiceStub(channel)
        path = flight_pb2.FlightDescriptor(
            type=flight_pb2.FlightDescriptor.PATH, path=["data", "wide"]
        )
        ticket = stub.GetFlightInfo(path).endpoint[0].ticket
        total = sum(data.ByteSize() for data in stub.DoGet(ticket))
    finally:
        channel.close()
    client = flight.connect(location)
    try:
        rows = client.do_get(flight.Ticket(ticket.ticket)).read_all()
    finally:
        client.close()
    return total, rows


def test_compressed_streams_carry_the_same_rows_in_fewer_bytes() -> None:
    """The bytes a DoGet put on the wire, as the client counts them and as the server's
    pyairport_bytes_sent_total does (beside the Arrow bytes, pyairport_bytes_read_total)."""
    sizes = {}
    for codec in ("none", "lz4", "zstd"):
        with _serving(codec) as server:
            sizes[codec], rows = _wire_bytes(server.location)
            scrape = Scrape(server)
        assert rows.sort_by("id").select(["id", "amount", "note", "day"]).equals(wide_table()), (
            codec
        )
        where = {"catalog": "lake", "schema": "data", "table": "wide"}
        # two DoGets of the table; the schema message is not counted
        sent = scrape.get("pyairport_bytes_sent_total", **where)
        assert sizes[codec] - 1000 < sent / 2 <= sizes[codec], (codec, sent, sizes[codec])
        arrow = scrape.get("pyairport_bytes_read_total", **where)
        assert (sent < arrow) == (codec != "none"), (codec, sent, arrow)
    assert sizes["zstd"] < sizes["lz4"] < sizes["none"], sizes


def test_a_codec_it_does_not_know_is_refused_before_serving() -> None:
    with pytest.raises(ValueError, match="compression 'gzip': one of auto, none, lz4, zstd"):
        AirportServer(MemoryCatalog("lake"), None, ServerConfig(port=0, compression="gzip"))
