"""`--string-dictionaries`: tables' string columns declared and sent as Arrow dictionaries.

DuckDB decodes a stream by the types the catalog declared, so the listing, the FlightInfos and
every stream must agree: both DuckDB clients, each in its own Python, answer scans, filters,
LIKE, GROUP BY, counts, time travel and DML with RETURNING as they do over plain strings, read
at the catalog's address (grpcio) and at the data socket (Arrow C++); a pyarrow client sees the
dictionaries, and under ZSTD the stream is smaller."""

from __future__ import annotations

from contextlib import AbstractContextManager

import pyarrow as pa
import pyarrow.flight as flight
import pytest

from pyairport.server import AirportServer, ServerConfig

from ..metrics import Scrape
from .sqllogic.clients import CLIENTS, Client
from .wide import QUERY, ask, serving_wide, session, wide_table

pytestmark = pytest.mark.duckdb

PLACES = {"catalog": None, "data socket": "auto"}  # ServerConfig.data_socket

READS = [
    QUERY,
    "SELECT count(*) FILTER (WHERE note IS NULL), count(DISTINCT note), min(note), max(note),"
    " count(*) FILTER (WHERE note > 'note 5') FROM lake.data.wide",
    "SELECT string_agg(note || '=' || n, ',' ORDER BY note) FROM (SELECT note, count(*) AS n"
    " FROM lake.data.wide WHERE note = 'note 7' OR note LIKE 'note 99%' GROUP BY note)",
    "SELECT count(*) FROM lake.data.wide",
    "SELECT sum(id) FROM lake.data.wide WHERE note IN ('note 1', 'note 2') AND amount > 100",
]

CHANGES = [
    "INSERT INTO lake.data.wide (id, amount, note, day) VALUES (-1, 1.5, 'a new note', DATE"
    " '2020-01-01'), (-2, 2.5, NULL, DATE '2020-01-02') RETURNING id, note",
    "UPDATE lake.data.wide SET note = 'changed' WHERE id IN (-1, 3) RETURNING id, note",
    "DELETE FROM lake.data.wide WHERE id = -2 RETURNING id, note",
    "SELECT id, note FROM lake.data.wide WHERE id < 0 OR id = 3 ORDER BY id",
    "SELECT id, note FROM lake.data.wide AT (VERSION => 1) WHERE id < 0 OR id = 3 ORDER BY id",
    "SELECT count(*), count(DISTINCT note) FROM lake.data.wide",
]


def _serving(
    dictionaries: bool, data_socket: str | None = None, compression: str = "zstd"
) -> AbstractContextManager[AirportServer]:
    config = ServerConfig(
        port=0,
        compression=compression,
        metrics_port=0,
        data_socket=data_socket,
        string_dictionaries=dictionaries,
    )
    return serving_wide(config)


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("client", CLIENTS, ids=[c.name for c in CLIENTS])
def test_both_duckdb_clients_read_dictionaries_as_the_strings_they_are(
    client: Client, place: str
) -> None:
    with _serving(False) as server:
        plain = [ask(client, server.location, query) for query in READS]
    notes = [n for n in wide_table().column("note").to_pylist() if n is not None]
    grouped = sorted({n for n in notes if n == "note 7" or n.startswith("note 99")})
    assert plain[2] == [",".join(f"{n}={notes.count(n)}" for n in grouped)]
    with _serving(True, PLACES[place]) as server:
        assert [ask(client, server.location, query) for query in READS] == plain
        if place == "data socket":
            assert server.data_plane is not None and server.data_plane.scans >= len(READS)


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("client", CLIENTS, ids=[c.name for c in CLIENTS])
def test_dml_with_returning_and_time_travel_over_dictionaries(client: Client, place: str) -> None:
    """DuckDB writes strings (its Arrow for VARCHAR) into a table it reads as dictionaries;
    RETURNING streams are the statement's own schema, strings."""
    with _serving(True, PLACES[place]) as server:
        answers = session(client, server.location, CHANGES)
    assert answers[:3] == [
        [["-1", "a new note"], ["-2", "None"]],
        [["3", "changed"], ["-1", "changed"]],
        [["-2", "None"]],
    ]
    assert answers[3] == [["-1", "changed"], ["3", "changed"]]
    assert answers[4] == [["-2", "None"], ["-1", "a new note"], ["3", "note 3"]]  # the insert's
    with _serving(False) as server:
        assert session(client, server.location, CHANGES) == answers


def test_a_pyarrow_client_sees_dictionaries_and_zstd_carries_them_in_fewer_bytes() -> None:
    sent, read = {}, {}
    for dictionaries in (False, True):
        with _serving(dictionaries) as server:
            client = flight.connect(server.location)
            try:
                info = client.get_flight_info(flight.FlightDescriptor.for_path("data", "wide"))
                read[dictionaries] = client.do_get(info.endpoints[0].ticket).read_all()
            finally:
                client.close()
            where = {"catalog": "lake", "schema": "data", "table": "wide"}
            sent[dictionaries] = Scrape(server).get("pyairport_bytes_sent_total", **where)
        note = info.schema.field("note")
        assert note.type == (
            pa.dictionary(pa.int32(), pa.string()) if dictionaries else pa.string()
        )
        assert info.schema.field("id").type == pa.int64()
        # DuckDB reads a dictionary column's statistics as its indices': none are offered
        assert (b"can_produce_statistics" in (info.schema.metadata or {})) is not dictionaries
        assert read[dictionaries].schema.field("note").type == note.type
    plain = read[False].sort_by("id")
    assert plain.select(wide_table().column_names).equals(wide_table())
    decoded = read[True].sort_by("id").cast(plain.schema)
    assert decoded.equals(plain)
    assert sent[True] < sent[False] * 0.9, sent
