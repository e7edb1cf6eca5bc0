"""A scan as DuckDB reads it, on the wire: several endpoints of one snapshot (deviation
several_endpoints), the progress each DoGet message carries (scan_progress_reported), a count
that reads no column (scan_needs_no_columns) and the columns not asked for typed null
(unrequested_columns_null_typed). pyarrow.flight is the client, framing calls as DuckDB's
extension does, reading each endpoint where it says: the server, or its data socket."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import msgpack
import pyarrow as pa
import pyarrow.flight as flight
import pytest

from airport_contracts import flight_pb2
from pyairport.backends.memory import memory_table
from pyairport.backends.scan_parts import SPLIT
from pyairport.catalog import CatalogSchema, MutableCatalog
from pyairport.server import ServerConfig
from pyairport.server.data_plane import AUTO
from pyairport.wire.column_ids import ROWID_COLUMN_ID

from ..filter_json import column, constant
from .conftest import Running, serving

COLUMNS = pa.schema([("id", pa.int64()), ("name", pa.string())])
ROWS = 5_000


@pytest.fixture
def split() -> Iterator[None]:
    """Scans of more than 1,000 rows split in up to 4 parts, for this test."""
    before = (SPLIT.max_parts, SPLIT.rows_per_part)
    SPLIT.max_parts, SPLIT.rows_per_part = 4, 1_000
    yield
    SPLIT.max_parts, SPLIT.rows_per_part = before


@pytest.fixture(params=["catalog", "data socket"])
def running(request: pytest.FixtureRequest) -> Iterator[Running]:
    """The table's server; with a data socket, the endpoints name it and _read reads there."""
    rows = pa.table({"id": range(ROWS), "name": [f"n{i}" for i in range(ROWS)]})
    table = memory_table("t", COLUMNS, rows=rows)
    config = ServerConfig(port=0, data_socket=AUTO if request.param == "data socket" else None)
    catalog = MutableCatalog("", [CatalogSchema("s", tables=[table])])
    with serving(catalog, config=config) as live:
        yield live


def _endpoints(
    running: Running,
    column_ids: list[int],
    bindings: list[str],
    filters: list[object] = (),  # type: ignore[assignment]
) -> list[flight_pb2.FlightEndpoint]:
    descriptor = flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=["s", "t"]
    ).SerializeToString()
    json_filters = json.dumps({"filters": list(filters), "column_binding_names_by_index": bindings})
    request = {
        "descriptor": descriptor,
        "parameters": {"column_ids": column_ids, "json_filters": json_filters},
    }
    (body,) = running.client.action("endpoints", msgpack.packb(request))
    endpoints = []
    for raw in msgpack.unpackb(body, raw=True):
        endpoint = flight_pb2.FlightEndpoint()
        endpoint.ParseFromString(raw)
        endpoints.append(endpoint)
    return endpoints


def _read(running: Running, endpoint: flight_pb2.FlightEndpoint) -> tuple[pa.Table, list[float]]:
    """One endpoint's rows and the progress its messages reported, read where it says."""
    batches, progress = [], []
    (location,) = endpoint.location
    data_plane = running.server.data_plane
    assert location.uri == (data_plane.location if data_plane else running.server.location)
    with contextlib.closing(flight.connect(location.uri)) as client:
        for chunk in client.do_get(flight.Ticket(endpoint.ticket.ticket)):
            batches.append(chunk.data)
            if chunk.app_metadata is not None:
                progress.append(msgpack.unpackb(chunk.app_metadata.to_pybytes())["progress"])
    return pa.Table.from_batches(batches), progress


def test_a_large_scan_is_several_endpoints_of_one_snapshot(running: Running, split: None) -> None:
    endpoints = _endpoints(running, [0, 1], ["id", "name"])
    assert len(endpoints) == 4
    # the table changes after the endpoints were handed out: every part still reads the
    # version they were planned on
    running.client.delete("s", "t", list(range(1, 101)))
    running.client.insert("s", "t", pa.table({"id": [-1], "name": ["late"]}))
    parts = [_read(running, endpoint)[0] for endpoint in endpoints]
    assert [p.num_rows for p in parts] == [1_250] * 4
    together = pa.concat_tables(parts).select(["id", "name"]).sort_by("id")
    assert together["id"].to_pylist() == list(range(ROWS))
    # the next scan sees the change
    after = pa.concat_tables([_read(running, e)[0] for e in _endpoints(running, [0], ["id"])])
    assert after.num_rows == ROWS - 100 + 1


def test_a_scan_of_one_part_outlives_the_versions_the_table_keeps() -> None:
    """With one part nothing is pinned: its DoGet reads the table as it is then, however many
    statements committed since the endpoints were handed out (16 writers commit more than
    the 2 versions this table keeps)."""
    before = SPLIT.max_parts
    SPLIT.max_parts = 1
    rows = pa.table({"id": range(10), "name": [f"n{i}" for i in range(10)]})
    table = memory_table("t", COLUMNS, rows=rows, versions_kept=2)
    try:
        with serving(MutableCatalog("", [CatalogSchema("s", tables=[table])])) as live:
            (endpoint,) = _endpoints(live, [0, 1], ["id", "name"])
            for i in range(5):
                live.client.insert("s", "t", pa.table({"id": [100 + i], "name": ["late"]}))
            read, _ = _read(live, endpoint)
            assert read.num_rows == 15
    finally:
        SPLIT.max_parts = before


