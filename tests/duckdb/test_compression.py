"""DoGet streams compressed (`--compression lz4|zstd`): both DuckDB clients, each in its own
Python with its own build of the extension, read exactly the rows of an uncompressed stream,
and a Flight client counts fewer bytes on the wire."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import grpc
import pyarrow as pa
import pytest

from airport_contracts import flight_pb2, flight_pb2_grpc
from pyairport.backends.memory import memory_table
from pyairport.backends.memory.catalog import MemoryCatalog, MemorySchema
from pyairport.server import AirportServer, ServerConfig
from pyairport.transactions import MemoryTransactionManager

from ..metrics import Scrape
from .extension import REQUIRED
from .sqllogic.clients import CLIENTS, Client

pytestmark = pytest.mark.duckdb

ROWS = 150_000  # several 64k-row batches

QUERY = (
    "SELECT count(*), sum(id), sum(amount), count(DISTINCT note), min(day), max(day),"
    " sum(length(note)), count(note) FROM lake.data.wide"
)

RUN = """
import json, sys
import duckdb
extension, extension_dir, location, query = sys.argv[1:5]
config = {"allow_unsigned_extensions": "true", "autoinstall_known_extensions": "false"}
if extension_dir:
    config["extension_directory"] = extension_dir
db = duckdb.connect(config=config)
db.execute(f"LOAD '{extension}'")
db.execute(f"ATTACH 'lake' AS lake (TYPE AIRPORT, LOCATION '{location}')")
print(json.dumps([str(v) for v in db.execute(query).fetchone()]))
"""


def _wide() -> pa.Table:
    ids = pa.array(range(ROWS), pa.int64())
    return pa.table(
        {
            "id": ids,
            "amount": pa.array([i * 0.25 for i in range(ROWS)], pa.float64()),
            "note": pa.array([None if i % 7 == 0 else f"note {i % 1000}" for i in range(ROWS)]),
            "day": pa.array([i % 20000 for i in range(ROWS)], pa.date32()),
        }
    )


@contextmanager
def _serving(compression: str) -> Iterator[AirportServer]:
    catalog = MemoryCatalog("lake")
    rows = _wide()
    schema = catalog.add_schema(MemorySchema("data"))
    schema.add(memory_table("wide", rows.schema, rows=rows))
    config = ServerConfig(port=0, compression=compression, metrics_port=0)
    server = AirportServer(catalog, MemoryTransactionManager(), config).start()
    try:
        yield server
    finally:
        server.stop(0)


def _ask(client: Client, location: str) -> list[str]:
    why = client.missing()
    if why:
        if os.environ.get(REQUIRED):
            pytest.fail(f"the DuckDB client {client.name} cannot run: {why}", pytrace=False)
        pytest.skip(f"the DuckDB client {client.name} cannot run: {why}")
    extension_dir = str(client.extension_dir) if client.extension_dir is not None else ""
    done = subprocess.run(
        [str(client.python), "-c", RUN, str(client.extension), extension_dir, location, QUERY],
        capture_output=True,
        text=True,
        timeout=300,
        env={"QUERY_FARM_TELEMETRY_OPT_OUT": "1", "PATH": "/usr/bin:/bin", "HOME": "/tmp"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answer: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


@pytest.mark.parametrize("client", CLIENTS, ids=[c.name for c in CLIENTS])
def test_both_duckdb_clients_read_compressed_streams_exactly(client: Client) -> None:
    with _serving("none") as server:
        plain = _ask(client, server.location)
    assert plain[0] == str(ROWS)
    for codec in ("lz4", "zstd"):
        with _serving(codec) as server:
            assert _ask(client, server.location) == plain, codec


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
        assert rows.sort_by("id").select(["id", "amount", "note", "day"]).equals(_wide()), codec
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
