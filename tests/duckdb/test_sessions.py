"""SQL sessions as a DuckDB user types them, against pyairport on memory and on Spark; each
answer is the one DuckDB gives for the same rows in a table of its own."""

from __future__ import annotations

import pytest

from .conftest import OpenSession
from .session import Session, SqlFailed

pytestmark = pytest.mark.duckdb

USERS = "lake.batch_schema.users"


def test_the_first_spark_session(duck: Session) -> None:
    """The session that found wrong rows on Spark: DuckDB's column ids leave the rowid out."""
    duck.run(f"INSERT INTO {USERS} SELECT i, 'n'||i, 'e'||i||'@x' FROM range(1, 100001) t(i)")
    assert duck.value(f"SELECT count(*) FROM {USERS}") == 100_000
    assert duck.value(f"SELECT count(*) FROM {USERS} WHERE id % 7 = 3") == 14_286
    assert duck.run(f"SELECT email FROM {USERS} WHERE id = 15") == [("e15@x",)]
    assert duck.run(f"SELECT name, id FROM {USERS} WHERE id = 15") == [("n15", 15)]
    assert duck.value(f"DELETE FROM {USERS} WHERE name LIKE 'n99%'") == 1_111
    assert duck.value(f"SELECT count(*) FROM {USERS} WHERE name LIKE 'n99%'") == 0
    duck.run("BEGIN")
    duck.run(f"INSERT INTO {USERS} VALUES (200001, 'in a transaction', 't@x')")
    duck.run("COMMIT")
    assert duck.run(f"SELECT name, email FROM {USERS} WHERE id = 200001") == [
        ("in a transaction", "t@x")
    ]
    assert duck.value(f"SELECT count(*) FROM {USERS}") == 100_000 - 1_111 + 1


def test_attach_shows_the_catalog_as_duckdb_tables(duck: Session) -> None:
    tables = duck.run(
        "SELECT schema_name, table_name, comment FROM duckdb_tables() WHERE database_name ="
        " 'lake' AND schema_name IN ('batch_schema', 'demo_schema', 'dml_schema') ORDER BY 1, 2"
    )
    assert [t[:2] for t in tables] == [
        ("batch_schema", "users"),
        ("demo_schema", "readonly"),
        ("dml_schema", "users"),
    ]
    assert tables[1][2] == "a table that accepts no DML"
    # the rowid field is DuckDB's rowid pseudo-column, not a column
    assert duck.run("SELECT column_name, column_type FROM (DESCRIBE lake.dml_schema.users)") == [
        ("id", "BIGINT"),
        ("name", "VARCHAR"),
        ("email", "VARCHAR"),
    ]
    assert duck.run("SELECT rowid, * FROM lake.demo_schema.readonly ORDER BY rowid") == [
        (1, 1, "Alice", "alice@example.com"),
        (2, 2, "Bob", "bob@example.com"),
        (3, 3, "Carol", "carol@example.com"),
    ]


ROWS = (
    "(1, 'Ann', 'ann@example.com'), (2, 'Bob', NULL), (3, NULL, 'c@x'), (4, 'Zoë', 'z@x'), "
    "(5, 'O''Brien', 'ob@x'), (6, '', ''), (NULL, 'no id', 'n@x'), "
    "(9223372036854775807, 'max', 'm@x'), (-9223372036854775808, 'min', 'mn@x'), "
    "(10, 'Ann', 'ann2@example.com'), (11, '日本', 'j@x'), (12, 'ann', 'lower@x')"
)

# Every kind of WHERE DuckDB pushes down (comparisons, IN, BETWEEN, IS [NOT] NULL, AND, OR,
# NOT, on integers and strings) and kinds it keeps to itself (LIKE, functions, arithmetic).
PREDICATES = (
    "id = 4",
    "id <> 4",
    "id < 3",
    "id <= 3",
    "id > 10",
    "id >= 10",
    "id IN (1, 5, 11, 99)",
    "id NOT IN (1, 5)",
    "id BETWEEN 2 AND 5",
    "id IS NULL",
    "id IS NOT NULL",
    "name IS NULL",
    "email IS NOT NULL AND name IS NOT NULL",
    "name = 'Ann'",
    "name = 'Zoë'",
    "name = 'O''Brien'",
    "name = ''",
    "name > 'Bob'",
    "name IN ('Ann', '日本')",
    "id = 9223372036854775807",
    "id = -9223372036854775808",
    "id > 2 AND name <> 'Zoë'",
    "id < 2 OR name = 'max'",
    "NOT (id > 3)",
    "NOT (id > 3 OR name IS NULL)",
    "name LIKE 'A%'",
    "name ILIKE 'ann'",
    "id % 2 = 0",
    "lower(name) = 'ann'",
    "length(email) > 3 AND id < 100",
    "id + 1 = 5",
    "starts_with(email, 'ann')",
    "email LIKE '%@example.com'",
)


