"""Table refs (deviation table_refs_beside_tables): a table that leaves a scan to DuckDB answers
the endpoints action with data: URIs of function calls DuckDB runs itself. The URI as the
contract says it is; a memory table referring DuckDB to a Parquet file; the Spark backend's
`--delta-scan-refs`, where DuckDB reads a lake table plain Spark wrote with its own
delta_scan, and the scans that stay with the server (the rowid, a time point)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airport_contracts import (
    Context,
    FunctionCall,
    FunctionCallArg,
    FunctionCallRequest,
    flight_pb2,
)
from airport_contracts.dispatch import FUNCTION_WIRE
from pyairport.backends.memory import memory_table
from pyairport.catalog import CatalogSchema, MutableCatalog
from pyairport.client import AirportClient
from pyairport.dispatch.table_refs import function_call_uri
from pyairport.server import AirportServer, ServerConfig
from pyairport.transactions import MemoryTransactionManager

from ..protocol.conftest import serving
from .conftest import OpenSession

pytestmark = pytest.mark.duckdb

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]})


def _decode(uri: str) -> tuple[str, pa.Table]:
    assert uri.startswith(FUNCTION_WIRE.call_uri_prefix)
    data = msgpack.unpackb(base64.b64decode(uri[len(FUNCTION_WIRE.call_uri_prefix) :]))
    return data["function_name"], pa.ipc.open_stream(data["data"]).read_all()


def test_a_function_call_uri_is_the_contracts() -> None:
    call = FunctionCall(
        "read_csv",
        [
            FunctionCallArg("/data/a.csv", pa.string()),
            FunctionCallArg(True, pa.bool_(), name="header"),
            FunctionCallArg(7, pa.int64()),
        ],
    )
    name, args = _decode(function_call_uri(call))
    assert name == "read_csv"
    assert args.to_pylist() == [{"arg_0": "/data/a.csv", "header": True, "arg_1": 7}]
    with pytest.raises(ValueError, match="argument 0 of f"):
        function_call_uri(FunctionCall("f", [FunctionCallArg("x", pa.int64())]))
    with pytest.raises(ValueError, match="a function name"):
        function_call_uri(FunctionCall("", []))


class _ParquetRef:
    """A memory table that lets DuckDB read its columns from a Parquet file of its rows,
    written when a scan is asked for; the rowid (DuckDB's UPDATE and DELETE, and its
    count(*), which reads the rowid pseudo-column and which DuckDB's Parquet reader cannot
    answer through a call) and time points stay with the server."""

    def __init__(self, folder: Path) -> None:
        self.inner = memory_table("t", ROWS.schema, rows=ROWS)
        self.folder = folder
        self.asked: list[FunctionCallRequest] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def function_calls(self, ctx: Context, request: FunctionCallRequest) -> list[FunctionCall]:
        self.asked.append(request)
        if not request.columns or "rowid" in request.columns or request.time_point is not None:
            return []
        file = self.folder / f"t-{len(self.asked)}.parquet"
        pq.write_table(self.inner.to_table().drop_columns(["rowid"]), file)
        return [FunctionCall("read_parquet", [FunctionCallArg(str(file), pa.string())])]


@pytest.fixture
def parquet_ref(tmp_path: Path) -> Iterator[tuple[_ParquetRef, str]]:
    table = _ParquetRef(tmp_path)
    with serving(MutableCatalog("", [CatalogSchema("s", tables=[table])])) as running:
        yield table, running.server.location


def test_duckdb_reads_a_referred_scan_itself(
    parquet_ref: tuple[_ParquetRef, str], open_session: OpenSession
) -> None:
    table, location = parquet_ref
    duck = open_session(location)
    assert duck.run("SELECT id, name FROM lake.s.t ORDER BY id") == [(1, "a"), (2, "b"), (3, "c")]
    assert duck.run("SELECT count(*) FROM lake.s.t WHERE name > 'a'") == [(2,)]
    assert table.asked and table.asked[0].columns == ["id", "name"]
    files = len(list(table.folder.glob("*.parquet")))
    assert files >= 2  # each scan was read from a file DuckDB was referred to
    # the rowids come from the server: DuckDB's DELETE finds them there and changes its rows
    duck.run("DELETE FROM lake.s.t WHERE id = 1")
    assert table.inner.to_table().column("id").to_pylist() == [2, 3]
    assert duck.run("SELECT count(*) FROM lake.s.t") == [(2,)]  # the server counts
    assert duck.run("SELECT id, name FROM lake.s.t ORDER BY id") == [(2, "b"), (3, "c")]
    assert len(list(table.folder.glob("*.parquet"))) > files


@pytest.mark.spark
def test_delta_scan_refs_read_a_spark_lake_as_duckdb_does(
    spark_backend: Any, tmp_path: Path, open_session: OpenSession
) -> None:
    from pyairport.backends.spark import SparkBackend

    from ..backend.test_lake import make_table

    spark = spark_backend.spark
    lake = tmp_path / "lake"
    for name in ("orders", "orders_by_region", "with_deletes", "tracked"):
        make_table(spark, lake, name)
    backend = SparkBackend(spark, lake, delta_scan_refs=True)
    server = AirportServer(backend.catalog, MemoryTransactionManager(), ServerConfig(port=0))
    server.start()
    try:
        tables = ("orders", "orders_by_region", "with_deletes", "tracked")
        locations = {t: _locations(server.location, "sales", t) for t in tables}
        assert all(uri.startswith("data:") for t in tables[:2] for uri in locations[t])
        # deletion vectors (DuckDB's delta_scan under Airport returns their rows) and
        # rowids (row tracking's, which only Spark reads) stay with the server
        assert not any(uri.startswith("data:") for uri in locations["with_deletes"])
        assert not any(uri.startswith("data:") for uri in locations["tracked"])
        duck = open_session(server.location)
        duck.run("LOAD delta")
        for table in ("orders", "orders_by_region", "with_deletes"):
            ident = f"delta.`{lake / 'sales' / table}`"
            spark_rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {ident}").collect())
            assert sorted(duck.run(f"SELECT * FROM lake.sales.{table}")) == spark_rows
        assert duck.run("SELECT count(*) FROM lake.sales.with_deletes") == [(90,)]
        # a time point stays with the server, which reads the version
        assert duck.run("SELECT count(*) FROM lake.sales.with_deletes AT (VERSION => 1)") == [
            (100,)
        ]
        assert duck.run("SELECT count(*) FROM lake.sales.tracked") == [(4,)]
    finally:
        server.stop(0)
        backend.close()


def _locations(location: str, schema: str, table: str) -> list[str]:
    descriptor = flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=[schema, table]
    ).SerializeToString()
    request = {
        "descriptor": descriptor,
        "parameters": {"column_ids": [0], "json_filters": json.dumps({"filters": []})},
    }
    with AirportClient(location) as client:
        (body,) = client.action("endpoints", msgpack.packb(request))
    uris = []
    for raw in msgpack.unpackb(body, raw=True):
        endpoint = flight_pb2.FlightEndpoint()
        endpoint.ParseFromString(raw)
        uris += [loc.uri for loc in endpoint.location]
    return uris
