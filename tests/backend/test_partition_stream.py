"""A classic session's Spark rows streamed one partition at a time (partition_stream.py): the
same rows and types as Spark's own toArrow(), in bounded batches; a small result collected
whole, as toArrow() reads it but for a null VARIANT, which toArrow() fails on."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from pyairport.backends.spark.partition_stream import arrow_partitions, collected

pytestmark = pytest.mark.spark

EVERY_TYPE = """
SELECT id, CAST(id AS DECIMAL(15, 2)) AS d15, CAST(id AS DECIMAL(38, 10)) AS d38,
  concat('s', id) AS s, CAST(concat('b', id) AS BINARY) AS b, timestamp_seconds(id) AS ts,
  CAST(timestamp_seconds(id) AS TIMESTAMP_NTZ) AS ntz, date_from_unix_date(CAST(id AS INT)) AS dt,
  named_struct('a', id, 'b', concat('x', id)) AS st, map('k', id, 'j', id + 1) AS m,
  array(id, id + 1) AS arr, IF(id % 3 = 0, NULL, id) AS maybe, CAST(id AS FLOAT) AS f,
  CAST(id AS DOUBLE) / 7 AS g, id % 2 = 0 AS bo, CAST(id % 30000 AS SMALLINT) AS sm,
  CAST(id % 100 AS TINYINT) AS ti, make_dt_interval(0, 0, 0, id) AS di,
  array(named_struct('q', map('z', array(id)))) AS deep, IF(id % 5 = 0, NULL, 'v') AS ns
FROM range(0, 30000, 1, 3)
"""


def test_every_type_streams_as_toarrow_reads_it(spark_backend: Any) -> None:
    frame = spark_backend.spark.sql(EVERY_TYPE)
    reader = arrow_partitions(frame, 1000)
    batches = list(reader)
    want = frame.toArrow()
    assert max(b.num_rows for b in batches) <= 1000 and len(batches) >= 30
    got = pa.Table.from_batches(batches, reader.schema)
    assert got.schema.equals(want.schema)
    assert got.equals(want)


def test_an_empty_frame_streams_its_schema(spark_backend: Any) -> None:
    frame = spark_backend.spark.sql("SELECT id, concat('s', id) AS s FROM range(0)")
    reader = arrow_partitions(frame, 1000)
    assert reader.read_all().num_rows == 0
    assert reader.schema.names == ["id", "s"]


def test_a_small_result_is_collected_as_toarrow_reads_it(spark_backend: Any) -> None:
    frame = spark_backend.spark.sql(EVERY_TYPE.replace("30000, 1, 3", "300, 1, 3"))
    got, want = collected(frame), frame.toArrow()
    assert got.schema.equals(want.schema)
    assert got.equals(want)


@pytest.mark.parametrize("session", ["spark_backend", "spark_connect_backend"])
def test_a_null_variant_is_read_where_toarrow_fails(
    session: str, request: pytest.FixtureRequest
) -> None:
    spark = request.getfixturevalue(session).spark
    frame = spark.sql(
        "SELECT id, IF(id = 1, NULL, parse_json(CAST(id AS STRING))) AS doc FROM range(3)"
    )
    read = collected(frame).sort_by("id")
    assert [d is None for d in read.column("doc").to_pylist()] == [False, True, False]
    assert read.column("doc").type.field("value").type == pa.binary()
    if session == "spark_backend":  # a Spark Connect session has no partition stream
        streamed = arrow_partitions(frame, 2).read_all().sort_by("id")
        assert streamed.equals(read)
