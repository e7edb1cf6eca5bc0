"""TPC-H at scale factor 0.1 from DuckDB through pyairport (issue #45): the 22 queries on a lake
of plain Delta tables delta-rs wrote, and on row-tracked tables with deletion vectors Spark
wrote, before and after the refresh functions (INSERT of new orders and their lineitems, DELETE
by `IN (subquery)`, an UPDATE) — every answer equal to DuckDB's own over its own copy and to the
reference answers DuckDB ships. bench/tpch.py runs the same at SF 1 and 3, timed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyairport.server import AirportServer, ServerConfig
from pyairport.server.data_plane import AUTO
from pyairport.transactions import MemoryTransactionManager

from .. import tpch
from . import extension as airport_extension

pytestmark = [pytest.mark.duckdb, pytest.mark.spark]

SCALE = 0.1


@pytest.fixture(scope="module")
def lakes(
    spark_backend: Any, tmp_path_factory: pytest.TempPathFactory, airport_extension_path: str
) -> Path:
    """root/plain (delta-rs) and root/tracked (Spark: row tracking, deletion vectors)."""
    root = tmp_path_factory.mktemp("tpch")
    connection = airport_extension.connect(airport_extension_path)
    tpch.generate(connection, SCALE)
    tpch.write_plain(connection, root / "plain")
    connection.close()
    tpch.write_tracked(spark_backend.spark, root / "plain", root / "tracked")
    return root


def _duckdb(extension: str, location: str) -> Any:
    """A DuckDB with its own TPC-H copy (memory.main) and the lake attached as `lake`."""
    connection = airport_extension.connect(extension)
    tpch.generate(connection, SCALE)
    connection.execute(f"ATTACH '' AS lake (TYPE airport, LOCATION '{location}')")
    return connection


def _serving(
    spark: Any, warehouse: Path, config: ServerConfig | None = None
) -> Iterator[AirportServer]:
    from pyairport.backends.spark import SparkBackend

    backend = SparkBackend(spark, warehouse)
    server = AirportServer(
        backend.catalog, MemoryTransactionManager(), config or ServerConfig(port=0)
    ).start()
    try:
        yield server
    finally:
        server.stop(0)
        backend.close()


@pytest.fixture(params=["port", "data socket"])
def plain(
    request: pytest.FixtureRequest, spark_backend: Any, lakes: Path
) -> Iterator[AirportServer]:
    """The plain lake's server; with a data socket, DuckDB reads every scan there."""
    config = ServerConfig(port=0, data_socket=AUTO if request.param == "data socket" else None)
    yield from _serving(spark_backend.spark, lakes / "plain", config)


@pytest.fixture
def tracked(spark_backend: Any, lakes: Path) -> Iterator[str]:
    for server in _serving(spark_backend.spark, lakes / "tracked"):
        yield server.location


def _wrong_answers(connection: Any, with_reference: bool) -> list[str]:
    wrong = []
    for number, query in tpch.queries(connection):
        try:
            got = tpch.run(connection, f"lake.{tpch.SCHEMA}", query)
        except Exception as exc:  # noqa: BLE001 - reported with the others
            wrong.append(f"q{number}: {str(exc).splitlines()[0]}")
            continue
        own = tpch.run(connection, "memory.main", query)
        problem = tpch.differences(got, own)
        if not problem and with_reference:
            reference = tpch.reference(connection, SCALE, number)
            problem = (
                tpch.differences_from_reference(got, reference) if reference else "no reference"
            )
        if problem:
            wrong.append(f"q{number}: {problem}")
    return wrong


def test_the_22_queries_on_plain_tables(plain: AirportServer, airport_extension_path: str) -> None:
    connection = _duckdb(airport_extension_path, plain.location)
    try:
        assert _wrong_answers(connection, with_reference=True) == []
    finally:
        connection.close()
    if plain.data_plane is not None:
        assert plain.data_plane.scans >= 22


def test_row_tracked_tables_through_the_refresh_functions(
    tracked: str, airport_extension_path: str
) -> None:
    connection = _duckdb(airport_extension_path, tracked)
    try:
        assert _wrong_answers(connection, with_reference=True) == []
        tpch.refresh(connection, f"lake.{tpch.SCHEMA}")
        tpch.refresh(connection, "memory.main")
        for totals in tpch.TOTALS:
            lake = tpch.run(connection, f"lake.{tpch.SCHEMA}", totals)
            own = tpch.run(connection, "memory.main", totals)
            assert tpch.differences(lake, own) == "", totals
        assert _wrong_answers(connection, with_reference=False) == []
    finally:
        connection.close()
