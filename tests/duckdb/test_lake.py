"""DuckDB against a lake plain Spark wrote: the tables as they are, time travel, and UPDATE and
DELETE where the table can address its rows."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ..backend.test_lake import lake_server, make_table
from ..tpch import TRACKED
from .conftest import OpenSession

pytestmark = [pytest.mark.duckdb, pytest.mark.spark]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@pytest.fixture
def lake_location(
    spark_backend: Any, tmp_path: Path, airport_extension_path: str
) -> Iterator[tuple[Any, Path, str]]:
    spark = spark_backend.spark
    lake = tmp_path / "lake"
    for name in ("orders", "orders_by_region", "tracked", "renamed"):
        make_table(spark, lake, name)
    with lake_server(spark, lake) as location:
        yield spark, lake, location


def test_a_lake_spark_wrote_at_a_duckdb_prompt(
    lake_location: tuple[Any, Path, str], open_session: OpenSession
) -> None:
    spark, lake, location = lake_location
    duck = open_session(location)
    assert duck.run(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = 'lake' ORDER BY 1"
    ) == [("orders",), ("orders_by_region",), ("renamed",), ("tracked",)]
    assert duck.run("SELECT order_id, customer FROM lake.sales.orders ORDER BY 1") == [
        (1, "ann"),
        (2, "bo"),
        (3, "cy"),
    ]
    assert duck.run(
        "SELECT region, sum(amount) FROM lake.sales.orders_by_region GROUP BY 1 ORDER BY 1"
    ) == [("eu", 40.0), ("us", 20.0)]
    assert duck.run("SELECT amount FROM lake.sales.renamed WHERE order_id = 2") == [(20.0,)]
    # time travel: the table as Spark's versionAsOf reads it
    assert duck.run("SELECT order_id FROM lake.sales.orders AT (VERSION => 1) ORDER BY 1") == [
        (1,),
        (2,),
    ]
    assert duck.run("SELECT * FROM lake.sales.renamed AT (VERSION => 1) ORDER BY 1") == [
        (1, 10.0),
        (2, 20.0),
    ]
    # and by timestamp: the version Spark's TIMESTAMP AS OF picks, read by delta-rs
    log = sorted((lake / "sales" / "orders" / "_delta_log").glob("*.json"))
    committed = EPOCH + timedelta(milliseconds=log[1].stat().st_mtime_ns // 1_000_000)
    at = f"AT (TIMESTAMP => TIMESTAMPTZ '{committed.isoformat()}')"
    assert duck.run(f"SELECT order_id FROM lake.sales.orders {at} ORDER BY 1") == [(1,), (2,)]
    later = committed + timedelta(days=365)
    assert "[DELTA_TIMESTAMP_GREATER_THAN_COMMIT]" in duck.fails(
        f"SELECT * FROM lake.sales.orders AT (TIMESTAMP => TIMESTAMPTZ '{later.isoformat()}')"
    )
    # DML: row tracking's rowids take UPDATE and DELETE; the table without rowids INSERT only
    assert duck.value("UPDATE lake.sales.tracked SET amount = amount * 2 WHERE order_id > 2") == 2
    assert duck.run("DELETE FROM lake.sales.tracked WHERE order_id = 1 RETURNING order_id") == [
        (1,)
    ]
    duck.run("INSERT INTO lake.sales.orders VALUES (4, 'dee', 40.0)")
    duck.run("INSERT INTO lake.sales.orders_by_region VALUES (9, 9.0, 'ap')")
    # no rowid in the catalog: DuckDB itself cannot bind the UPDATE (its own error)
    assert "row id column" in duck.fails("UPDATE lake.sales.orders SET amount = 0")
    assert spark.sql(
        f"SELECT order_id, amount FROM delta.`{lake / 'sales' / 'tracked'}` ORDER BY 1"
    ).collect() == [(2, 20.0), (3, 60.0), (4, 80.0)]
    assert spark.sql(f"SELECT count(*) FROM delta.`{lake / 'sales' / 'orders'}`").first()[0] == 4
    assert (lake / "sales" / "orders_by_region" / "region=ap").is_dir()


def test_returning_of_decimal_columns_in_the_widths_duckdb_sent(
    spark_backend: Any, tmp_path: Path, open_session: OpenSession
) -> None:
    """DuckDB sends every DECIMAL as decimal128, and an UPDATE answers in the schema it sent
    (protocol §1.8), while the lake serves a DECIMAL of at most 18 digits as decimal64: an
    UPDATE ... RETURNING of a row-tracked table (TPC-H's shape) failed `column type mismatch`
    for every such column, SET or not. The values come back exactly, in either width."""
    from decimal import Decimal

    spark = spark_backend.spark
    ident = f"delta.`{tmp_path / 'shop' / 'items'}`"
    spark.sql(
        f"CREATE TABLE {ident} USING delta TBLPROPERTIES ({TRACKED}) AS SELECT"
        " id, CAST(id * 1.25 AS DECIMAL(15, 2)) AS price,"
        " CAST(id AS DECIMAL(30, 4)) AS stock, concat('n', id) AS note FROM range(1, 6)"
    )
    with lake_server(spark, tmp_path) as location:
        duck = open_session(location)
        assert sorted(
            duck.run("UPDATE lake.shop.items SET price = price + 0.01 WHERE id <= 2 RETURNING *")
        ) == [
            (1, Decimal("1.26"), Decimal("1.0000"), "n1"),
            (2, Decimal("2.51"), Decimal("2.0000"), "n2"),
        ]
        assert duck.run(
            "UPDATE lake.shop.items SET note = 'x' WHERE id = 3 RETURNING price, note"
        ) == [(Decimal("3.75"), "x")]
        assert duck.run("DELETE FROM lake.shop.items WHERE id = 4 RETURNING price") == [
            (Decimal("5.00"),)
        ]
        assert duck.run(
            "INSERT INTO lake.shop.items VALUES (9, 99999999999.99, 12.5, 'nine') RETURNING price, stock"
        ) == [(Decimal("99999999999.99"), Decimal("12.5000"))]
    assert spark.sql(f"SELECT id, price, note FROM {ident} ORDER BY id").collect() == [
        (1, Decimal("1.26"), "n1"),
        (2, Decimal("2.51"), "n2"),
        (3, Decimal("3.75"), "x"),
        (5, Decimal("6.25"), "n5"),
        (9, Decimal("99999999999.99"), "nine"),
    ]


def test_a_tables_history_and_changes_from_the_lakes_functions(
    spark_backend: Any, tmp_path: Path, open_session: OpenSession
) -> None:
    """history and table_changes (lake_functions.py) after three DuckDB statements on a table
    plain Spark made, with its change data feed on (and row tracking, for UPDATE and
    DELETE); a table without the feed is refused, naming the property."""
    spark = spark_backend.spark
    lake = tmp_path / "lake"
    events = lake / "sales" / "events"
    spark.sql(
        f"CREATE TABLE delta.`{events}` (id BIGINT, name STRING) USING delta TBLPROPERTIES"
        " ('delta.enableChangeDataFeed' = 'true', 'delta.enableRowTracking' = 'true')"
    )
    make_table(spark, lake, "orders")
    with lake_server(spark, lake) as location:
        duck = open_session(location)
        duck.run("INSERT INTO lake.sales.events VALUES (1, 'ann'), (2, 'bo')")
        duck.run("UPDATE lake.sales.events SET name = 'BO' WHERE id = 2")
        duck.run("DELETE FROM lake.sales.events WHERE id = 1")
        history = duck.run(
            "SELECT version, operation, operation_metrics IS NOT NULL"
            " FROM lake.delta.history('sales.events') ORDER BY version"
        )
        assert [h[0] for h in history] == list(range(len(history))) and len(history) >= 4
        # a row-tracked table's rows are changed by their first column's values: an UPDATE
        # to one value as Spark's own UPDATE … IN, a DELETE of a few as its DELETE … IN
        assert [h[1] for h in history][-3:] == ["WRITE", "UPDATE", "DELETE"]
        first = history[-3][0]
        assert duck.run(
            "SELECT id, name, _change_type, _commit_version - $1"
            " FROM lake.delta.table_changes('sales.events', $1)"
            " ORDER BY _commit_version, id, _change_type",
            first,
        ) == [
            (1, "ann", "insert", 0),
            (2, "bo", "insert", 0),
            (2, "BO", "update_postimage", 1),
            (2, "bo", "update_preimage", 1),
            (1, "ann", "delete", 2),
        ]
        assert duck.run(
            "SELECT id, _change_type FROM lake.delta.table_changes('sales.events', $1,"
            " to_version := $1) ORDER BY id",
            first + 2,
        ) == [(1, "delete")]
        error = duck.fails("SELECT * FROM lake.delta.table_changes('sales.orders', 0)")
        assert "sales.orders does not record its changes" in error
        assert "delta.enableChangeDataFeed = true" in error
        # Spark's own refusal arrives as one line, without the table's path or a stack
        error = duck.fails("SELECT * FROM lake.delta.table_changes('sales.events', 99)")
        assert "table function execution failed: table_changes: " in error
        assert str(lake) not in error and "\tat " not in error
        assert "no Delta table 'sales.nope'" in duck.fails(
            "SELECT * FROM lake.delta.history('sales.nope')"
        )


def test_struct_fields_declared_not_null_and_variant_columns_at_a_duckdb_prompt(
    spark_backend: Any, tmp_path: Path, open_session: OpenSession
) -> None:
    """Spark makes tables DuckDB's Arrow cannot match type for type: a struct whose fields are
    NOT NULL (DuckDB's fields are always nullable) and VARIANT (served as Spark serves it, its
    encoded value and metadata). Both were refused as a schema mismatch for every INSERT,
    even one leaving the column out. Now a struct is written where its values keep the NOT
    NULL, and refused naming the field where they do not; a VARIANT is left NULL by an
    INSERT and kept by an UPDATE (RETURNING, which sends it, too), and a value for it (which
    Spark cannot take from Arrow) is refused; nothing refused is written."""
    spark = spark_backend.spark
    shaped = f"delta.`{tmp_path / 'shop' / 'shaped'}`"
    spark.sql(
        f"CREATE TABLE {shaped} (id BIGINT, st STRUCT<a: INT NOT NULL, b: STRING>)"
        f" USING delta TBLPROPERTIES ({TRACKED})"
    )
    spark.sql(f"INSERT INTO {shaped} VALUES (1, named_struct('a', 1, 'b', 'one'))")
    docs = f"delta.`{tmp_path / 'shop' / 'docs'}`"
    spark.sql(
        f"CREATE TABLE {docs} USING delta TBLPROPERTIES ({TRACKED})"
        """ AS SELECT 1 AS id, parse_json('{"a": [1, 2]}') AS doc"""
    )
    with lake_server(spark, tmp_path) as location:
        duck = open_session(location)
        duck.run("INSERT INTO lake.shop.shaped VALUES (2, {'a': 2, 'b': NULL})")
        assert "INSERT refused: column st.a does not accept nulls" in duck.fails(
            "INSERT INTO lake.shop.shaped VALUES (3, {'a': 3, 'b': 'x'}), (4, {'a': NULL, 'b': 'y'})"
        )
        assert (
            duck.value("UPDATE lake.shop.shaped SET st = {'a': 20, 'b': 'two'} WHERE id = 2") == 1
        )
        assert duck.run(
            "UPDATE lake.shop.shaped SET st = {'a': 21, 'b': st.b} WHERE id = 2 RETURNING st.a"
        ) == [(21,)]
        assert "UPDATE refused: column st.a does not accept nulls" in duck.fails(
            "UPDATE lake.shop.shaped SET st = {'a': NULL, 'b': 'z'} WHERE id = 1"
        )
        assert duck.run("SELECT id, st.a, st.b FROM lake.shop.shaped ORDER BY id") == [
            (1, 1, "one"),
            (2, 21, "two"),
        ]

        assert duck.run("SELECT id, doc.value IS NOT NULL FROM lake.shop.docs") == [(1, True)]
        duck.run("INSERT INTO lake.shop.docs (id) VALUES (2)")
        assert duck.value("UPDATE lake.shop.docs SET id = 3 WHERE id = 2") == 1
        assert duck.run("SELECT id, doc IS NULL FROM lake.shop.docs ORDER BY id") == [
            (1, False),
            (3, True),
        ]
        refused = "column doc is VARIANT, which Spark takes no value of over Arrow"
        assert refused in duck.fails("INSERT INTO lake.shop.docs SELECT 4, doc FROM lake.shop.docs")
        assert refused in duck.fails("UPDATE lake.shop.docs SET doc = NULL WHERE id = 1")
        assert refused in duck.fails(
            "UPDATE lake.shop.docs SET doc = (SELECT doc FROM lake.shop.docs WHERE id = 1)"
            " WHERE id = 3"
        )
        # RETURNING sends every column, the VARIANT too: its stored value is no change
        assert duck.run(
            "UPDATE lake.shop.docs SET id = id + 1 WHERE id = 1 RETURNING id, doc IS NULL"
        ) == [(2, False)]
        assert duck.value("UPDATE lake.shop.docs SET doc = doc WHERE id IN (2, 3)") == 2
        # a row whose VARIANT is NULL read back by RETURNING (it failed INTERNAL)
        assert duck.run("DELETE FROM lake.shop.docs WHERE id = 3 RETURNING id, doc IS NULL") == [
            (3, True)
        ]
    assert spark.sql(f"SELECT id, st.a, st.b FROM {shaped} ORDER BY id").collect() == [
        (1, 1, "one"),
        (2, 21, "two"),
    ]
    assert spark.sql(f"SELECT id, to_json(doc) FROM {docs} ORDER BY id").collect() == [
        (2, '{"a":[1,2]}'),
    ]


def test_a_column_of_the_tables_own_named_rowid_is_read_as_data_and_never_written(
    spark_backend: Any, tmp_path: Path, open_session: OpenSession
) -> None:
    """A table Spark wrote may have a column named rowid of its own (an export's row number,
    a string key). It was taken for pyairport's rowid column where it was an integer (hidden
    from DuckDB, its values overwritten by an INSERT, and an UPDATE of one row changed every
    row sharing its value) and broke every read where it was not (a second rowid beside row
    tracking's). Now it is the table's data, read as Spark reads it; as the contract takes a
    column of that name for the rowid, which an INSERT never stores, nothing is written."""
    spark = spark_backend.spark
    numbered = f"delta.`{tmp_path / 'shop' / 'numbered'}`"
    spark.sql(f"CREATE TABLE {numbered} (rowid INT, v INT) USING delta")
    spark.sql(f"INSERT INTO {numbered} VALUES (7, 1), (7, 2)")
    keyed = f"delta.`{tmp_path / 'shop' / 'keyed'}`"
    spark.sql(f"CREATE TABLE {keyed} (rowid STRING, v INT) USING delta TBLPROPERTIES ({TRACKED})")
    spark.sql(f"INSERT INTO {keyed} VALUES ('a', 1)")
    with lake_server(spark, tmp_path) as location:
        duck = open_session(location)
        assert duck.run("SELECT rowid, v FROM lake.shop.numbered ORDER BY v") == [(7, 1), (7, 2)]
        assert duck.run("SELECT * FROM lake.shop.keyed") == [("a", 1)]
        for table, values in (("numbered", "(9, 3)"), ("keyed", "('b', 2)")):
            refused = duck.fails(f"INSERT INTO lake.shop.{table} VALUES {values}")
            assert f"table '{table}' does not support INSERT operations" in refused
            assert "precondition failed" in refused  # FAILED_PRECONDITION
            # DuckDB itself has no rowid to UPDATE or DELETE by
            assert "row id" in duck.fails(f"UPDATE lake.shop.{table} SET v = 20 WHERE v = 1")
    assert spark.sql(f"SELECT * FROM {numbered} ORDER BY v").collect() == [(7, 1), (7, 2)]
    assert spark.sql(f"SELECT * FROM {keyed}").collect() == [("a", 1)]


def test_columns_a_table_maps_by_id_are_renamed_added_and_dropped_at_a_duckdb_prompt(
    spark_backend: Any, tmp_path: Path, open_session: OpenSession
) -> None:
    """A table Spark made with `delta.columnMapping.mode = 'id'`: renaming a column failed
    INTERNAL (`DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE`: pyairport set the mode to
    'name' first, which Delta refuses from 'id'). Mapped by id, names already change freely."""
    spark = spark_backend.spark
    ident = f"delta.`{tmp_path / 'shop' / 'mapped'}`"
    spark.sql(
        f"CREATE TABLE {ident} (id BIGINT, item STRING, s STRUCT<a: INT, b: STRING>) USING delta"
        f" TBLPROPERTIES ('delta.columnMapping.mode' = 'id', {TRACKED})"
    )
    spark.sql(f"INSERT INTO {ident} VALUES (1, 'pen', named_struct('a', 1, 'b', 'x'))")
    with lake_server(spark, tmp_path) as location:
        duck = open_session(location)
        duck.run("ALTER TABLE lake.shop.mapped RENAME COLUMN item TO product")
        duck.run("ALTER TABLE lake.shop.mapped RENAME s.b TO c")
        duck.run('ALTER TABLE lake.shop.mapped ADD COLUMN "unit price" DOUBLE')
        duck.run("ALTER TABLE lake.shop.mapped DROP COLUMN s")
        duck.run("INSERT INTO lake.shop.mapped VALUES (2, 'ink', 2.5)")
        duck.run("UPDATE lake.shop.mapped SET product = 'pencil' WHERE id = 1")
        assert duck.run("SELECT * FROM lake.shop.mapped ORDER BY id") == [
            (1, "pencil", None),
            (2, "ink", 2.5),
        ]
    mode = spark.sql(f"SHOW TBLPROPERTIES {ident} ('delta.columnMapping.mode')").first()[1]
    assert mode == "id"
    assert spark.sql(f"SELECT * FROM {ident} ORDER BY id").collect() == [
        (1, "pencil", None),
        (2, "ink", 2.5),
    ]


def test_update_returning_of_a_table_with_identity_and_generated_columns(
    spark_backend: Any, tmp_path: Path, open_session: OpenSession
) -> None:
    """DuckDB sends every column of an UPDATE … RETURNING, not only those SET: the IDENTITY
    column's failed INTERNAL (Delta updates none) and the generated ones' stale values broke
    their generation check. Sent as stored they are left to Delta, and RETURNING gives what
    Delta computes; an IDENTITY value changed is the client's error."""
    spark = spark_backend.spark
    ident = f"delta.`{tmp_path / 'shop' / 'sales'}`"
    spark.sql(
        f"CREATE TABLE {ident} (id BIGINT GENERATED ALWAYS AS IDENTITY, amount DOUBLE,"
        " cents BIGINT GENERATED ALWAYS AS (CAST(amount * 100 AS BIGINT)), day DATE,"
        " year INT GENERATED ALWAYS AS (YEAR(day))) USING delta PARTITIONED BY (year)"
        f" TBLPROPERTIES ({TRACKED})"
    )
    spark.sql(f"INSERT INTO {ident} (amount, day) VALUES (1.5, DATE'2024-05-01')")
    with lake_server(spark, tmp_path) as location:
        duck = open_session(location)
        assert duck.run(
            "UPDATE lake.shop.sales SET amount = 2.5, day = DATE '2023-01-02' RETURNING *"
        ) == [(1, 2.5, 250, date(2023, 1, 2), 2023)]
        refused = duck.fails("UPDATE lake.shop.sales SET id = id + 1 RETURNING *")
        assert (
            "invalid argument error, with message: UPDATE refused: column id is an IDENTITY"
            in refused
        )
        refused = duck.fails("UPDATE lake.shop.sales SET id = 7")
        assert "UPDATE refused: column id is an IDENTITY column" in refused
        duck.run("BEGIN")
        assert duck.run("UPDATE lake.shop.sales SET amount = amount * 2 RETURNING cents") == [
            (500,)
        ]
        duck.run("COMMIT")
    assert spark.sql(f"SELECT * FROM {ident}").collect() == [(1, 5.0, 500, date(2023, 1, 2), 2023)]


def test_insert_returning_shows_the_values_delta_stores_for_columns_left_to_it(
    spark_backend: Any, tmp_path: Path, open_session: OpenSession
) -> None:
    """RETURNING's rows are sent before the statement commits, and they showed NULL for the
    columns an INSERT leaves to Delta, which stored 'none', a timestamp and x * 2. A DEFAULT
    is now evaluated once and written, so the row returned is the row stored; a generated
    column is computed as Delta computes it; an IDENTITY column, numbered only at the commit,
    is refused with RETURNING, nothing written."""
    spark = spark_backend.spark
    filled = f"delta.`{tmp_path / 'shop' / 'filled'}`"
    spark.sql(
        f"CREATE TABLE {filled} (x INT, note STRING DEFAULT 'none',"
        " at TIMESTAMP DEFAULT current_timestamp(), twice INT GENERATED ALWAYS AS (x * 2))"
        f" USING delta TBLPROPERTIES ({TRACKED},"
        " 'delta.feature.allowColumnDefaults' = 'supported')"
    )
    numbered = f"delta.`{tmp_path / 'shop' / 'numbered'}`"
    spark.sql(
        f"CREATE TABLE {numbered} (id BIGINT GENERATED ALWAYS AS IDENTITY, v INT)"
        f" USING delta TBLPROPERTIES ({TRACKED})"
    )
    with lake_server(spark, tmp_path) as location:
        duck = open_session(location)
        returned = duck.run("INSERT INTO lake.shop.filled (x) VALUES (1), (2) RETURNING *")
        returned += duck.run("INSERT INTO lake.shop.filled (x, note) VALUES (3, 'n') RETURNING *")
        assert [(x, note, twice) for x, note, _, twice in returned] == [
            (1, "none", 2),
            (2, "none", 4),
            (3, "n", 6),
        ]
        assert None not in [at for _, _, at, _ in returned]
        assert duck.run("SELECT * FROM lake.shop.filled ORDER BY x") == returned
        refused = duck.fails("INSERT INTO lake.shop.numbered (v) VALUES (1) RETURNING *")
        assert (
            "invalid argument error, with message: INSERT refused: RETURNING cannot show"
            " IDENTITY column id" in refused
        )
        duck.run("INSERT INTO lake.shop.numbered (v) VALUES (2)")
    assert spark.sql(f"SELECT * FROM {numbered}").collect() == [(1, 2)]
