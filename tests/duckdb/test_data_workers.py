"""DuckDB reading a Spark lake through the server's own data workers (`serve --data-workers`):
the endpoints name the workers' Unix sockets, and every query, row-tracked rowids and DuckDB's
DELETE (which scans the rowids first) included, answers as without them; and through a worker
on TCP that joined the running server (`pyairport worker --join`), as on another host."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pyairport.backends.scan_parts import SPLIT
from pyairport.backends.spark.detached import DetachedReader
from pyairport.client import AirportClient
from pyairport.client.remote_catalog import decode_endpoints, endpoints_request
from pyairport.server import AirportServer, ServerConfig
from pyairport.server.data_worker import DataWorker
from pyairport.server.data_workers import DataWorkers, WorkerFlags
from pyairport.server.ticket_seal import TicketSeal, new_key
from pyairport.server.worker_link import Joiner
from pyairport.transactions import MemoryTransactionManager

from ..backend.test_lake import make_table
from ..waiting import until
from .conftest import OpenSession

pytestmark = [pytest.mark.duckdb, pytest.mark.spark]

TOKEN = "workers-token"


def _lake(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A delta-rs table of 3,000 rows in three files (three parts) and a row-tracked one."""
    from deltalake import write_deltalake

    monkeypatch.setattr(SPLIT, "max_parts", 3)
    monkeypatch.setattr(SPLIT, "rows_per_part", 1_000)
    lake = tmp_path / "lake"
    for start in range(0, 3_000, 1_000):
        ids = pa.array(range(start, start + 1_000), pa.int64())
        rows = pa.table(
            {
                "id": ids,
                "amount": pc.divide(ids.cast(pa.float64()), 4),
                "name": [f"n{i % 7}" for i in range(1_000)],
            }
        )
        write_deltalake(str(lake / "shop" / "orders"), rows, mode="append")
    make_table(spark, lake, "tracked", schema="shop")
    return lake


def test_duckdb_reads_a_lake_through_the_servers_own_workers(
    spark_backend: Any, tmp_path: Path, open_session: OpenSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = _lake(spark_backend.spark, tmp_path, monkeypatch)
    flags = WorkerFlags(token=TOKEN, log_level="WARNING")
    workers = DataWorkers(new_key(), 2, [], flags, DetachedReader().read)
    with _server(spark_backend.spark, lake, workers) as server:  # stops the workers too
        with AirportClient(server.location, token=TOKEN) as client:
            (body,) = client.action("endpoints", endpoints_request("shop", "orders", [0], ""))
        locations = {e.location[0].uri for e in decode_endpoints(body)}
        assert locations == set(workers.own_locations)
        duck = open_session(server.location, TOKEN)
        assert duck.run(
            "SELECT count(*), sum(id), min(name), max(amount) FROM lake.shop.orders"
        ) == [(3_000, sum(range(3_000)), "n0", 2_999 / 4)]
        assert duck.run(
            "SELECT name, count(*) FROM lake.shop.orders WHERE id >= 2_990 GROUP BY 1 ORDER BY 1"
        ) == [(f"n{k}", 2 if k in (3, 4, 5) else 1) for k in range(7)]  # 990..999 % 7
        assert duck.run("SELECT order_id, rowid FROM lake.shop.tracked ORDER BY 1") == [
            (1, 0),
            (2, 1),
            (3, 2),
            (4, 3),
        ]
        duck.run("DELETE FROM lake.shop.tracked WHERE order_id = 2")
        assert duck.run("SELECT order_id, amount FROM lake.shop.tracked ORDER BY 1") == [
            (1, 10.0),
            (3, 30.0),
            (4, 40.0),
        ]
    assert not Path(workers.own_locations[0].removeprefix("grpc+unix://")).parent.exists()


def test_duckdb_reads_through_a_worker_that_joined_over_tcp(
    spark_backend: Any, tmp_path: Path, open_session: OpenSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyairport.access.identities import StaticToken

    lake = _lake(spark_backend.spark, tmp_path, monkeypatch)
    key = new_key()
    reader = DetachedReader().read
    worker = DataWorker("grpc://127.0.0.1:0", TicketSeal(key), reader, StaticToken(TOKEN))
    at = f"grpc://127.0.0.1:{worker.port}"
    workers = DataWorkers(key, 0, [], WorkerFlags(), reader, lakes=[str(lake)])
    with _server(spark_backend.spark, lake, workers) as server:
        joiner = Joiner(server.location, at, TicketSeal(key))
        assert until(lambda: workers.for_peer("ipv4:127.0.0.1:1") is not None)
        duck = open_session(server.location, TOKEN)
        assert duck.run("SELECT count(*), sum(id), max(amount) FROM lake.shop.orders") == [
            (3_000, sum(range(3_000)), 2_999 / 4)
        ]
        assert worker.scans == 3  # the three parts, each read at the worker
        assert duck.run("SELECT order_id, rowid FROM lake.shop.tracked ORDER BY 1") == [
            (1, 0),
            (2, 1),
            (3, 2),
            (4, 3),
        ]
        joiner.stop()
    worker.stop(0)


def test_a_worker_sends_strings_as_the_dictionaries_the_catalog_declared(
    spark_backend: Any, tmp_path: Path, open_session: OpenSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--string-dictionaries`: the sealed ticket tells the worker, which has no flag of its
    own for it, to send the strings as the catalog declared them (DuckDB reads a stream by
    the types it bound)."""
    from pyairport.access.identities import StaticToken

    lake = _lake(spark_backend.spark, tmp_path, monkeypatch)
    key = new_key()
    reader = DetachedReader().read
    worker = DataWorker("grpc://127.0.0.1:0", TicketSeal(key), reader, StaticToken(TOKEN))
    at = f"grpc://127.0.0.1:{worker.port}"
    workers = DataWorkers(key, 0, [at], WorkerFlags(), reader, lakes=[str(lake)])
    with _server(spark_backend.spark, lake, workers, string_dictionaries=True) as server:
        assert until(lambda: workers.for_peer("ipv4:127.0.0.1:1") is not None)
        duck = open_session(server.location, TOKEN)
        # 1,000 rows a file, name n{i % 7}: n0..n5 143 times a file, n6 142
        assert duck.run("SELECT name, count(*) FROM lake.shop.orders GROUP BY 1 ORDER BY 1") == [
            (f"n{k}", 3 * (142 if k == 6 else 143)) for k in range(7)
        ]
        assert worker.scans == 3
        assert duck.run(
            "SELECT count(*), sum(id) FROM lake.shop.orders WHERE name = 'n3' AND id < 1_000"
        ) == [(143, sum(i for i in range(1_000) if i % 7 == 3))]
        assert duck.run("SELECT typeof(name) FROM lake.shop.orders LIMIT 1") == [("VARCHAR",)]
    worker.stop(0)


@contextmanager
def _server(
    spark: Any, lake: Path, workers: DataWorkers, string_dictionaries: bool = False
) -> Iterator[AirportServer]:
    """The lake served with TOKEN, its parts handed to workers; stopped (and the workers
    with it) and its staging folder gone at the end."""
    from pyairport.backends.spark import SparkBackend

    backend = SparkBackend(spark, lake)
    config = ServerConfig(port=0, auth_token=TOKEN, string_dictionaries=string_dictionaries)
    server = AirportServer(backend.catalog, MemoryTransactionManager(), config)
    server.serve_parts_at(workers)
    try:
        yield server.start()
    finally:
        server.stop(0)
        backend.close()
