"""Data workers (server/data_worker.py, data_workers.py; deviation data_workers): a Spark lake's
scan parts handed to workers that read them with delta-rs, under tickets the catalog sealed.
A pyarrow.flight client reads at the worker what the catalog serves (plain tables written by
delta-rs, row-tracked ones by Spark, columns, filters, progress); every ticket that was not
sealed for the caller, or has expired, is refused on the wire; the server's own worker
processes come and go with it."""

from __future__ import annotations

import dataclasses
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import msgpack
import pyarrow as pa
import pyarrow.flight as flight
import pytest

from airport_contracts import TicketData, flight_pb2, flight_pb2_grpc
from pyairport import filters
from pyairport.access.identities import TokensFile, hash_token
from pyairport.access.policy import Policy
from pyairport.backends.scan_parts import SPLIT
from pyairport.backends.spark.detached import DetachedReader
from pyairport.client import AirportClient
from pyairport.client.remote_catalog import decode_endpoints, endpoints_request
from pyairport.server import AirportServer, ServerConfig
from pyairport.server.data_worker import DataWorker
from pyairport.server.data_workers import DataWorkers, WorkerFlags
from pyairport.server.metrics import ServerMetrics
from pyairport.server.ticket_seal import PREFIX, TicketSeal, new_key
from pyairport.transactions import MemoryTransactionManager
from pyairport.wire.column_ids import ROWID_COLUMN_ID

from ..waiting import until
from .test_lake import make_table

pytestmark = pytest.mark.spark

TOKENS = {"alice": "alice-token-1", "bob": "bob-token-2"}
POLICY = """
[[grant]]
identity = "alice"
catalog = "*"
rights = ["read"]

[[grant]]
identity = "bob"
catalog = "*"
schemas = ["other"]
rights = ["read"]
"""
ROWS = 3_000  # in three files of 1,000: a scan of three parts, whose files differ


@dataclasses.dataclass
class Lake:
    server: AirportServer
    worker: DataWorker
    key: bytes
    folder: Path


@pytest.fixture(scope="module")
def lake(spark_backend: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    from deltalake import write_deltalake

    from pyairport.backends.spark import SparkBackend

    folder = tmp_path_factory.mktemp("workers")
    lake = folder / "lake"
    for start in range(0, ROWS, 1_000):
        ids = pa.array(range(start, start + 1_000), pa.int64())
        part = pa.table(
            {
                "id": ids,
                "name": [f"n{i % 7}" for i in range(1_000)],
                "amount": pa.compute.divide(ids.cast(pa.float64()), 4),
            }
        )
        write_deltalake(str(lake / "shop" / "orders"), part, mode="append")
    make_table(spark_backend.spark, lake, "tracked", schema="shop")
    tokens = folder / "tokens.txt"
    tokens.write_text("".join(f"{n} {hash_token(t)}\n" for n, t in TOKENS.items()))
    policy = folder / "policy.toml"
    policy.write_text(POLICY)
    key = new_key()
    reader = DetachedReader().read
    worker = DataWorker("grpc://127.0.0.1:0", TicketSeal(key), reader, TokensFile(tokens))
    backend = SparkBackend(spark_backend.spark, lake)
    server = AirportServer(
        backend.catalog,
        MemoryTransactionManager(),
        ServerConfig(port=0),
        authenticator=TokensFile(tokens),
        policy=Policy.from_file(policy),
    )
    at = f"grpc://127.0.0.1:{worker.port}"
    server.serve_parts_at(DataWorkers(key, 0, [at], WorkerFlags(), reader))
    server.start()
    yield Lake(server, worker, key, lake)
    server.stop(0)
    worker.stop(0)
    backend.close()  # its staging folder


@pytest.fixture
def three_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SPLIT, "max_parts", 3)
    monkeypatch.setattr(SPLIT, "rows_per_part", 1_000)


def _endpoints(
    lake: Lake, table: str, ids: list[int], filters: str = "", who: str = "alice"
) -> list[flight_pb2.FlightEndpoint]:
    with AirportClient(lake.server.location, token=TOKENS[who]) as client:
        (body,) = client.action("endpoints", endpoints_request("shop", table, ids, filters))
    return decode_endpoints(body)


