"""The DuckDB tier: DuckDB with its Airport extension, attached to pyairport on memory and on
Spark (and to airport-go where a session compares answers), as a user at a SQL prompt.

Each test gets a DuckDB of its own and tables in the demo catalog's starting state: a fresh
memory catalog, or the run's Spark tables emptied again (Spark starts once per run)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyairport.server import AirportServer, ServerConfig
from pyairport.transactions import MemoryTransactionManager

from ..protocol.conftest import Running
from .session import Session

pytestmark = pytest.mark.duckdb

OpenSession = Callable[..., Session]


def _start(catalog: Any, token: str | None = None) -> Running:
    transactions = MemoryTransactionManager()
    config = ServerConfig(port=0, auth_token=token)
    return Running(AirportServer(catalog, transactions, config).start(), catalog, transactions)


@pytest.fixture(scope="session")
def spark_lake_server(spark_backend: Any) -> Iterator[Running]:
    """pyairport over the demo catalog as Delta tables, with transactions, as `pyairport serve
    --backend spark` runs it; shared by the run, emptied before each test that uses it."""
    from pyairport.demo import spark_demo_catalog

    running = _start(spark_demo_catalog(spark_backend))
    yield running
    running.client.close()
    running.server.stop(0)


@pytest.fixture(params=["memory", pytest.param("spark", marks=pytest.mark.spark)])
def lake(request: pytest.FixtureRequest, airport_extension_path: str) -> Iterator[Running]:
    """pyairport serving the demo catalog (memory or Spark) in its starting state."""
    if request.param == "memory":
        from pyairport.demo import memory_demo_catalog

        running = _start(memory_demo_catalog())
        try:
            yield running
        finally:
            running.client.close()
            running.server.stop(0)
        return
    running = request.getfixturevalue("spark_lake_server")
    running.reset()
    yield running


@pytest.fixture
def open_session(airport_extension_path: str) -> Iterator[OpenSession]:
    """open_session(location, token=None) -> a DuckDB attached to location as `lake`."""
    opened: list[Session] = []

    def open_one(location: str, token: str | None = None) -> Session:
        session = Session(airport_extension_path, location, token)
        opened.append(session)
        return session

    yield open_one
    for session in opened:
        session.close()


@pytest.fixture
def duck(lake: Running, open_session: OpenSession) -> Session:
    """A DuckDB attached to `lake` as `lake`."""
    return open_session(lake.server.location)
