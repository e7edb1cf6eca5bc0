"""A team's server from DuckDB (issue #39): two catalogs attached at once, read and written
side by side, with DuckDB 1.4 (which names the catalog only in some bodies, and in the
transaction it begins) and 1.5 (which sends the airport-catalog header), on memory and on
Delta; identities from a tokens file, a policy, and DuckDB's errors when an identity may not."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pyairport.access.policy import Policy
from pyairport.demo import memory_demo_catalog
from pyairport.server import AirportServer, ServerConfig
from pyairport.transactions import MemoryTransactionManager

from ..team import Team, make_team
from .sqllogic.clients import CLIENTS
from .test_airport_suite import _client, run_suite_file

pytestmark = pytest.mark.duckdb


def _secret(token: str) -> str:
    return f"""statement ok
CREATE SECRET team_token (TYPE airport, auth_token '{token}', scope '${{AIRPORT_TEST_SERVER}}');

"""


HEAD = """require airport

require-env AIRPORT_TEST_SERVER

"""

ATTACH_BOTH = """statement ok
ATTACH 'sales' AS sales (TYPE airport, LOCATION '${AIRPORT_TEST_SERVER}');

statement ok
ATTACH 'hr' AS hr (TYPE airport, LOCATION '${AIRPORT_TEST_SERVER}');

"""

SIDE_BY_SIDE = """statement ok
INSERT INTO sales.dml_schema.users VALUES (1, 'Ann', 'ann@sales');

statement ok
INSERT INTO hr.dml_schema.users VALUES (1, 'Bob', 'bob@hr'), (2, 'Cy', 'cy@hr');

query TT
SELECT s.name, h.name FROM sales.dml_schema.users s JOIN hr.dml_schema.users h USING (id);
----
Ann	Bob

statement ok
UPDATE hr.dml_schema.users SET name = 'Cyd' WHERE id = 2;

statement ok
DELETE FROM sales.dml_schema.users WHERE id = 1;

query I
SELECT count(*) FROM sales.dml_schema.users;
----
0

query IT
SELECT id, name FROM hr.dml_schema.users ORDER BY id;
----
1	Bob
2	Cyd

statement ok
CREATE TABLE hr.dml_schema.made (x INTEGER);

statement ok
INSERT INTO hr.dml_schema.made VALUES (42);

query I
SELECT x FROM hr.dml_schema.made;
----
42

statement ok
DROP TABLE hr.dml_schema.made;

query T
SELECT name FROM airport_databases('${AIRPORT_TEST_SERVER}') ORDER BY name;
----
hr
sales

"""

READER = """statement ok
ATTACH 'sales' AS sales (TYPE airport, LOCATION '${AIRPORT_TEST_SERVER}');

query I
SELECT count(*) FROM sales.demo_schema.readonly;
----
3

statement error
INSERT INTO sales.dml_schema.users VALUES (9, 'Eve', 'eve@x');
----
permission denied: "reader" has no write grant on "sales"."dml_schema"

statement error
CREATE TABLE sales.dml_schema.made (x INTEGER);
----
permission denied: "reader" has no ddl grant on "sales"."dml_schema"

query T
SELECT name FROM airport_databases('${AIRPORT_TEST_SERVER}');
----
sales

"""

HR_REFUSED = {
    # DuckDB 1.4 lists the schemas as it attaches
    "duckdb-1.4": """statement error
ATTACH 'hr' AS hr (TYPE airport, LOCATION '${AIRPORT_TEST_SERVER}');
----
catalog authorization failed: "reader" has no grant on catalog "hr"

""",
    # DuckDB 1.5 when it first reads the catalog
    "duckdb-1.5": """statement ok
ATTACH 'hr' AS hr (TYPE airport, LOCATION '${AIRPORT_TEST_SERVER}');

statement error
SELECT count(*) FROM hr.dml_schema.users;
----
catalog authorization failed: "reader" has no grant on catalog "hr"

""",
}

NO_TOKEN = {
    "duckdb-1.4": """statement error
ATTACH 'sales' AS sales (TYPE airport, LOCATION '${AIRPORT_TEST_SERVER}');
----
authorization header must use Bearer scheme

""",
    "duckdb-1.5": """statement ok
ATTACH 'sales' AS sales (TYPE airport, LOCATION '${AIRPORT_TEST_SERVER}');

statement error
SELECT count(*) FROM sales.demo_schema.readonly;
----
authorization header must use Bearer scheme

""",
}


def _memory_catalogs() -> list[Any]:
    return [memory_demo_catalog("sales"), memory_demo_catalog("hr")]


MakeCatalogs = Callable[[], list[Any]]


@pytest.fixture(params=["memory", pytest.param("spark", marks=pytest.mark.spark)])
def make_catalogs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeCatalogs]:
    """Fresh catalogs sales and hr, each the demo tables: in memory, or the Delta tables of a
    lake folder each (one Spark session, as `serve --add-catalog` runs them)."""
    if request.param == "memory":
        yield _memory_catalogs
        return
    from pyairport.backends.spark import SparkBackend
    from pyairport.demo import spark_demo_catalog

    session = request.getfixturevalue("spark_backend").spark
    backends: list[Any] = []

    def make() -> list[Any]:
        made = []
        for name in ("sales", "hr"):
            backend = SparkBackend(session, tmp_path / f"{name}-{len(backends)}")
            backends.append(backend)
            catalog = spark_demo_catalog(backend)
            catalog.rename(name)
            made.append(catalog)
        return made

    yield make
    for backend in backends:
        backend.close()


def _serve(catalogs: list[Any], team: Team | None = None) -> AirportServer:
    access: dict[str, Any] = {}
    if team is not None:
        access = {
            "authenticator": team.authenticator(),
            "policy": Policy.from_file(team.policy_file),
        }
    server = AirportServer(None, None, ServerConfig(port=0), **access)
    for catalog in catalogs:
        server.add_catalog(catalog, MemoryTransactionManager())
    return server.start()


def _run(
    script: str,
    make: MakeCatalogs,
    folder: Path,
    team: Team | None = None,
    per_client: dict[str, str] | None = None,
) -> None:
    """script (then the client's own part of per_client) with DuckDB 1.4 and with 1.5, each
    against a fresh server."""
    for client in CLIENTS:
        runnable = _client(client)
        file = folder / f"{runnable.name}.test"
        file.write_text(script + (per_client or {}).get(runnable.name, ""), encoding="utf-8")
        server = _serve(make(), team)
        try:
            result = run_suite_file(runnable, file, server.location)
        finally:
            server.stop(0)
        assert result["failures"] == [], runnable.name


def test_two_catalogs_attached_at_once_are_read_and_written_side_by_side(
    make_catalogs: MakeCatalogs, tmp_path: Path
) -> None:
    _run(HEAD + ATTACH_BOTH + SIDE_BY_SIDE, make_catalogs, tmp_path)


def test_identities_and_grants_from_duckdb(tmp_path: Path) -> None:
    team = make_team(tmp_path)
    admin = HEAD + _secret(team.tokens["admin"]) + ATTACH_BOTH + SIDE_BY_SIDE
    _run(admin, _memory_catalogs, tmp_path, team)
    reader = HEAD + _secret(team.tokens["reader"]) + READER
    _run(reader, _memory_catalogs, tmp_path, team, HR_REFUSED)
    _run(HEAD, _memory_catalogs, tmp_path, team, NO_TOKEN)