def _options(token: str | None) -> flight.FlightCallOptions:
    headers = [(b"authorization", f"Bearer {token}".encode())] if token is not None else []
    return flight.FlightCallOptions(headers=headers)


def _read_at(location: str, ticket: bytes, who: str = "alice") -> pa.Table:
    with flight.connect(location) as client:
        return client.do_get(flight.Ticket(ticket), options=_options(TOKENS[who])).read_all()


def _at_the_catalog(lake: Lake, table: str, columns: list[str] | None = None) -> pa.Table:
    with AirportClient(lake.server.location, token=TOKENS["alice"]) as client:
        return client.scan("shop", table, columns).read_all()


def test_a_scans_parts_are_sealed_for_the_worker(lake: Lake, three_parts: None) -> None:
    endpoints = _endpoints(lake, "orders", [0, 1, 2])
    assert len(endpoints) == 3
    for endpoint in endpoints:
        assert [loc.uri for loc in endpoint.location] == [f"grpc://127.0.0.1:{lake.worker.port}"]
        assert endpoint.ticket.ticket.startswith(PREFIX)
        # the plan names the table's folder: sealed, the client never reads it
        assert str(lake.folder).encode() not in endpoint.ticket.ticket
        assert b"orders" not in endpoint.ticket.ticket
    before = lake.worker.scans
    read = pa.concat_tables(
        _read_at(e.location[0].uri, e.ticket.ticket) for e in endpoints
    ).sort_by("id")
    assert lake.worker.scans == before + 3
    assert read.column("id").to_pylist() == list(range(ROWS))
    # what the catalog serves (a client that reads every endpoint there: its own DoGet
    # opens sealed tickets too)
    assert read.equals(_at_the_catalog(lake, "orders").sort_by("id"))


def test_the_worker_reads_row_tracked_ids_columns_and_filters_as_the_catalog(lake: Lake) -> None:
    (endpoint,) = _endpoints(lake, "tracked", [0, 1, ROWID_COLUMN_ID])
    tracked = _read_at(endpoint.location[0].uri, endpoint.ticket.ticket)
    assert tracked.sort_by("order_id").equals(_at_the_catalog(lake, "tracked").sort_by("order_id"))
    assert sorted(tracked.column("rowid").to_pylist()) == [0, 1, 2, 3]  # Delta's row ids
    # DuckDB's column ids (id, amount) and a filter pushed down: amount > 700; the stream is
    # full width (name null), as the catalog's
    schema = _at_the_catalog(lake, "orders").schema
    document = filters.to_json(filters.Compare("amount", ">", 700.0), schema)
    (part,) = _endpoints(lake, "orders", [0, 2], document)
    filtered = _read_at(part.location[0].uri, part.ticket.ticket)
    assert filtered.column("name").null_count == filtered.num_rows
    assert set(range(2_801, ROWS)) <= set(filtered.column("id").to_pylist())
    plain = TicketData(
        catalog="",
        schema="shop",
        table="orders",
        columns=["id", "amount"],
        filters=document.encode(),
    )
    at_catalog = _read_at(lake.server.location, plain.to_json())
    assert filtered.sort_by("id").equals(at_catalog.sort_by("id"))


def test_the_worker_reads_a_past_version(lake: Lake) -> None:
    """DuckDB's `AT (VERSION => 0)`: the part pins version 0 (the first file's rows)."""
    descriptor = flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=["shop", "orders"]
    ).SerializeToString()
    parameters = {"column_ids": [0], "json_filters": "", "at_unit": "VERSION", "at_value": "0"}
    request = msgpack.packb(
        {"descriptor": descriptor, "parameters": parameters}, use_bin_type=False
    )
    with AirportClient(lake.server.location, token=TOKENS["alice"]) as client:
        (body,) = client.action("endpoints", request)
    (endpoint,) = decode_endpoints(body)
    assert endpoint.ticket.ticket.startswith(PREFIX)
    read = _read_at(endpoint.location[0].uri, endpoint.ticket.ticket)
    assert sorted(read.column("id").to_pylist()) == list(range(1_000))


def test_the_workers_stream_carries_progress(lake: Lake, three_parts: None) -> None:
    first = _endpoints(lake, "orders", [0])[0]
    with flight.connect(first.location[0].uri) as client:
        reader = client.do_get(
            flight.Ticket(first.ticket.ticket), options=_options(TOKENS["alice"])
        )
        progress = []
        while True:
            try:
                chunk = reader.read_chunk()
            except StopIteration:
                break
            if chunk.app_metadata is not None:
                progress.append(msgpack.unpackb(chunk.app_metadata.to_pybytes())["progress"])
    assert progress and progress[-1] == 1.0


