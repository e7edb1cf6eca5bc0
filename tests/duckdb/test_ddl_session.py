"""DDL as a DuckDB user types it (protocol §5), against pyairport on memory and on Delta: what
DuckDB creates and alters is then read, changed and dropped like any other table."""

from __future__ import annotations

import pytest

from .session import Session

pytestmark = pytest.mark.duckdb


def test_the_ddl_session(duck: Session) -> None:
    duck.run("CREATE SCHEMA lake.sales")
    duck.run("CREATE TABLE lake.sales.orders (id BIGINT NOT NULL, item VARCHAR, qty INTEGER)")
    assert duck.run(
        "INSERT INTO lake.sales.orders VALUES (1, 'pen', 2), (2, 'ink', 5) RETURNING id, item"
    ) == [(1, "pen"), (2, "ink")]
    duck.run("ALTER TABLE lake.sales.orders ADD COLUMN price DOUBLE")
    assert duck.run("SELECT id, item, qty, price FROM lake.sales.orders ORDER BY id") == [
        (1, "pen", 2, None),
        (2, "ink", 5, None),
    ]
    assert duck.value("UPDATE lake.sales.orders SET price = 1.5 WHERE id = 2") == 1
    duck.run("ALTER TABLE lake.sales.orders RENAME COLUMN item TO product")
    assert duck.run("SELECT product, price FROM lake.sales.orders WHERE id = 2") == [("ink", 1.5)]
    duck.run("DROP TABLE lake.sales.orders")
    duck.run("DROP SCHEMA lake.sales")
    assert (
        duck.value(
            "SELECT count(*) FROM duckdb_schemas() WHERE database_name = 'lake'"
            " AND schema_name = 'sales'"
        )
        == 0
    )


def test_create_table_as_select(duck: Session) -> None:
    duck.run("CREATE SCHEMA lake.s")
    duck.run("CREATE TABLE lake.s.squares AS SELECT i AS n, i * i AS sq FROM range(1, 6) t(i)")
    assert duck.run("SELECT n, sq FROM lake.s.squares ORDER BY n") == [
        (1, 1), (2, 4), (3, 9), (4, 16), (5, 25)
    ]  # fmt: skip
    duck.run("DELETE FROM lake.s.squares WHERE n > 3")
    assert duck.value("SELECT sum(sq) FROM lake.s.squares") == 14
    duck.run("DROP TABLE lake.s.squares")
    duck.run("DROP SCHEMA lake.s")


def test_a_name_in_another_case_is_the_same_column(duck: Session) -> None:
    """DuckDB and Delta take a column name whatever its case: ADD COLUMN "ID" beside id, or a
    rename onto it, is refused on either backend (on memory it made a second column DuckDB
    showed as ID_1, whose queries by "ID" read id)."""
    duck.run("CREATE SCHEMA lake.c")
    duck.run("CREATE TABLE lake.c.t (id INTEGER, name VARCHAR)")
    assert 'column "ID" already exists' in duck.fails('ALTER TABLE lake.c.t ADD COLUMN "ID" INT')
    assert 'column "Id" already exists' in duck.fails(
        'ALTER TABLE lake.c.t RENAME COLUMN name TO "Id"'
    )
    assert [column for column, *_ in duck.run("DESCRIBE lake.c.t")] == ["id", "name"]


def test_a_schema_or_table_name_in_another_case_is_the_same(duck: Session) -> None:
    """DuckDB lists one of two tables whose names differ only in case: a "T" made beside t
    was hidden, and what DuckDB sent to "T" went to t. Refused on either backend."""
    duck.run("CREATE SCHEMA lake.k")
    duck.run("CREATE TABLE lake.k.t (id INTEGER)")
    assert 'table "T" already exists' in duck.fails('CREATE TABLE lake.k."T" (id INTEGER)')
    assert 'schema "K" already exists' in duck.fails('CREATE SCHEMA lake."K"')
    duck.run('ALTER TABLE lake.k.t RENAME TO "T"')
    assert duck.run("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'k'") == [("T",)]


