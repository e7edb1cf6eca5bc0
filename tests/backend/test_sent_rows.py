"""INSERT through a Spark Connect server that cannot read the server's staged files (one on
another host): the rows go a bounded group at a time into a work table, then into the target
in one commit, and the work table is gone after, whatever happened."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pyarrow as pa
import pytest

from pyairport.client import AirportClient
from pyairport.transactions import MemoryTransactionManager

from ..protocol.conftest import refusal, serving

pytestmark = pytest.mark.spark

# Names Delta takes only with column mapping, at the top and inside a struct.
COLUMNS = "id BIGINT NOT NULL, `a b` STRING, s STRUCT<`x;y`: INT>"
MAPPED = "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"


@contextlib.contextmanager
def _remote(
    spark: Any, lake: Path | None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[AirportClient, list[int]]]:
    """A client of the lake served as through a Connect server on another host, with staged
    files of 500 rows and sent groups of about 20 kB (lake None: the session's catalog); the rows of each group sent (each sent
    while the work table is noted for a server killed mid-statement: work_tables.py)."""
    from pyairport.backends.spark import SparkBackend, sent_rows, table

    monkeypatch.setattr(table, "STAGE_FILE_ROWS", 500)
    monkeypatch.setattr(sent_rows, "SENT_BYTES", 20_000)
    monkeypatch.setattr(sent_rows, "READ_ROWS", 100)
    backend = SparkBackend(
        spark, lake, remote="sc://spark.example:15002", session_catalog=lake is None
    )
    assert not backend.shares_files
    groups: list[int] = []
    view = backend.view

    def counted(data: pa.Table) -> str:
        assert len(list(backend.staging.glob("work-pyairport_ddl_rows_*.json"))) == 1
        groups.append(data.num_rows)
        return view(data)

    monkeypatch.setattr(backend, "view", counted)
    try:
        with serving(backend.catalog, MemoryTransactionManager()) as running:
            yield running.client, groups
            assert not list(backend.staging.glob("work-*.json"))  # settled
    finally:
        backend.close()


def _rows(count: int, last_id: int | None = None) -> pa.Table:
    ids = list(range(1, count + 1))
    if last_id is not None:
        ids[-1] = last_id
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "a b": [f"row {i}" for i in ids],
            "s": pa.array([{"x;y": i} for i in ids], pa.struct([("x;y", pa.int32())])),
        }
    )


def _versions(spark: Any, ident: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY {ident}").count())


def _made(spark: Any, lake: Path, *after: str) -> str:
    """The table sales.wide of lake, made by plain Spark (then each of after, {t} its name)."""
    ident = f"delta.`{lake / 'sales' / 'wide'}`"
    spark.sql(f"CREATE TABLE {ident} ({COLUMNS}) USING delta {MAPPED}")
    for statement in after:
        spark.sql(statement.format(t=ident))
    return ident


def _work_left(lake: Path) -> list[str]:
    return [p.name for p in (lake / "sales").iterdir() if p.name.startswith("pyairport_")]


def test_an_insert_sent_to_a_remote_spark_lands_whole_in_one_commit_a_group_at_a_time(
    spark_connect_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spark = spark_connect_backend.spark
    lake = tmp_path / "lake"
    ident = _made(spark, lake)
    before = _versions(spark, ident)
    sent = _rows(3_000)
    with _remote(spark, lake, monkeypatch) as (client, groups):
        assert client.insert("sales", "wide", sent).total_changed == 3_000
        assert [t.name for s in client.list_schemas() if s.name == "sales" for t in s.tables] == [
            "wide"
        ]
    landed = spark.sql(f"SELECT * FROM {ident} ORDER BY id").toArrow()
    assert landed.to_pylist() == sent.to_pylist()
    assert _versions(spark, ident) == before + 1  # one commit of the target
    # never the statement's rows at once: groups of at most ~20 kB (read 100 rows at a time)
    assert sum(groups) == 3_000 and len(groups) > 3 and max(groups) < 1_000
    assert _work_left(lake) == []


def test_a_refused_insert_sent_to_a_remote_spark_changes_nothing_and_leaves_no_work_table(
    spark_connect_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spark = spark_connect_backend.spark
    lake = tmp_path / "lake"
    ident = _made(spark, lake, "ALTER TABLE {t} ADD CONSTRAINT positive CHECK (id > 0)")
    before = _versions(spark, ident)
    with _remote(spark, lake, monkeypatch) as (client, groups):
        error = refusal(lambda: client.insert("sales", "wide", _rows(2_000, last_id=-1)))
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "positive" in error.message and "pyairport_" not in error.message
    assert spark.sql(f"SELECT count(*) FROM {ident}").first()[0] == 0
    assert _versions(spark, ident) == before
    assert len(groups) > 1  # the rows had reached the work table before the target refused
    assert _work_left(lake) == []


def test_an_insert_sent_to_a_remote_spark_lands_in_a_table_of_its_catalog(
    spark_connect_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same with the tables of the Connect server's catalog (--spark-catalog): the work
    table is made in the target's database, by name."""
    spark = spark_connect_backend.spark
    database = f"sent_{uuid.uuid4().hex[:8]}"
    ident = f"{database}.wide"
    spark.sql(f"CREATE DATABASE {database}")
    try:
        spark.sql(f"CREATE TABLE {ident} ({COLUMNS}) USING delta {MAPPED}")
        sent = _rows(3_000)
        with _remote(spark, None, monkeypatch) as (client, groups):
            assert client.insert(database, "wide", sent).total_changed == 3_000
        landed = spark.sql(f"SELECT * FROM {ident} ORDER BY id").toArrow()
        assert landed.to_pylist() == sent.to_pylist()
        assert _versions(spark, ident) == 2  # made, then one commit
        assert len(groups) > 3
        tables = [r["tableName"] for r in spark.sql(f"SHOW TABLES IN {database}").collect()]
        assert tables == ["wide"]
    finally:
        spark.sql(f"DROP DATABASE {database} CASCADE")