def _refused(location: str, ticket: bytes, token: str | None) -> grpc.RpcError:
    target = location.removeprefix("grpc://")
    metadata = [("authorization", f"Bearer {token}")] if token is not None else []
    with grpc.insecure_channel(target) as channel:
        stub = flight_pb2_grpc.FlightServiceStub(channel)
        try:
            list(stub.DoGet(flight_pb2.Ticket(ticket=ticket), metadata=metadata))
        except grpc.RpcError as error:
            return error
    raise AssertionError("the DoGet was served")


def _both(lake: Lake, ticket: bytes, token: str | None, code: Any, message: str) -> None:
    """The refusal at the worker (Arrow's server adds its suffix) and at the catalog (the
    contract's message exactly)."""
    at_worker = _refused(f"grpc://127.0.0.1:{lake.worker.port}", ticket, token)
    assert at_worker.code() == code
    suffix = "Unauthorized" if code == grpc.StatusCode.PERMISSION_DENIED else "Unauthenticated"
    assert at_worker.details() == f"{message}. Detail: {suffix}"
    at_catalog = _refused(lake.server.location, ticket, token)
    assert (at_catalog.code(), at_catalog.details()) == (code, message)


def _resealed(lake: Lake, ticket: bytes, **changes: Any) -> bytes:
    """ticket opened with the key and sealed again with changes (what only the key's holder
    can do)."""
    seal = TicketSeal(lake.key)
    opened = seal.open(ticket, "alice")
    return seal.seal(dataclasses.replace(opened, **changes))


NOT_ISSUED = "ticket refused: not sealed by this server's catalog, or changed since"


def test_forged_altered_expired_and_borrowed_tickets_are_refused(lake: Lake) -> None:
    (endpoint,) = _endpoints(lake, "orders", [0])
    ticket = endpoint.ticket.ticket
    denied = grpc.StatusCode.PERMISSION_DENIED
    forged = TicketSeal(new_key()).seal(TicketSeal(lake.key).open(ticket, "alice"))
    _both(lake, forged, TOKENS["alice"], denied, NOT_ISSUED)
    altered = bytearray(ticket)
    altered[-5] ^= 0x01
    _both(lake, bytes(altered), TOKENS["alice"], denied, NOT_ISSUED)
    _both(lake, PREFIX + os.urandom(64), TOKENS["alice"], denied, NOT_ISSUED)
    _both(lake, ticket[: len(PREFIX) + 4], TOKENS["alice"], denied, NOT_ISSUED)
    expired = _resealed(lake, ticket, expires=time.time() - 1)
    _both(
        lake,
        expired,
        TOKENS["alice"],
        denied,
        "ticket refused: it has expired: run the query again",
    )
    # bob may not read shop: alice's ticket does not let him
    _both(lake, ticket, TOKENS["bob"], denied, "ticket refused: it was issued to another identity")
    # a ticket for bob that names alice's table: only the catalog's key makes one
    assert _read_at(
        endpoint.location[0].uri, _resealed(lake, ticket, identity="bob"), "bob"
    ).num_rows
    # no valid token: the catalog's messages, before any ticket is looked at
    unauthenticated = grpc.StatusCode.UNAUTHENTICATED
    _both(lake, ticket, "not-a-token", unauthenticated, "unauthenticated")
    _both(lake, ticket, None, unauthenticated, "authorization header must use Bearer scheme")
    # the worker serves no ticket of another kind: the catalog's own JSON ticket is refused
    plain = TicketData(catalog="", schema="shop", table="orders").to_json()
    refused = _refused(f"grpc://127.0.0.1:{lake.worker.port}", plain, TOKENS["alice"])
    assert (refused.code(), refused.details()) == (denied, f"{NOT_ISSUED}. Detail: Unauthorized")


def test_the_grants_are_decided_before_anything_is_sealed(lake: Lake) -> None:
    """bob has no grant on shop: the catalog refuses his endpoints, and no ticket exists."""
    with (
        AirportClient(lake.server.location, token=TOKENS["bob"]) as client,
        pytest.raises(Exception, match="permission|not allowed|denied|grant"),
    ):
        client.action("endpoints", endpoints_request("shop", "orders", [0], ""))