@pytest.mark.parametrize("table", ["dml_schema.users", "batch_schema.users"])
def test_select_with_every_kind_of_filter(duck: Session, table: str) -> None:
    """Each WHERE gives the rows DuckDB gives for the same rows in a table of its own."""
    duck.run("CREATE TABLE mine (id BIGINT, name VARCHAR, email VARCHAR)")
    duck.run(f"INSERT INTO mine VALUES {ROWS}")
    duck.run(f"INSERT INTO lake.{table} (id, name, email) VALUES {ROWS}")
    # an INSERT whose id is null gets its rowid as id (the demo tables' rule): match it here
    new_id = duck.value(f"SELECT id FROM lake.{table} WHERE name = 'no id'")
    duck.run(f"UPDATE mine SET id = {new_id} WHERE name = 'no id'")
    for projection in ("*", "name", "email, id"):
        for where in PREDICATES:
            sql = f"SELECT {projection} FROM {{}} WHERE {where} ORDER BY ALL"
            mine = duck.run(sql.format("mine"))
            assert duck.run(sql.format(f"lake.{table}")) == mine, sql.format(f"lake.{table}")
    assert duck.run(f"SELECT * FROM lake.{table} ORDER BY ALL") == duck.run(
        "SELECT * FROM mine ORDER BY ALL"
    )


@pytest.mark.parametrize("table", ["dml_schema.users", "batch_schema.users"])
def test_insert_update_delete_returning(duck: Session, table: str) -> None:
    target = f"lake.{table}"
    assert duck.run(
        f"INSERT INTO {target} (id, name, email) VALUES (1, 'Ann', 'a@x'), (2, 'Bob', 'b@x') "
        "RETURNING id, name"
    ) == [(1, "Ann"), (2, "Bob")]
    # an INSERT without id gets the rowid as its id, and RETURNING shows it
    (made,) = duck.run(f"INSERT INTO {target} (name, email) VALUES ('Cy', 'c@x') RETURNING *")
    assert made[1:] == ("Cy", "c@x") and made[0] == duck.value(
        f"SELECT rowid FROM {target} WHERE name = 'Cy'"
    )
    assert sorted(
        duck.run(f"UPDATE {target} SET email = name || '@new' WHERE id <= 2 RETURNING id, email")
    ) == [(1, "Ann@new"), (2, "Bob@new")]
    assert duck.run(f"UPDATE {target} SET name = 'Bo' WHERE id = 2 RETURNING *") == [
        (2, "Bo", "Bob@new")
    ]
    assert duck.run(f"DELETE FROM {target} WHERE id = 1 RETURNING name, email") == [
        ("Ann", "Ann@new")
    ]
    assert duck.run(f"SELECT id, name, email FROM {target} ORDER BY name") == [
        (2, "Bo", "Bob@new"),
        (made[0], "Cy", "c@x"),
    ]
    # without RETURNING, DuckDB reports the count
    assert duck.value(f"UPDATE {target} SET name = upper(name) WHERE id IS NOT NULL") == 2
    assert duck.value(f"DELETE FROM {target}") == 2
    assert duck.value(f"SELECT count(*) FROM {target}") == 0


def test_a_million_rows_from_range(duck: Session) -> None:
    duck.run(
        f"INSERT INTO {USERS} SELECT i, 'user_' || i, 'user_' || i || '@example.com' "
        "FROM range(1, 1000001) t(i)"
    )
    assert duck.run(
        f"SELECT count(*), sum(id), count(DISTINCT rowid), min(name), max(email) FROM {USERS}"
    ) == [(1_000_000, 500_000_500_000, 1_000_000, "user_1", "user_9@example.com")]
    # an UPDATE over many rows, then the rows it changed
    assert (
        duck.value(f"UPDATE {USERS} SET email = 'user_' || id || '@updated.com' WHERE id > 900000")
        == 100_000
    )
    assert duck.value(f"SELECT count(*) FROM {USERS} WHERE email LIKE '%@updated.com'") == 100_000


