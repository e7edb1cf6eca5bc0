"""Layouts (layouts.py): a table of a shape already read is laid out without asking Spark, and
exactly as Spark would lay it out; any other shape, or a table named by a metastore, is read
by Spark."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytestmark = pytest.mark.spark

COLUMNS = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _described(statements: list[str]) -> list[str]:
    return [s for s in statements if s.startswith("DESCRIBE DETAIL")]


def _assert_as_spark_reads(spark: Any, layout: Any) -> None:
    from pyairport.backends.spark.layout import read_layout

    read = read_layout(spark, layout.ident)
    assert layout == read and layout.properties == read.properties
    assert layout.schema.equals(read.schema, check_metadata=True)


def test_tables_made_alike_are_laid_out_once_by_spark(
    spark_backend: Any, spark_statements: list[str]
) -> None:
    first = spark_backend.table("layouts", f"a_{uuid.uuid4().hex[:8]}", COLUMNS)
    assert len(_described(spark_statements)) == 1
    spark_statements.clear()
    second = spark_backend.table("layouts", f"b_{uuid.uuid4().hex[:8]}", COLUMNS)
    assert _described(spark_statements) == []
    assert second.layout.location != first.layout.location
    _assert_as_spark_reads(spark_backend.spark, second.layout)
    spark_statements.clear()
    other = pa.schema([*COLUMNS, ("extra", pa.float64())])
    third = spark_backend.table("layouts", f"c_{uuid.uuid4().hex[:8]}", other)
    assert len(_described(spark_statements)) == 1  # another shape
    _assert_as_spark_reads(spark_backend.spark, third.layout)


def test_a_found_lake_of_tables_made_alike_asks_spark_once_per_shape(
    spark_backend: Any, spark_statements: list[str], tmp_path: Path
) -> None:
    """A warehouse delta-rs wrote: three tables alike, one partitioned, one with a property;
    the server that finds them asks Spark for three layouts, each as Spark lays it out."""
    from deltalake import write_deltalake

    from pyairport.backends.spark import SparkBackend

    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]})
    for name in ("t1", "t2", "t3"):
        write_deltalake(str(tmp_path / "shop" / name), rows)
    write_deltalake(str(tmp_path / "shop" / "by_name"), rows, partition_by=["name"])
    write_deltalake(
        str(tmp_path / "shop" / "appended"),
        rows,
        configuration={"delta.appendOnly": "true"},
    )
    spark_statements.clear()
    backend = SparkBackend(spark_backend.spark, tmp_path)
    try:
        assert len(_described(spark_statements)) == 3
        schema = backend.catalog.schema_for("shop")
        for name in ("t1", "t2", "t3", "by_name", "appended"):
            table = schema.table(None, name)
            _assert_as_spark_reads(spark_backend.spark, table.layout)
        assert schema.table(None, "by_name").layout.partitions == ("name",)
        assert schema.table(None, "appended").layout.properties["delta.appendOnly"] == "true"
    finally:
        backend.close()


def test_tables_named_by_a_metastore_are_always_read_by_spark(tmp_path: Path) -> None:
    from pyairport.backends.spark.layouts import Layouts

    layouts = Layouts(spark=None, shares_files=True)
    folder = tmp_path / "t"
    assert layouts._by_folder(f"delta.`{folder}`", folder)
    assert not layouts._by_folder("`db`.`t`", folder)  # a metastore's name
    assert not layouts._by_folder(f"delta.`{folder}/../t`", Path(f"{folder}/../t"))
    assert not Layouts(spark=None, shares_files=False)._by_folder(f"delta.`{folder}`", folder)
