"""A server of several catalogs from DuckDB: `airport_databases()` lists them (deviation
databases_listed)."""

from __future__ import annotations

import pytest

from pyairport.demo import memory_demo_catalog
from pyairport.server import AirportServer, ServerConfig

from . import extension as airport_extension

pytestmark = pytest.mark.duckdb


def test_airport_databases_lists_the_catalogs(airport_extension_path: str) -> None:
    server = AirportServer(memory_demo_catalog("sales"), None, ServerConfig(port=0)).start()
    server.add_catalog(memory_demo_catalog("hr"), None)
    try:
        db = airport_extension.connect(airport_extension_path)
        location = server.location
        assert db.execute(
            f"SELECT name FROM airport_databases('{location}') ORDER BY 1"
        ).fetchall() == [
            ("hr",),
            ("sales",),
        ]
        server.remove_catalog("hr")
        assert db.execute(f"SELECT name FROM airport_databases('{location}')").fetchall() == [
            ("sales",)
        ]
    finally:
        server.stop(0)


def test_a_server_of_one_catalog_lists_it(airport_extension_path: str) -> None:
    server = AirportServer(memory_demo_catalog(), None, ServerConfig(port=0)).start()
    try:
        db = airport_extension.connect(airport_extension_path)
        rows = db.execute(f"SELECT * FROM airport_databases('{server.location}')").fetchall()
        assert rows == [("",)]
    finally:
        server.stop(0)
