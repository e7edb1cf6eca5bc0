"""A DuckDB session against `serve --metrics-port`: each statement moves the counters it
should, by what DuckDB did — an INSERT of N rows adds N to the table's written rows, a
SELECT adds the rows it read, an UPDATE and a DELETE what they changed, a refused INSERT
a failure and no rows — and /metrics names no identity and no token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyairport.access.identities import hash_token
from pyairport.server import AirportServer

from ..metrics import Scrape, metrics_server
from .conftest import OpenSession

pytestmark = pytest.mark.duckdb

TOKEN = "duck-token-51c0e2"
USERS = {"catalog": "", "schema": "dml_schema", "table": "users"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[AirportServer]:
    with metrics_server(tmp_path, "quackers", TOKEN) as running:
        yield running


def test_a_duckdb_session_moves_the_counters_by_what_it_did(
    server: AirportServer, open_session: OpenSession
) -> None:
    duck = open_session(server.location, TOKEN)
    steps: list[tuple[str, dict[tuple[str, Any], float]]] = []

    def step(sql: str, fails: bool = False) -> dict[str, float]:
        before = Scrape(server)
        if fails:
            duck.fails(sql)
        else:
            duck.run(sql)
        after = Scrape(server)

        def moved(name: str, **labels: str) -> float:
            return after.get(name, **labels) - before.get(name, **labels)

        steps.append((sql, after.samples))
        return {
            "inserted": moved("pyairport_rows_written_total", **USERS, operation="insert"),
            "sent": moved("pyairport_bytes_written_total", **USERS, operation="insert"),
            "updated": moved("pyairport_rows_written_total", **USERS, operation="update"),
            "deleted": moved("pyairport_rows_written_total", **USERS, operation="delete"),
            "read": moved("pyairport_rows_read_total", **USERS),
            "committed": sum(
                moved("pyairport_statements_total", catalog="", operation=op, outcome="committed")
                for op in ("insert", "update", "delete")
            ),
            "failed": sum(
                moved("pyairport_statements_total", catalog="", operation=op, outcome="failed")
                for op in ("insert", "update", "delete")
            ),
        }

    inserted = step(
        "INSERT INTO lake.dml_schema.users"
        " SELECT i, 'name ' || i, 'e' || i || '@x' FROM range(1, 25001) t(i)"
    )
    assert inserted.pop("sent") > 25_000 * 8  # the ids alone, as DuckDB sent them in Arrow
    assert inserted == {
        "inserted": 25_000, "updated": 0, "deleted": 0, "read": 0, "committed": 1, "failed": 0
    }  # fmt: skip
    counted = step("SELECT count(*) FROM lake.dml_schema.users")
    assert counted["read"] == 25_000 and counted["committed"] == 0
    updated = step("UPDATE lake.dml_schema.users SET name = 'x' WHERE id <= 300")
    assert (updated["updated"], updated["committed"]) == (300, 1)
    assert updated["read"] >= 300  # DuckDB reads the rows it then updates
    deleted = step("DELETE FROM lake.dml_schema.users WHERE id > 24900")
    assert (deleted["deleted"], deleted["committed"]) == (100, 1)
    failed = step("INSERT INTO lake.demo_schema.readonly VALUES (4, 'Dan', 'dan@x')", True)
    assert (failed["inserted"], failed["failed"], failed["committed"]) == (0, 1, 0)
    final = Scrape(server)
    for secret in ("quackers", TOKEN, hash_token(TOKEN)):
        assert secret not in final.text
