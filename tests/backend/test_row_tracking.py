"""A row-tracked Delta table read without Spark (issue #45): its row ids computed from the log's
base row ids, the rows' positions and the ids Delta materialized for rewritten rows, equal to
Spark's own `_metadata.row_id` after everything Spark does to such a table — UPDATE, DELETE
with deletion vectors, MERGE, OPTIMIZE, column mapping and a renamed column, checkpoints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airport_contracts import Context, InvalidTicket, ScanOptions

pytestmark = pytest.mark.spark

STATEMENTS = (
    "INSERT INTO {t} SELECT id, cast(id AS STRING) FROM range(3000)",
    "INSERT INTO {t} SELECT id + 5000, 'x' FROM range(700)",
    "UPDATE {t} SET b = 'updated' WHERE a % 7 = 3",
    "DELETE FROM {t} WHERE a % 11 = 5",
    "MERGE INTO {t} t USING (SELECT id AS a FROM range(0, 6000, 13)) s ON t.a = s.a"
    " WHEN MATCHED THEN UPDATE SET b = 'merged' WHEN NOT MATCHED THEN INSERT (a, b) VALUES (s.a, 'new')",
    "OPTIMIZE {t}",
    "UPDATE {t} SET b = 'after' WHERE a % 17 = 1",
    "DELETE FROM {t} WHERE a % 19 = 2",
)
PROPERTIES = (
    "'delta.enableRowTracking' = 'true', 'delta.enableDeletionVectors' = 'true',"
    " 'delta.checkpointInterval' = '3'"
)


def _spark_rows(spark: Any, ident: str, columns: list[str]) -> list[str]:
    listed = ", ".join(f"`{c}`" for c in columns)
    read = spark.sql(f"SELECT _metadata.row_id AS rowid, {listed} FROM {ident}").toArrow()
    return sorted(json.dumps(r, sort_keys=True) for r in read.to_pylist())


def _served(table: pa.Table, columns: list[str]) -> list[str]:
    return sorted(
        json.dumps(r, sort_keys=True) for r in table.select(["rowid", *columns]).to_pylist()
    )


@pytest.mark.parametrize(
    "mapped,small_row_groups",
    [(False, False), (True, False), (False, True)],
    ids=["plain", "column-mapped", "small-row-groups"],
)
def test_row_ids_equal_sparks_after_everything_spark_does(
    spark_backend: Any,
    tmp_path: Path,
    mapped: bool,
    small_row_groups: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """small-row-groups: files of many row groups, which the server's reader decodes on
    several threads; a row's id is its position, so the batches must come in file order."""
    from pyairport.backends.spark import SparkBackend
    from pyairport.backends.spark.scans import Scanner

    spark = spark_backend.spark
    ident = f"delta.`{tmp_path / 's' / 't'}`"
    mapping = ", 'delta.columnMapping.mode' = 'name'" if mapped else ""
    spark.sql(
        f"CREATE TABLE {ident} (a BIGINT, b STRING) USING delta TBLPROPERTIES ({PROPERTIES}{mapping})"
    )
    if small_row_groups:  # Spark passes its session's parquet.* settings to the writer
        spark.conf.set("parquet.block.size", "2048")
    try:
        for statement in STATEMENTS:
            spark.sql(statement.format(t=ident))
    finally:
        spark.conf.unset("parquet.block.size")
    if small_row_groups:
        assert max(_row_groups(tmp_path / "s" / "t")) > 4
    columns = ["a", "b"]
    if mapped:
        spark.sql(f"ALTER TABLE {ident} RENAME COLUMN b TO `b e`")
        spark.sql(f"ALTER TABLE {ident} ADD COLUMNS (c INT)")
        spark.sql(f"UPDATE {ident} SET c = 1 WHERE a % 5 = 0")
        columns = ["a", "b e", "c"]

    def no_spark(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the scan went to Spark")

    backend = SparkBackend(spark, tmp_path)
    try:
        ctx = Context.background()
        table: Any = backend.catalog.schema(ctx, "s").table(ctx, "t")  # type: ignore[union-attr]
        assert table.layout.rowids == "tracked"
        expected = _spark_rows(spark, ident, columns)
        monkeypatch.setattr(Scanner, "scan", no_spark)
        whole = table.scan(ctx, ScanOptions()).read_all()
        assert _served(whole, columns) == expected
        parts = table.scan_partitions(ctx, ScanOptions())
        assert all(json.loads(p.token).get("files") is not None for p in parts)
        read = pa.concat_tables(
            table.scan(ctx, ScanOptions(partition=p.token)).read_all() for p in parts
        )
        assert _served(read, columns) == expected
        for forged in _forged_parts(json.loads(parts[0].token)):
            with pytest.raises(
                InvalidTicket, match="^invalid ticket: not a scan part of this table$"
            ):
                table.scan(ctx, ScanOptions(partition=forged)).read_all()
        # a scan without the rowid (DuckDB's SELECT) is planned as a plain table's: one part
        # that delta-rs reads whole, the rowid column null
        plain = table.scan_partitions(ctx, ScanOptions(columns=columns))
        assert [json.loads(p.token).get("files") for p in plain] == [None]
        (part,) = plain
        unnumbered = table.scan(ctx, ScanOptions(columns=columns, partition=part.token)).read_all()
        assert unnumbered.column("rowid").null_count == unnumbered.num_rows
        assert _without_rowid(unnumbered.select(columns).to_pylist()) == _without_rowid(
            [json.loads(row) for row in expected]
        )
        # the same part asked for with the rowid (a ticket may be written by anyone) still
        # gets Spark's ids
        numbered = ScanOptions(columns=["rowid", *columns], partition=part.token)
        assert _served(table.scan(ctx, numbered).read_all(), columns) == expected
        # a filter on the rowid (DuckDB's UPDATE ... WHERE rowid = …) runs after the ids are made
        some = json.loads(expected[len(expected) // 2])["rowid"]
        picked = table.scan(ctx, ScanOptions(filter=_rowid_equals(some))).read_all()
        assert picked.column("rowid").to_pylist() == [some]
    finally:
        backend.close()


def _row_groups(folder: Path) -> list[int]:
    import pyarrow.parquet as pq

    return [pq.ParquetFile(f).metadata.num_row_groups for f in folder.glob("*.parquet")]


def _forged_parts(real: dict[str, Any]) -> list[str]:
    """Part tokens this table did not plan, as a ticket may carry them (anyone can write
    one): not an object, a version not yet written, no version, more rows than the version
    holds, a file out of range or read twice, a list of files not the version's."""
    version, files = real["version"], real["files"]
    return [
        "not json",
        json.dumps([version]),
        json.dumps({**real, "version": version + 1}),
        json.dumps({**real, "version": -1}),
        json.dumps({**real, "version": str(version)}),
        json.dumps({"version": version, "rows": 10**12}),
        json.dumps({**real, "files": files + files}),
        json.dumps({**real, "files": [10**6]}),
        json.dumps({**real, "files": [files]}),
        json.dumps({**real, "digest": "0" * len(real["digest"])}),
    ]


def _without_rowid(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(
        json.dumps({k: v for k, v in row.items() if k != "rowid"}, sort_keys=True) for row in rows
    )


def _rowid_equals(value: int) -> bytes:
    """DuckDB's filter JSON for rowid = value."""
    from pyairport.filters import Compare, to_json

    return to_json(Compare("rowid", "==", value), pa.schema([("rowid", pa.int64())])).encode()


@pytest.mark.parametrize("connect", [False, True], ids=["classic", "connect"])
def test_what_spark_still_reads_streams_in_bounded_pieces(
    spark_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, connect: bool
) -> None:
    """A scan Spark must serve (here: forced, as for a table on a remote file system) never
    holds the whole table, and gives the same rows: a classic session's streams one Spark
    partition at a time (here a file each) in bounded batches; a Spark Connect session's (the
    path forced here on a classic one) a group of files at a time (here one), each group one
    Spark query that Delta lets read its own files only (file_pieces.py)."""
    from pyairport.backends.spark import SparkBackend, scans
    from pyairport.backends.spark.planning import DeltaScanPlanning
    from pyairport.backends.spark.table import SparkTable

    spark = spark_backend.spark
    tracked = f"delta.`{tmp_path / 's' / 'tracked'}`"
    plain = f"delta.`{tmp_path / 's' / 'plain'}`"
    spark.sql(
        f"CREATE TABLE {tracked} (a BIGINT, b STRING) USING delta TBLPROPERTIES ({PROPERTIES})"
    )
    spark.sql(f"CREATE TABLE {plain} (a BIGINT, b STRING) USING delta")
    for ident in (tracked, plain):
        for statement in STATEMENTS[:4]:
            spark.sql(statement.format(t=ident))
    monkeypatch.setattr(scans, "is_connect", lambda _: connect)
    monkeypatch.setattr(scans, "SCAN_RANGE_ROWIDS", 512)
    monkeypatch.setattr(scans, "SCAN_GROUP_BYTES", 1)  # a file per query
    monkeypatch.setattr(scans, "SCAN_BATCH_ROWS", 512)
    monkeypatch.setattr(DeltaScanPlanning, "part_files", lambda *args: None)
    monkeypatch.setattr(SparkTable, "direct_snapshot", lambda *args, **kwargs: None)
    pieces: list[int] = []
    shaped = scans.full_width

    def counted(batch: pa.RecordBatch, *args: Any) -> pa.RecordBatch:
        pieces.append(batch.num_rows)
        return shaped(batch, *args)

    monkeypatch.setattr(scans, "full_width", counted)
    queries: list[Any] = []  # the Spark queries of Spark Connect's path, each a piece
    batches = scans._Read.batches
    monkeypatch.setattr(
        scans._Read, "batches", lambda read, frame: queries.append(frame) or batches(read, frame)
    )
    backend = SparkBackend(spark, tmp_path)
    partition_bytes = spark.conf.get("spark.sql.files.maxPartitionBytes")
    # a partition per file: each file's opening cost alone fills a partition
    spark.conf.set(
        "spark.sql.files.maxPartitionBytes", spark.conf.get("spark.sql.files.openCostInBytes")
    )
    try:
        ctx = Context.background()
        schema: Any = backend.catalog.schema(ctx, "s")
        read = schema.table(ctx, "tracked").scan(ctx, ScanOptions()).read_all()
        assert _served(read, ["a", "b"]) == _spark_rows(spark, tracked, ["a", "b"])
        assert len(pieces) > 3 and max(pieces) <= 512
        assert len(queries) > 3 if connect else not queries
        files = spark.sql(f"SELECT count(DISTINCT _metadata.file_path) FROM {tracked}").first()[0]
        # the files an UPDATE and a DELETE rewrote overlap in every column: no query reads
        # them all (by paths each would read every file)
        assert all(_files_read(frame) < files for frame in queries)
        pieces.clear()
        queries.clear()
        read = schema.table(ctx, "plain").scan(ctx, ScanOptions()).read_all()
        expected = spark.sql(f"SELECT a, b FROM {plain}").toArrow()
        assert sorted(read.select(["a", "b"]).to_pylist(), key=str) == sorted(
            expected.to_pylist(), key=str
        )
        files = spark.sql(f"SELECT count(DISTINCT _metadata.file_path) FROM {plain}").first()[0]
        assert len(pieces) >= files > 1 and max(pieces) <= 512
        assert len(queries) == (files if connect else 0)
        assert all(_files_read(frame) < files for frame in queries)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", partition_bytes)
        backend.close()


def _files_read(frame: Any) -> int:
    """How many data files a query Spark ran read (its scans' numFiles)."""
    leaves = frame._jdf.queryExecution().executedPlan().collectLeaves().iterator()
    read = 0
    while leaves.hasNext():
        metrics = leaves.next().metrics()
        read += int(metrics.apply("numFiles").value()) if metrics.contains("numFiles") else 0
    return read


def test_rows_found_by_their_ids_read_only_the_files_that_may_hold_them(
    spark_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """How a row-tracked UPDATE or DELETE finds its rows (file_parts.read with rowids): the
    rows with those ids, as Spark numbers them, including a rewritten row's kept id; a file
    whose ids (its base row id and its row count) miss them all is not read, one holding
    rewritten rows always is."""
    import numpy as np

    from pyairport.backends.spark import SparkBackend, file_parts

    spark = spark_backend.spark
    ident = f"delta.`{tmp_path / 's' / 't'}`"
    spark.sql(f"CREATE TABLE {ident} (a BIGINT, b STRING) USING delta TBLPROPERTIES ({PROPERTIES})")
    for start in (0, 1000, 2000):
        spark.sql(f"INSERT INTO {ident} SELECT id, 'x' FROM range({start}, {start + 1000})")
    spark.sql(f"UPDATE {ident} SET b = 'updated' WHERE a = 1500")  # a new file, its id kept
    ids = {
        r["a"]: r["rowid"]
        for r in spark.sql(f"SELECT _metadata.row_id AS rowid, a FROM {ident}").collect()
    }
    files = spark.sql(f"SELECT count(DISTINCT _metadata.file_path) FROM {ident}").first()[0]
    wanted = np.array(sorted([ids[10], ids[1500], ids[2999], 10**12]), dtype=np.int64)
    checked: list[str] = []  # each batch whose rows were checked against the ids, by how
    members, within = file_parts._members, file_parts._within

    def by_id(batch_ids: pa.Array, sorted_ids: np.ndarray) -> np.ndarray:
        checked.append("by id")
        return members(batch_ids, sorted_ids)

    def by_position(sorted_ids: np.ndarray, start: int, count: int) -> np.ndarray:
        checked.append("by position")
        return within(sorted_ids, start, count)

    monkeypatch.setattr(file_parts, "_members", by_id)
    monkeypatch.setattr(file_parts, "_within", by_position)
    backend = SparkBackend(spark, tmp_path)
    try:
        ctx = Context.background()
        table: Any = backend.catalog.schema(ctx, "s").table(ctx, "t")  # type: ignore[union-attr]
        layout, version = table.fresh_layout()
        part = table.part_files(layout, table.direct_snapshot(layout, None, version))
        every = list(range(part.files.num_rows))
        read = file_parts.read(ctx, part, every, ["rowid", "a", "b"], None, 0, wanted).read_all()
        assert sorted(read.select(["rowid", "a", "b"]).to_pylist(), key=str) == sorted(
            [
                {"rowid": ids[10], "a": 10, "b": "x"},
                {"rowid": ids[1500], "a": 1500, "b": "updated"},
                {"rowid": ids[2999], "a": 2999, "b": "x"},
            ],
            key=str,
        )
        # each one batch here: the files of a = 10 and a = 2999, the one a = 1500 was in
        # (its id still in the file's range; its deletion vector drops it), by position; and
        # its new one, which keeps its id, by id
        assert sorted(checked) == ["by id", *["by position"] * 3] and len(checked) < files
    finally:
        backend.close()