def test_each_message_reports_progress_ending_at_one(running: Running, split: None) -> None:
    for endpoint in _endpoints(running, [0], ["id"]):
        _, progress = _read(running, endpoint)
        assert progress and all(0 <= p <= 1 for p in progress)
        assert progress == sorted(progress) and progress[-1] == 1.0


def test_a_count_reads_no_column(running: Running, split: None) -> None:
    """DuckDB's count(*): the rowid id alone, no column binding."""
    endpoints = _endpoints(running, [ROWID_COLUMN_ID], [])
    assert all(json.loads(e.ticket.ticket)["rows_only"] is True for e in endpoints)
    parts = [_read(running, e)[0] for e in endpoints]
    assert sum(p.num_rows for p in parts) == ROWS
    # the columns are not sent; the rowid keeps its type (DuckDB reads its vector in a count
    # over a cross product), its values null
    for part in parts:
        assert [f.type for f in part.schema] == [pa.null(), pa.null(), pa.int64()]
        assert part["rowid"].null_count == part.num_rows
    # SELECT rowid names the rowid: it is read
    (rowids,) = [_read(running, e)[0] for e in _endpoints(running, [ROWID_COLUMN_ID], ["rowid"])][
        :1
    ]
    assert rowids.schema.field("rowid").type == pa.int64() and rowids["rowid"].null_count == 0


def test_a_count_of_a_table_without_rowids_reads_no_column(running: Running, split: None) -> None:
    """DuckDB's count(*) of a table without a rowid names its first column (DuckDB's "any
    column"), with no column binding; `SELECT id` names it with its binding and reads it."""
    endpoints = _endpoints(running, [0], [])
    assert all(json.loads(e.ticket.ticket)["rows_only"] is True for e in endpoints)
    parts = [_read(running, e)[0] for e in endpoints]
    assert sum(p.num_rows for p in parts) == ROWS
    for part in parts:  # the column named keeps its type, as the rowid does in a count
        assert [f.type for f in part.schema] == [pa.int64(), pa.null(), pa.null()]
        assert part["id"].null_count == part.num_rows
    for ids, names in (([0], ["id"]), ([0, 1], []), ([1], ["name"])):
        endpoints = _endpoints(running, ids, names)
        assert not any(json.loads(e.ticket.ticket).get("rows_only") for e in endpoints), ids
    read = pa.concat_tables([_read(running, e)[0] for e in _endpoints(running, [0], ["id"])])
    assert sorted(read["id"].to_pylist()) == list(range(ROWS))


def test_columns_not_asked_for_are_typed_null(running: Running) -> None:
    (endpoint,) = _endpoints(running, [1], ["name"])
    rows, _ = _read(running, endpoint)
    assert rows.schema.names == ["id", "name", "rowid"]
    assert [f.type for f in rows.schema] == [pa.null(), pa.string(), pa.null()]
    assert rows.schema.field("rowid").metadata == {b"is_rowid": b"true"}
    assert rows["name"].to_pylist() == [f"n{i}" for i in range(ROWS)]


def test_a_filtered_split_scan_keeps_exactly_the_matching_rows(
    running: Running, split: None
) -> None:
    between = {
        "expression_class": "BOUND_BETWEEN",
        "type": "COMPARE_BETWEEN",
        "alias": "",
        "input": column(0, alias="id"),
        "lower": constant(1_000),
        "upper": constant(3_999),
        "lower_inclusive": True,
        "upper_inclusive": True,
    }
    endpoints = _endpoints(running, [0], ["id"], [between])
    assert len(endpoints) == 4
    found = pa.concat_tables([_read(running, e)[0] for e in endpoints])
    assert sorted(found["id"].to_pylist()) == list(range(1_000, 4_000))


def test_a_forged_part_is_an_invalid_ticket_and_reads_nothing(
    running: Running, split: None
) -> None:
    """A part's token comes back inside a ticket, which anyone can write: a range the table
    did not plan (past its rows, backwards, not numbers) or no part at all is the contract's
    invalid_ticket, never a stream of rows the table does not hold."""
    (endpoint, *_) = _endpoints(running, [0, 1], ["id", "name"])
    ticket = json.loads(endpoint.ticket.ticket)
    real = json.loads(ticket["partition"])
    forged_parts = [
        "not json",
        json.dumps([real["version"]]),
        json.dumps({**real, "stop": 10**12}),
        json.dumps({**real, "start": -5}),
        json.dumps({**real, "start": real["stop"] + 1}),
        json.dumps({**real, "version": str(real["version"])}),
        json.dumps({**real, "version": real["version"] + 1_000}),  # a version not yet made
    ]
    (location,) = endpoint.location
    # INVALID_ARGUMENT at the catalog; the data socket's Arrow server has no class for that
    # code and says UNKNOWN, with the same message (docs/architecture.md)
    refused = flight.FlightServerError if running.server.data_plane else pa.ArrowInvalid
    with contextlib.closing(flight.connect(location.uri)) as client:
        for forged in forged_parts:
            altered = flight.Ticket(json.dumps({**ticket, "partition": forged}).encode())
            with pytest.raises(refused, match="invalid ticket: not a scan part of this table"):
                client.do_get(altered).read_all()
