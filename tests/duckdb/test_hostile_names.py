"""A developer with one schema, at DuckDB's SQL prompt (issue #44): hostile names typed as
quoted identifiers, the lake functions aimed at a schema the developer may not read, a table
named to break everyone's listing — over a Spark lake plain Spark wrote, with the file system
around the warehouse unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..team import Lake, spark_team_lake
from .conftest import OpenSession

pytestmark = [pytest.mark.duckdb, pytest.mark.spark]


@pytest.fixture
def lake(spark_backend: Any, tmp_path: Path, airport_extension_path: str) -> Iterator[Lake]:
    with spark_team_lake(spark_backend.spark, tmp_path) as made:
        yield made


@pytest.mark.parametrize(
    ("statement", "refusal"),
    [
        ('CREATE SCHEMA lake."..";', 'invalid schema name "..": .. names a folder'),
        ('CREATE SCHEMA lake."/tmp/pyairport-escape";', "holds the path separator /"),
        ('CREATE TABLE lake.devs."../other/evil" (x INTEGER);', "holds the path separator /"),
        ('CREATE TABLE lake.devs."new\nline" (x INTEGER);', "control character U+000A"),
        ('CREATE TABLE lake.devs.t ("a\tb" INTEGER);', 'invalid column name "a\\tb"'),
        ('ALTER TABLE lake.devs.seed RENAME TO "../other/moved";', "holds the path separator /"),
        ("CREATE TABLE lake.other.evil (x INTEGER);", 'Schema with name "other" not found'),
        (
            "SELECT * FROM lake.delta.history('hr.salaries');",
            'permission denied: "dev" has no read grant on ""."hr"',
        ),
        (
            "SELECT * FROM lake.delta.table_changes('hr.salaries', 0);",
            'permission denied: "dev" has no read grant on ""."hr"',
        ),
        (
            """SELECT * FROM lake.delta.history('"hr"."salaries"');""",
            'permission denied: "dev" has no read grant on ""."hr"',
        ),
        (  # a name in another case finds only a schema the caller may read (names_any_case)
            "SELECT * FROM lake.delta.history('HR.salaries');",
            'permission denied: "dev" has no read grant on ""."HR"',
        ),
        (
            """SELECT * FROM lake.delta.history('"devs.seed');""",
            "history: name the table as schema.table",
        ),
    ],
)
def test_a_developer_types_hostile_sql(
    lake: Lake, open_session: OpenSession, statement: str, refusal: str
) -> None:
    before = lake.files()
    duck = open_session(lake.server.location, "dev-token")
    error = duck.fails(statement)
    assert refusal in error, error
    for leak in ("Traceback", "org.apache", str(lake.root), "Errno"):
        assert leak not in error
    assert lake.files() == before
    # the catalog still lists for everyone, the developer's own schema still works
    assert duck.value("SELECT count(*) FROM lake.devs.seed") == 2
    admin = open_session(lake.server.location, "admin-token")
    assert admin.value("SELECT count(*) FROM lake.hr.salaries") == 1


def test_names_a_user_means_are_kept(lake: Lake, open_session: OpenSession) -> None:
    duck = open_session(lake.server.location, "dev-token")
    duck.run(
        'CREATE TABLE lake.devs."Q1 sales; (draft)"'
        ' ("unit price" DOUBLE, "a=b" INTEGER, "net ""EUR"", (x)" DECIMAL(12, 2))'
    )
    duck.run('INSERT INTO lake.devs."Q1 sales; (draft)" VALUES (9.5, 1, 1234.56)')
    # the DECIMAL is read through delta-rs' query (direct.py), its name quoted there
    assert duck.run(
        'SELECT "unit price", "a=b", "net ""EUR"", (x)"::VARCHAR FROM lake.devs."Q1 sales; (draft)"'
    ) == [(9.5, 1, "1234.56")]
    again = open_session(lake.server.location, "dev-token")
    names = again.run("SELECT table_name FROM duckdb_tables() WHERE database_name = 'lake'")
    assert ("Q1 sales; (draft)",) in names
    for name in ("pub.notes", "PUB.Notes"):  # a schema dev may read, in any case
        assert again.value(f"SELECT count(*) FROM lake.delta.table_changes('{name}', 0)") == 2
    # a name that holds a dot, quoted in the lake functions' argument as in SQL
    admin = open_session(lake.server.location, "admin-token")
    admin.run('CREATE SCHEMA lake."eu.hr"')
    admin.run('CREATE TABLE lake."eu.hr"."q.1" (x INTEGER)')
    admin.run('INSERT INTO lake."eu.hr"."q.1" VALUES (1)')
    assert admin.value("""SELECT count(*) FROM lake.delta.history('"eu.hr"."q.1"')""") == 2
    assert 'permission denied: "dev" has no read grant on ""."eu.hr"' in again.fails(
        """SELECT * FROM lake.delta.history('"eu.hr".q.1')"""
    )


def test_constraints_and_defaults_typed_at_duckdb_mean_what_they_say(
    lake: Lake, open_session: OpenSession
) -> None:
    """DuckDB sends a CHECK or DEFAULT in its own dialect, which Spark reads otherwise
    ('a''s' as "as", a backslash as an escape, "my col" as a string, LIKE as `~~`): each is
    kept with the meaning typed, and the hostile forms are refused with nothing made."""
    duck = open_session(lake.server.location, "dev-token")
    before = lake.files()
    for check, refusal in {
        "regexp_matches(s, '^(a+)+$')": "'regexp_matches' is not allowed in one",
        "length(repeat(s, 100)) > 0": "'repeat' is not allowed in one",
        "s LIKE '%a%b%'": "a LIKE pattern Spark would match by backtracking",
        "s GLOB 'a*'": "Syntax error at or near '~'",  # DuckDB sends ~~~, Spark has no GLOB
    }.items():
        error = duck.fails(f"CREATE TABLE lake.devs.c (s VARCHAR CHECK ({check}))")
        assert refusal in error, error
    assert lake.files() == before
    duck.run(
        'CREATE TABLE lake.devs.c ("my col" INTEGER CHECK ("my col" > 0), s VARCHAR'
        " CHECK (s <> 'a''s' AND s <> 'a\\b' AND s LIKE 'a%' AND s NOT ILIKE '%Z'"
        " AND s NOT LIKE '%\\'))"  # no escape in DuckDB's LIKE: ends in a backslash
    )
    duck.run("INSERT INTO lake.devs.c VALUES (1, 'as'), (2, 'a\\c')")
    for row in ("(0, 'ab')", "(3, 'a''s')", "(3, 'a\\b')", "(3, 'ba')", "(3, 'az')", "(3, 'a\\')"):
        assert "CHECK constraint" in duck.fails(f"INSERT INTO lake.devs.c VALUES {row}"), row
    duck.run("ALTER TABLE lake.devs.c ALTER COLUMN s SET DEFAULT 'a''s\\n'")
    duck.run('INSERT INTO lake.devs.c ("my col") VALUES (5)')
    rows = duck.run('SELECT "my col", s FROM lake.devs.c ORDER BY 1')
    assert rows == [(1, "as"), (2, "a\\c"), (5, "a's\\n")]
