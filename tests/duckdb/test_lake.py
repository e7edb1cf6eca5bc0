"""DuckDB against a lake plain Spark wrote: the tables as they are, time travel, and UPDATE and
DELETE where the table can address its rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..backend.test_lake import lake_server, make_table
from .conftest import OpenSession

pytestmark = [pytest.mark.duckdb, pytest.mark.spark]


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
