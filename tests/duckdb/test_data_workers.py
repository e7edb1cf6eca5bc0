"""DuckDB reading a Spark lake through the server's own data workers (`serve --data-workers`):
the endpoints name the workers' Unix sockets, and every query, row-tracked rowids and DuckDB's
DELETE (which scans the rowids first) included, answers as without them."""

from __future__ import annotations

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
from pyairport.server.data_workers import DataWorkers, WorkerFlags
from pyairport.server.ticket_seal import new_key
from pyairport.transactions import MemoryTransactionManager

from ..backend.test_lake import make_table
from .conftest import OpenSession

pytestmark = [pytest.mark.duckdb, pytest.mark.spark]

TOKEN = "workers-token"


def test_duckdb_reads_a_lake_through_the_servers_own_workers(
    spark_backend: Any, tmp_path: Path, open_session: OpenSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deltalake import write_deltalake

    from pyairport.backends.spark import SparkBackend

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
    make_table(spark_backend.spark, lake, "tracked", schema="shop")
    flags = WorkerFlags(token=TOKEN, log_level="WARNING")
    workers = DataWorkers(new_key(), 2, [], flags, DetachedReader().read)
    server = AirportServer(
        SparkBackend(spark_backend.spark, lake).catalog,
        MemoryTransactionManager(),
        ServerConfig(port=0, auth_token=TOKEN),
    )
    server.serve_parts_at(workers)
    server.start()
    try:
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
    finally:
        server.stop(0)  # and the workers
    assert not Path(workers.own_locations[0].removeprefix("grpc+unix://")).parent.exists()