def test_a_transaction_of_several_statements(duck: Session) -> None:
    duck.run("BEGIN")
    duck.run(f"INSERT INTO {USERS} VALUES (1, 'Ann', 'a@x'), (2, 'Bob', 'b@x'), (3, 'Cy', 'c@x')")
    duck.run(f"UPDATE {USERS} SET name = 'Bobby' WHERE id = 2")
    duck.run(f"DELETE FROM {USERS} WHERE id = 3")
    assert duck.run(f"SELECT id, name FROM {USERS} ORDER BY id") == [(1, "Ann"), (2, "Bobby")]
    duck.run("COMMIT")
    assert duck.run(f"SELECT id, name FROM {USERS} ORDER BY id") == [(1, "Ann"), (2, "Bobby")]


def test_a_transaction_whose_statement_fails(duck: Session) -> None:
    """The failed statement changes nothing and DuckDB refuses the rest of the transaction;
    DuckDB's ROLLBACK never reaches the server, so what succeeded before stays."""
    duck.run("BEGIN")
    duck.run(f"INSERT INTO {USERS} VALUES (1, 'Ann', 'a@x')")
    refused = duck.fails("INSERT INTO lake.demo_schema.readonly VALUES (9, 'No', 'n@x')")
    assert "table 'readonly' does not support INSERT operations" in refused
    later = duck.fails(f"INSERT INTO {USERS} VALUES (2, 'Bob', 'b@x')")
    assert "Current transaction is aborted (please ROLLBACK)" in later
    duck.run("ROLLBACK")
    assert duck.run(f"SELECT id, name FROM {USERS}") == [(1, "Ann")]
    assert duck.value("SELECT count(*) FROM lake.demo_schema.readonly") == 3


def test_bad_input_from_duckdb_changes_nothing(duck: Session) -> None:
    duck.run(f"INSERT INTO {USERS} VALUES (1, 'Ann', 'a@x')")
    error = duck.fails(f"INSERT INTO {USERS} (id, name) VALUES ('not a number', 'x')")
    assert "Could not convert string 'not a number' to INT64" in error
    error = duck.fails(f"UPDATE {USERS} SET id = 'x' || name")
    assert "Could not convert string 'xAnn' to INT64" in error
    error = duck.fails(f"INSERT INTO {USERS} (nope) VALUES (1)")
    assert 'does not have a column with name "nope"' in error
    assert duck.run(f"SELECT * FROM {USERS}") == [(1, "Ann", "a@x")]


def test_the_read_only_table_refuses_dml(duck: Session) -> None:
    table = "lake.demo_schema.readonly"
    for sql, operation in (
        (f"INSERT INTO {table} VALUES (4, 'Dan', 'd@x')", "INSERT"),
        (f"UPDATE {table} SET name = 'x' WHERE id = 1", "UPDATE"),
        (f"DELETE FROM {table} WHERE id = 1", "DELETE"),
    ):
        error = duck.fails(sql)
        assert f"table 'readonly' does not support {operation} operations" in error, sql
    assert duck.run(f"SELECT id, name FROM {table} ORDER BY id") == [
        (1, "Alice"),
        (2, "Bob"),
        (3, "Carol"),
    ]


def test_authentication_with_a_secret(open_session: OpenSession) -> None:
    from pyairport.demo import memory_demo_catalog

    from .conftest import _start

    running = _start(memory_demo_catalog(), token="s3cret")
    try:
        location = running.server.location
        with pytest.raises(SqlFailed, match="unauthenticated"):
            open_session(location, token="wrong")
        with pytest.raises(SqlFailed, match="authorization header must use Bearer scheme"):
            open_session(location)
        duck = open_session(location, token="s3cret")
        assert duck.value("SELECT count(*) FROM lake.demo_schema.readonly") == 3
        duck.run(f"INSERT INTO {USERS} VALUES (1, 'Ann', 'a@x')")
        assert duck.run(f"SELECT name FROM {USERS}") == [("Ann",)]
    finally:
        running.client.close()
        running.server.stop(0)
