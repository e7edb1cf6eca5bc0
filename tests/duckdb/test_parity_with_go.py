"""The same DuckDB sessions against airport-go and pyairport (memory and Spark): every
statement's rows, or DuckDB's error text, compared. airport-go's server is the interop suite's
(tests/interop/go), serving the same demo catalog."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ..interop.gobuild import GoUnavailable, binaries, go_server
from ..protocol.conftest import Running
from .conftest import OpenSession
from .session import Session

pytestmark = pytest.mark.duckdb

Transcript = list[tuple[str, Any]]

SESSIONS: dict[str, tuple[str, ...]] = {
    "the first Spark session": (
        "INSERT INTO lake.batch_schema.users SELECT i, 'n'||i, 'e'||i||'@x' FROM range(1, 20001) t(i)",
        "SELECT count(*) FROM lake.batch_schema.users WHERE id % 7 = 3",
        "SELECT email FROM lake.batch_schema.users WHERE id = 15",
        "SELECT name, id FROM lake.batch_schema.users WHERE id IN (15, 16) ORDER BY id",
        "DELETE FROM lake.batch_schema.users WHERE name LIKE 'n99%'",
        "BEGIN",
        "INSERT INTO lake.batch_schema.users VALUES (30001, 'in a transaction', 't@x')",
        "COMMIT",
        "SELECT name, email FROM lake.batch_schema.users WHERE id = 30001",
        "SELECT count(*), sum(id) FROM lake.batch_schema.users",
    ),
    "DML with RETURNING, legacy and batch": tuple(
        statement.format(table=table)
        for table in ("lake.dml_schema.users", "lake.batch_schema.users")
        for statement in (
            "INSERT INTO {table} (id, name, email) VALUES (1, 'Ann', 'a@x'), (2, 'Bob', 'b@x') "
            "RETURNING id, name",
            "INSERT INTO {table} (id, name, email) VALUES (3, 'Cy', NULL) RETURNING *",
            "UPDATE {table} SET email = name || '@new' WHERE id <= 2 RETURNING id, email",
            "UPDATE {table} SET name = 'Bo' WHERE id = 2",
            "DELETE FROM {table} WHERE id = 1 RETURNING name",
            "SELECT id, name, email FROM {table} ORDER BY id",
            "DELETE FROM {table} WHERE id > 0",
            "SELECT count(*) FROM {table}",
        )
    ),
    "a transaction with a failed statement": (
        "BEGIN",
        "INSERT INTO lake.dml_schema.users VALUES (1, 'Ann', 'a@x')",
        "INSERT INTO lake.demo_schema.readonly VALUES (9, 'No', 'n@x')",
        "INSERT INTO lake.dml_schema.users VALUES (2, 'Bob', 'b@x')",
        "ROLLBACK",
        "SELECT id, name FROM lake.dml_schema.users ORDER BY id",
        "UPDATE lake.demo_schema.readonly SET name = 'x'",
        "DELETE FROM lake.demo_schema.readonly",
        "SELECT * FROM lake.demo_schema.readonly ORDER BY id",
    ),
    "functions of each kind": (
        "SELECT lake.demo_schema.email_domain(email) FROM lake.demo_schema.readonly",
        "SELECT lake.demo_schema.email_domain('x@d' || (i % 3)) AS d, count(*)"
        " FROM range(100000) t(i) GROUP BY d",
        "SELECT n FROM lake.demo_schema.series(1, 70000) WHERE n % 10000 = 0",
        "SELECT count(*), sum(n) FROM lake.demo_schema.series(-3, 3)",
        "SELECT * FROM lake.demo_schema.shouted((SELECT name, email FROM lake.demo_schema.readonly))",
        "SELECT count(*) FROM lake.demo_schema.shouted((SELECT 'a' || i FROM range(5000) t(i)))",
        "SELECT * FROM lake.demo_schema.series(1, 20000000)",
        "SELECT * FROM lake.demo_schema.series(NULL, 3)",
    ),
    "scans with filters": (
        "INSERT INTO lake.dml_schema.users SELECT i, 'n' || (i % 10), "
        "CASE WHEN i % 3 = 0 THEN NULL ELSE 'e' || i END FROM range(1, 1001) t(i)",
        "SELECT count(*) FROM lake.dml_schema.users WHERE email IS NULL",
        "SELECT id FROM lake.dml_schema.users WHERE id BETWEEN 10 AND 14 ORDER BY id",
        "SELECT count(*) FROM lake.dml_schema.users WHERE name IN ('n1', 'n2') AND id > 500",
        "SELECT count(*) FROM lake.dml_schema.users WHERE NOT (id < 900) OR name = 'n0'",
        "SELECT email FROM lake.dml_schema.users WHERE id = 1000",
    ),
}


# DuckDB names the step of its own that met a server's error ("Begin schema" when the status
# arrived while it was sending its schema): which step that is depends on thread timing on
# the client, not on the server's answer, so the step's name is left out of the comparison.
_CLIENT_STEP = re.compile(r"(<server>[^:]*: )[A-Za-z][A-Za-z ]* (gRPC returned)")


def transcript(session: Session, statements: tuple[str, ...]) -> Transcript:
    """Each statement's sorted rows, or DuckDB's error text with the server's address and
    DuckDB's own step name left out."""
    seen: Transcript = []
    for sql in statements:
        try:
            cursor = session.connection.execute(sql)
            rows = cursor.fetchall() if cursor.description else []
            seen.append((sql, sorted(rows, key=repr)))
        except Exception as error:  # DuckDB's errors: their text is what is compared
            text = str(error).replace(session.location, "<server>")
            seen.append((sql, "error: " + _CLIENT_STEP.sub(r"\1\2", text)))
    return seen


@pytest.fixture(scope="session")
def go_built() -> None:
    try:
        binaries()
    except GoUnavailable as missing:
        pytest.skip(f"airport-go parity skipped: {missing}")


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_same_answers_as_airport_go(
    name: str, lake: Running, open_session: OpenSession, go_built: None
) -> None:
    statements = SESSIONS[name]
    with go_server() as go_location:
        expected = transcript(open_session(go_location), statements)
    got = transcript(open_session(lake.server.location), statements)
    for (sql, theirs), (_, ours) in zip(expected, got, strict=True):
        assert ours == theirs, f"{sql}\n  airport-go: {theirs!r}\n  pyairport:  {ours!r}"