def test_ddl_finds_what_it_names_in_any_case(duck: Session) -> None:
    """DuckDB takes a name whatever its case and sends a DDL statement's names as the user
    typed them: each statement here was NOT_FOUND (`table "tmp" not found`) on a table DuckDB
    lists as Tmp (deviation names_any_case)."""
    duck.run('CREATE SCHEMA lake."Kase"')
    duck.run(
        'CREATE TABLE lake.Kase."Tmp" ("Name" INTEGER, "St" STRUCT("A" INTEGER), "V" INTEGER,'
        ' "W" INTEGER)'
    )
    duck.run("INSERT INTO lake.kase.tmp VALUES (1, {'A': 2}, 3, 4)")
    for statement in (
        "ALTER TABLE lake.kase.tmp RENAME COLUMN name TO nm",
        "ALTER TABLE lake.KASE.TMP ADD COLUMN x INTEGER",
        "ALTER TABLE lake.kase.tmp DROP COLUMN X",
        "ALTER TABLE lake.kase.tmp ALTER COLUMN NM TYPE BIGINT",
        "ALTER TABLE lake.kase.tmp ALTER COLUMN v SET NOT NULL",
        "ALTER TABLE lake.kase.tmp ALTER COLUMN v DROP NOT NULL",
        "ALTER TABLE lake.kase.tmp ALTER COLUMN w SET DEFAULT 7",
        "ALTER TABLE lake.kase.tmp RENAME COLUMN st.a TO c",
        "ALTER TABLE lake.kase.tmp ALTER COLUMN st TYPE STRUCT(c INTEGER, d INTEGER)",
        "ALTER TABLE lake.kase.tmp DROP COLUMN st.D",
        "ALTER TABLE lake.kase.tmp RENAME TO t2",
    ):
        duck.run(statement)
    assert [(c, t) for c, t, *_ in duck.run("DESCRIBE lake.kase.t2")] == [
        ("nm", "BIGINT"),
        ("St", "STRUCT(c INTEGER)"),
        ("V", "INTEGER"),
        ("W", "INTEGER"),
    ]
    duck.run("INSERT INTO lake.kase.t2 (nm) VALUES (5)")
    assert duck.run("SELECT * FROM lake.kase.t2 ORDER BY nm") == [
        (1, {"c": 2}, 3, 4),
        (5, None, None, 7),
    ]
    duck.run("DROP TABLE lake.KASE.T2")
    duck.run("DROP SCHEMA lake.kase")
    assert duck.run("SELECT schema_name FROM duckdb_schemas() WHERE schema_name ILIKE 'kase'") == []


def test_a_column_named_rowid_is_refused(duck: Session) -> None:
    """DuckDB lets a table have a column named rowid; the contract takes a field so named for
    the row id column the backend keeps itself, so such a CREATE TABLE made a table without
    it (2 columns asked, 1 made). Refused, naming what to do."""
    duck.run("CREATE SCHEMA lake.r")
    refused = duck.fails("CREATE TABLE lake.r.u (rowid INTEGER, v INTEGER)")
    assert 'invalid column name "rowid": the table keeps a row id column' in refused
    assert duck.run("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'r'") == []


def test_a_struct_field_is_added_by_the_struct_s_new_type(duck: Session) -> None:
    """DuckDB's Airport sends ADD COLUMN s.f without the new field's name (the column's name
    with the field's type), so no server can add it that way: refused, naming what does
    (NOT_FOUND `column path not found` before), and ALTER COLUMN s TYPE STRUCT(…) with the
    new field adds it on either backend (on Delta it was a type change Delta refused)."""
    duck.run("CREATE SCHEMA lake.f")
    duck.run("CREATE TABLE lake.f.s (id INTEGER, st STRUCT(a INTEGER, b VARCHAR))")
    duck.run("INSERT INTO lake.f.s VALUES (1, {'a': 1, 'b': 'x'})")
    refused = duck.fails("ALTER TABLE lake.f.s ADD COLUMN st.c INTEGER")
    assert 'add_field got "st" as int32, not as the struct it becomes' in refused
    assert 'ALTER COLUMN "st" TYPE STRUCT(…) adds it' in refused
    duck.run("ALTER TABLE lake.f.s ALTER COLUMN st TYPE STRUCT(a INTEGER, b VARCHAR, c INTEGER)")
    duck.run("INSERT INTO lake.f.s VALUES (2, {'a': 2, 'b': 'y', 'c': 3})")
    assert duck.run("SELECT id, st FROM lake.f.s ORDER BY id") == [
        (1, {"a": 1, "b": "x", "c": None}),
        (2, {"a": 2, "b": "y", "c": 3}),
    ]


def test_fixed_size_arrays_lists_and_maps_as_columns(duck: Session) -> None:
    """DuckDB names a fixed-size ARRAY's element "" in Arrow: that is no column name to
    refuse (CREATE TABLE failed `invalid column name "": it is empty`); the types come back
    as DuckDB declared them (on Delta, an ARRAY column keeps its size in the table's record
    of served types)."""
    duck.run("CREATE SCHEMA lake.s")
    duck.run(
        "CREATE TABLE lake.s.shapes (id INTEGER, xyz DOUBLE[3], tags VARCHAR[],"
        " m MAP(VARCHAR, INTEGER[]), st STRUCT(p INTEGER[], q VARCHAR))"
    )
    assert [(name, kind) for name, kind, *_ in duck.run("DESCRIBE lake.s.shapes")] == [
        ("id", "INTEGER"),
        ("xyz", "DOUBLE[3]"),
        ("tags", "VARCHAR[]"),
        ("m", "MAP(VARCHAR, INTEGER[])"),
        ("st", "STRUCT(p INTEGER[], q VARCHAR)"),
    ]
    duck.run(
        "INSERT INTO lake.s.shapes VALUES (1, [1.5, 2, 3], ['a', NULL], MAP {'k': [1, 2]},"
        " {'p': [3, 4], 'q': 'x'}), (2, NULL, [], MAP {}, NULL)"
    )
    assert duck.value("UPDATE lake.s.shapes SET xyz = [0, 0, 1] WHERE id = 2") == 1
    assert duck.run("SELECT * FROM lake.s.shapes ORDER BY id") == [
        (1, (1.5, 2.0, 3.0), ["a", None], {"k": [1, 2]}, {"p": [3, 4], "q": "x"}),
        (2, (0.0, 0.0, 1.0), [], {}, None),
    ]
    duck.run("DROP TABLE lake.s.shapes")
    duck.run("DROP SCHEMA lake.s")
