"""pyairport's rowid column across servers: blocks of rowids claimed in the table's own Delta
log (rowid_claims.py), each owned by one claimer whoever else asks, at once or later, through
the log folder or through Spark alone; an INSERT into a claimed block is a blind append."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyairport.client import AirportClient
from pyairport.server import AirportServer, ServerConfig
from pyairport.transactions import MemoryTransactionManager

from .test_lake import OWN_ROWID_COLUMN

pytestmark = pytest.mark.spark
# The Spark backend's modules need its extra (deltalake): they are imported where a test runs.

HOW = ["log folder", "spark only"]  # how a claimer sees the log: RowidClaims' two ways


def _table(spark: Any, folder: Path, columns: str = "rowid BIGINT, name STRING") -> str:
    ident = f"delta.`{folder}`"
    spark.sql(f"CREATE TABLE {ident} ({columns}) USING delta TBLPROPERTIES ({OWN_ROWID_COLUMN})")
    return ident


def _claimer(spark_backend: Any, ident: str, how: str) -> Any:
    """A claimer as one server is: its own view of the log."""
    from pyairport.backends.spark.direct import Snapshots
    from pyairport.backends.spark.layout import read_layout
    from pyairport.backends.spark.rowid_claims import RowidClaims

    layout = read_layout(spark_backend.spark, ident)
    assert layout.location is not None
    snapshot: Callable[[], Any] | None = (
        Snapshots(layout.location).latest if how == "log folder" else None
    )
    return RowidClaims(spark_backend, "test.t", lambda: layout, snapshot)


def _claims_in_log(folder: Path) -> list[int]:
    """The blocks the log's commits claim, in commit order."""
    from pyairport.backends.spark.rowid_claims import CLAIM_APP

    blocks = []
    for commit in sorted((folder / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "txn" in action and action["txn"]["appId"].startswith(CLAIM_APP):
                blocks.append(int(action["txn"]["appId"].removeprefix(CLAIM_APP)))
    return blocks


@pytest.mark.parametrize("how", HOW)
def test_a_block_is_claimed_once_whoever_asks_later(
    spark_backend: Any, tmp_path: Path, how: str
) -> None:
    from deltalake import DeltaTable

    from pyairport.backends.spark.rowid_claims import CLAIM_APP

    ident = _table(spark_backend.spark, tmp_path / "t")
    first, second = (_claimer(spark_backend, ident, how) for _ in range(2))
    assert first.claim(None) == 0
    assert second.claim(None) == 1  # block 0 is first's: Delta skips a second claim of it
    assert first.claim(0) == 2
    assert second.claim(0) == 3
    # each block claimed by exactly one commit; a skipped claim made none
    assert _claims_in_log(tmp_path / "t") == [0, 1, 2, 3]
    table = DeltaTable(str(tmp_path / "t"))
    assert [table.transaction_version(f"{CLAIM_APP}{b}") for b in range(5)] == [1, 1, 1, 1, None]
    assert table.to_pyarrow_table().num_rows == 0  # a claim adds no row and no file
    assert not table.file_uris()


@pytest.mark.parametrize("how", HOW)
def test_claims_at_the_same_moment_get_different_blocks(
    spark_backend: Any, tmp_path: Path, how: str
) -> None:
    """Three servers that all start claiming block 0 at once: Delta fails all but one claim
    of a block, and each loser moves on."""
    ident = _table(spark_backend.spark, tmp_path / "t")
    claimers = [_claimer(spark_backend, ident, how) for _ in range(3)]
    got: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(claimers))

    def claim(claimer: Any) -> None:
        try:
            start.wait()
            got.append(claimer.claim(None))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=claim, args=(c,)) for c in claimers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert sorted(got) == sorted(set(got)) and len(got) == 3
    assert sorted(_claims_in_log(tmp_path / "t")) == sorted(got)


@pytest.mark.parametrize(
    "properties",
    [
        f"TBLPROPERTIES ({OWN_ROWID_COLUMN})",
        f"TBLPROPERTIES ('delta.columnMapping.mode' = 'name', {OWN_ROWID_COLUMN})",
    ],
    ids=["statistics", "column mapping"],
)
def test_the_first_claim_starts_above_every_rowid_the_table_holds(
    spark_backend: Any, tmp_path: Path, properties: str
) -> None:
    """Rows another writer gave rowids to (a pyairport before claims, plain Spark) are never
    claimed over: from the log's file statistics, or Spark's max where they are named apart
    (column mapping)."""
    from pyairport.backends.spark.rowid_claims import BLOCK_ROWIDS

    spark = spark_backend.spark
    ident = f"delta.`{tmp_path / 't'}`"
    spark.sql(f"CREATE TABLE {ident} (rowid BIGINT, name STRING) USING delta {properties}")
    spark.sql(f"INSERT INTO {ident} VALUES (7, 'a'), ({BLOCK_ROWIDS + 5}, 'b')")
    for how in HOW:
        assert _claimer(spark_backend, ident, how).claim(None) >= 2
    assert _claims_in_log(tmp_path / "t") == [2, 3]


def test_inserts_into_a_claimed_block_are_blind_appends(spark_backend: Any, tmp_path: Path) -> None:
    """Over the wire: the first INSERT claims block 0 (rowids from 1, as before claims), the
    next ones read nothing of the table (Delta records a blind append) and claim nothing."""
    from pyairport.backends.spark import SparkBackend
    from pyairport.demo import spark_demo_catalog

    backend = SparkBackend(spark_backend.spark, tmp_path / "warehouse")
    server = AirportServer(
        spark_demo_catalog(backend), MemoryTransactionManager(), ServerConfig(port=0)
    ).start()
    try:
        with AirportClient(server.location) as client:
            for i in range(3):
                rows = pa.table({"id": [i], "name": [f"n{i}"], "email": [f"e{i}"]})
                client.insert("batch_schema", "users", rows)
            read = client.scan("batch_schema", "users", ["rowid", "id"]).read_all()
        folder = tmp_path / "warehouse" / "batch_schema" / "users"
        assert sorted(read.column("rowid").to_pylist()) == [1, 2, 3]
        assert _claims_in_log(folder) == [0]
        writes = []
        for commit in sorted((folder / "_delta_log").glob("*.json")):
            for line in commit.read_text().splitlines():
                info = json.loads(line).get("commitInfo", {})
                if info.get("operation") == "WRITE" and "userMetadata" not in info:
                    writes.append(info["isBlindAppend"])
        assert writes == [True, True, True]
    finally:
        server.stop(0)
        backend.close()