def test_the_worker_serves_nothing_but_doget(lake: Lake) -> None:
    with flight.connect(f"grpc://127.0.0.1:{lake.worker.port}") as client:
        with pytest.raises(flight.FlightServerError, match="serves scans \\(DoGet\\) only"):
            list(client.list_flights(options=_options(TOKENS["alice"])))


def test_the_servers_own_workers_start_serve_and_go_with_it(lake: Lake, three_parts: None) -> None:
    """DataWorkers(count=2): two `pyairport worker` processes on Unix sockets; parts go round
    them; one that is killed is started again; stop() ends both and leaves no folder. Their
    DoGets are in the server's metrics as its own are (worker_reports.py)."""
    tokens = lake.folder.parent / "tokens.txt"
    flags = WorkerFlags(token_flags=["--tokens-file", str(tokens)], log_level="WARNING")
    metrics = ServerMetrics()
    workers = DataWorkers(new_key(), 2, [], flags, DetachedReader().read, metrics=metrics)
    try:
        sockets = [Path(at.removeprefix("grpc+unix://")) for at in workers.own_locations]
        assert len(sockets) == 2
        for path in sockets:
            assert stat.S_IMODE(path.stat().st_mode) == 0o666  # others' clients too, by token
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o711
        # no key, no token on disk: they went through the workers' stdin
        assert set(os.listdir(path.parent)) == {p.name for p in sockets}
        lake.server.serve_parts_at(workers)
        endpoints = _endpoints(lake, "orders", [0, 1, 2])
        assert {e.location[0].uri for e in endpoints} == set(workers.own_locations)
        read = pa.concat_tables(_read_at(e.location[0].uri, e.ticket.ticket) for e in endpoints)
        assert sorted(read.column("id").to_pylist()) == list(range(ROWS))
        assert until(lambda: _rows_read(metrics, "orders") == ROWS)
        # a worker reports a DoGet's call once its stream has ended, after its rows
        doget_ok = {"rpc": "DoGet", "method": "-", "code": "OK"}
        assert until(
            lambda: (
                metrics.registry.get_sample_value("pyairport_calls_total", doget_ok)
                == len(endpoints)
            )
        )
        assert sum(_sample(metrics, "pyairport_data_worker_parts_total", w) for w in OWN) == 3
        assert until(
            lambda: [_sample(metrics, "pyairport_data_worker_up", w) for w in OWN] == [1, 1]
        )
        # a worker killed: the endpoints name the other until it is up again
        victim = workers._own[0]
        victim._process.kill()  # type: ignore[union-attr]
        victim._process.wait()  # type: ignore[union-attr]
        assert {e.location[0].uri for e in _endpoints(lake, "orders", [0, 1, 2])} == {
            workers.own_locations[1]
        }
        deadline = time.monotonic() + 60
        while not victim.serving() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert victim.serving()
        again = _endpoints(lake, "orders", [0])
        assert {e.location[0].uri for e in again} == set(workers.own_locations)
        read = pa.concat_tables(_read_at(e.location[0].uri, e.ticket.ticket) for e in again)
        assert sorted(read.column("id").to_pylist()) == list(range(ROWS))
        assert until(lambda: _rows_read(metrics, "orders") == 2 * ROWS)  # the new one's too
        processes = [w._process for w in workers._own]
    finally:
        lake.server.serve_parts_at(
            DataWorkers(
                lake.key,
                0,
                [f"grpc://127.0.0.1:{lake.worker.port}"],
                WorkerFlags(),
                DetachedReader().read,
            )
        )
        workers.stop()
    assert all(p is not None and p.poll() is not None for p in processes)
    assert not sockets[0].parent.exists()


OWN = ("own/0", "own/1")


def _sample(metrics: ServerMetrics, name: str, worker: str) -> float:
    return metrics.registry.get_sample_value(name, {"worker": worker}) or 0.0


def _rows_read(metrics: ServerMetrics, table: str) -> float:
    return sum(
        sample.value
        for family in metrics.registry.collect()
        for sample in family.samples
        if sample.name == "pyairport_rows_read_total" and sample.labels.get("table") == table
    )
