"""A statement that names every row of a row-tracked table (commits._sparks_own): a DELETE of
them all runs as Spark's own `DELETE FROM t`, an UPDATE that sets each column to one value as
Spark's own `UPDATE t SET c = <literal>`, with nothing to match; anything less (a row left
out, a second value, a float's -0.0 beside its 0.0) runs as the MERGE by values. An UPDATE to
one value of rows whose first column's values name them and no other row runs as `UPDATE …
WHERE first IN (…)`. Where another writer commits after the rows were read, they are read
again at its version: no row it added is changed, none it changed is missed. Row ids are kept
and every value lands exactly. The literal's rule (row_values.one_literal) is tested without
Spark too."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import grpc
import pyarrow as pa
import pytest

from pyairport.client import AirportClient
from pyairport.transactions import MemoryTransactionManager

from ..protocol.conftest import refusal, serving

ROWS = 300
TRACKED = "'delta.enableRowTracking' = 'true', 'delta.enableDeletionVectors' = 'true'"


@pytest.mark.parametrize(
    "chunks,data_type,literal",
    [
        ([[7, 7], [7]], pa.int64(), "CAST(7 AS BIGINT)"),
        ([["x", "x"], [], ["x"]], pa.string(), "CAST(X'78' AS STRING)"),
        ([[Decimal("2.50")] * 3], pa.decimal128(18, 2), "CAST('2.50' AS DECIMAL(18,2))"),
        ([[date(1500, 1, 1)] * 2], pa.date32(), "DATE'1500-01-01'"),
        ([[None, None], [None]], pa.string(), "CAST(NULL AS STRING)"),
        ([[-0.0, -0.0]], pa.float64(), "CAST('-0.0' AS DOUBLE)"),
        ([[float("nan")] * 2], pa.float32(), "CAST('NaN' AS FLOAT)"),
        ([[True], [True]], pa.bool_(), "TRUE"),
        ([[1, 2]], pa.int64(), None),
        ([[1], [2]], pa.int64(), None),  # each chunk one value, not the same one
        ([["x", None]], pa.string(), None),
        ([[None], ["x"]], pa.string(), None),
        ([[0.0, -0.0]], pa.float64(), None),  # equal as numbers, not as stored
        ([[], []], pa.int64(), None),  # no value at all
        ([[1_000_000, 1_000_000]], pa.timestamp("us"), None),  # no literal of its type here
    ],
)
def test_one_literal_only_for_one_value_in_every_row(
    chunks: list[list[Any]], data_type: pa.DataType, literal: str | None
) -> None:
    from pyairport.backends.spark.row_values import one_literal

    arrays = [pa.array(c, data_type) for c in chunks]
    assert one_literal(iter(arrays), data_type) == literal


def test_one_literal_reads_a_slice_by_its_own_values() -> None:
    from pyairport.backends.spark.row_values import one_literal

    values = pa.array([1.5, 2.0, 2.0, 3.0], pa.float64())
    assert one_literal(iter([values.slice(1, 2)]), pa.float64()) == "CAST('2.0' AS DOUBLE)"


@contextlib.contextmanager
def _client(spark: Any, lake: Path) -> Iterator[AirportClient]:
    from pyairport.backends.spark import SparkBackend

    served = SparkBackend(spark, lake)
    try:
        with serving(served.catalog, MemoryTransactionManager()) as running:
            yield running.client
            assert not list(served.staging.glob("*"))
    finally:
        served.close()


def _table(spark: Any, lake: Path) -> str:
    ident = f"delta.`{lake / 'sales' / 'tracked'}`"
    spark.sql(
        f"CREATE TABLE {ident} (k BIGINT, note STRING, f DOUBLE) USING delta"
        f" TBLPROPERTIES ({TRACKED})"
    )
    # two appends: two files, k repeating (the rows are told apart only by every column)
    for start in (0, ROWS // 2):
        spark.sql(
            f"INSERT INTO {ident} SELECT id DIV 3, concat('n', id), id / 4.0"
            f" FROM range({start}, {start + ROWS // 2})"
        )
    return ident


def _last_operation(spark: Any, ident: str) -> str:
    return str(spark.sql(f"DESCRIBE HISTORY {ident} LIMIT 1").first().operation)


def _by_row_id(spark: Any, ident: str) -> dict[int, tuple[Any, ...]]:
    rows = spark.sql(f"SELECT _metadata.row_id AS id, k, note, f FROM {ident}").collect()
    return {r.id: (r.k, r.note, r.f) for r in rows}


def _row_ids_by_k(rows: dict[int, tuple[Any, ...]]) -> dict[int, list[int]]:
    """The row ids of rows (_by_row_id's) holding each value of k, in ascending order."""
    by_k: dict[int, list[int]] = {}
    for row_id, (k, _, _) in sorted(rows.items()):
        by_k.setdefault(k, []).append(row_id)
    return by_k


def _sent(
    client: AirportClient, columns: dict[str, list[Any]], leave_out: int = 0
) -> tuple[int, list[int]]:
    """An UPDATE as DuckDB sends one: each row's rowid (in the scan's order, but the last
    leave_out rows) and the columns it sets; the rows changed, and the rowids sent."""
    scanned = client.scan("sales", "tracked", ["rowid"]).read_all().column("rowid")
    rowids = scanned.to_pylist()[: ROWS - leave_out]
    types = {"note": pa.string(), "f": pa.float64()}
    rows = pa.table(
        {"rowid": pa.array(rowids, scanned.type)}
        | {n: pa.array(v[: len(rowids)], types[n]) for n, v in columns.items()}
    )
    return client.update("sales", "tracked", rows, batch_rows=64).total_changed, rowids


@pytest.mark.spark
@pytest.mark.parametrize("spilled", [False, True], ids=["held", "spilled"])
def test_every_row_set_to_one_value_is_sparks_own_update(
    spark_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spilled: bool
) -> None:
    from pyairport.backends.spark import staging

    if spilled:
        monkeypatch.setattr(staging, "SPILL_BYTES", 0)
    spark = spark_backend.spark
    ident = _table(spark, tmp_path)
    before = _by_row_id(spark, ident)
    with _client(spark, tmp_path) as client:
        changed, _ = _sent(client, {"note": ["one 'value'"] * ROWS, "f": [-0.0] * ROWS})
        assert changed == ROWS
    assert _last_operation(spark, ident) == "UPDATE"  # not a MERGE
    after = _by_row_id(spark, ident)
    assert after.keys() == before.keys()  # row tracking's ids kept
    assert all(after[i] == (k, "one 'value'", -0.0) for i, (k, _, _) in before.items())
    assert all(str(f) == "-0.0" for _, _, f in after.values())


@pytest.mark.spark
@pytest.mark.parametrize(
    "case",
    ["two values", "zero beside minus zero", "a row left out"],
)
def test_anything_less_is_not_the_whole_tables(
    spark_backend: Any, tmp_path: Path, case: str
) -> None:
    spark = spark_backend.spark
    ident = _table(spark, tmp_path)
    before = _by_row_id(spark, ident)
    notes = ["same"] * ROWS
    floats = [1.0] * ROWS
    leave_out = 0
    if case == "two values":
        notes[-1] = "other"
    elif case == "zero beside minus zero":
        floats = [0.0] * (ROWS - 1) + [-0.0]
    else:
        leave_out = 1
    with _client(spark, tmp_path) as client:
        changed, rowids = _sent(client, {"note": notes, "f": floats}, leave_out)
        assert changed == ROWS - leave_out
    assert _last_operation(spark, ident) == "MERGE"
    after = _by_row_id(spark, ident)
    assert after.keys() == before.keys()
    set_to = {i: (notes[p], str(floats[p])) for p, i in enumerate(rowids)}
    for row_id, (k, note, f) in before.items():
        expected = set_to.get(row_id, (note, str(f)))
        assert (after[row_id][0], after[row_id][1], str(after[row_id][2])) == (k, *expected)


@pytest.mark.spark
def test_a_delete_of_every_row_is_sparks_own_and_of_fewer_is_not(
    spark_backend: Any, spark_statements: list[str], tmp_path: Path
) -> None:
    spark = spark_backend.spark
    ident = _table(spark, tmp_path)
    with _client(spark, tmp_path) as client:
        rowids = client.scan("sales", "tracked", ["rowid"]).read_all().column("rowid")
        assert client.delete("sales", "tracked", rowids[1:].to_pylist()).total_changed == ROWS - 1
        assert _last_operation(spark, ident) == "MERGE"
        spark_statements.clear()
        assert client.delete("sales", "tracked", rowids[:1].to_pylist()).total_changed == 1
    deletes = [s for s in spark_statements if s.startswith("DELETE FROM ")]
    assert len(deletes) == 1 and " WHERE " not in deletes[0]  # the last row: every row
    assert spark.sql(f"SELECT count(*) AS n FROM {ident}").first().n == 0


@pytest.mark.spark
def test_rows_named_by_their_first_column_set_to_one_value_are_sparks_own_update(
    spark_backend: Any,
    spark_statements: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """k repeats three times: rows that are all of their k's are updated by k's values; a row
    whose k other rows hold too goes by the MERGE, the rows holding the k's counted once."""
    from pyairport.backends.spark.commits import DeltaChanges

    counted = DeltaChanges._names_only
    counts: list[int] = []

    def names_only(self: Any, *args: Any) -> bool:
        counts.append(1)
        return counted(self, *args)

    monkeypatch.setattr(DeltaChanges, "_names_only", names_only)
    spark = spark_backend.spark
    ident = _table(spark, tmp_path)
    before = _by_row_id(spark, ident)
    by_k = _row_ids_by_k(before)
    with _client(spark, tmp_path) as client:

        def update(row_ids: list[int], note: str) -> list[str]:
            spark_statements.clear()
            rows = pa.table({"rowid": pa.array(row_ids, pa.int64()), "note": [note] * len(row_ids)})
            assert client.update("sales", "tracked", rows).total_changed == len(row_ids)
            return [
                q.split(" ", 1)[0] for q in spark_statements if q.startswith(("UPDATE", "MERGE"))
            ]

        whole_ks = by_k[4] + by_k[7]
        assert update(whole_ks, "by k") == ["UPDATE"]
        assert any(" WHERE " in q and q.startswith("UPDATE") for q in spark_statements)
        assert update(by_k[9][:2], "by values") == ["MERGE"]
        counts.clear()
        one_each = [by_k[10][0], by_k[11][0]]  # k's apart, each held by two more rows
        assert update(one_each, "by values") == ["MERGE"]
        assert len(counts) == 1
    after = _by_row_id(spark, ident)
    by_values = by_k[9][:2] + one_each
    for row_id, (k, note, f) in before.items():
        expected = "by k" if row_id in whole_ks else "by values" if row_id in by_values else note
        assert after[row_id] == (k, expected, f)


def _ours(spark: Any, lake: Path, named: list[int], *, delete: bool = False) -> int:
    """The rows a DELETE of the named rows, or an UPDATE setting their note to 'ours',
    changed."""
    with _client(spark, lake) as client:
        if delete:
            return client.delete("sales", "tracked", named).total_changed
        rows = pa.table({"rowid": pa.array(named, pa.int64()), "note": ["ours"] * len(named)})
        return client.update("sales", "tracked", rows).total_changed


def _after_the_read(monkeypatch: pytest.MonkeyPatch, commit: Any, times: int = 1) -> list[int]:
    """Another writer's commit (commit()) lands just after the server first reads a
    statement's rows, for each of the statement's first times attempts; the versions the
    attempts read at, as they come."""
    from pyairport.backends.spark.commits import DeltaChanges

    read = DeltaChanges._tracked_rows
    attempts: list[int] = []

    def read_then_another_commits(self: Any, ids: Any, version: int, *args: Any) -> Any:
        rows = read(self, ids, version, *args)
        if version not in attempts:
            attempts.append(version)
            if len(attempts) <= times:
                commit()
        return rows

    monkeypatch.setattr(DeltaChanges, "_tracked_rows", read_then_another_commits)
    return attempts


@pytest.mark.spark
@pytest.mark.parametrize(
    "statement",
    ["every row to one value", "rows their k names", "rows by their values", "delete every row"],
)
def test_a_commit_after_the_read_is_read_again(
    spark_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, statement: str
) -> None:
    """Each statement's rows were counted at the version it read: run on a later one as
    planned there, a row the other writer added with a listed k (or every value of a named
    row) would change too, and a named row whose values it changed would be missed."""
    spark = spark_backend.spark
    ident = _table(spark, tmp_path)
    before = _by_row_id(spark, ident)
    by_k = _row_ids_by_k(before)
    named = {
        "every row to one value": sorted(before),
        "rows their k names": by_k[4] + by_k[7],
        "rows by their values": by_k[9][:2],
        "delete every row": sorted(before),
    }[statement]
    if statement == "rows by their values":  # a named row's note, which the MERGE joins on
        other = f"UPDATE {ident} SET note = 'theirs' WHERE note = '{before[named[0]][1]}'"
    else:  # a row holding k = 4, in every named group of rows
        other = f"INSERT INTO {ident} VALUES (4, 'theirs', 0.5)"
    _after_the_read(monkeypatch, lambda: spark.sql(other))
    assert _ours(spark, tmp_path, named, delete=statement == "delete every row") == len(named)
    after = _by_row_id(spark, ident)
    added = [row for row_id, row in after.items() if row_id not in before]
    if statement == "delete every row":
        assert added == [(4, "theirs", 0.5)] and len(after) == 1
        return
    assert added == ([] if statement == "rows by their values" else [(4, "theirs", 0.5)])
    for row_id, (k, note, f) in before.items():
        assert after[row_id] == (k, "ours" if row_id in named else note, f)


@pytest.mark.spark
def test_a_statement_other_writers_keep_overtaking_fails_and_changes_nothing(
    spark_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer rewriting rows after every read (a no-op UPDATE: still a new file and
    a deletion vector) sends the statement back each time; after four reads it fails."""
    spark = spark_backend.spark
    ident = _table(spark, tmp_path)
    before = _by_row_id(spark, ident)
    other = f"UPDATE {ident} SET note = note WHERE k = 0"
    _after_the_read(monkeypatch, lambda: spark.sql(other), times=99)
    with _client(spark, tmp_path) as client:
        error = refusal(lambda: client.delete("sales", "tracked", sorted(before)))
    assert error.code == grpc.StatusCode.INTERNAL
    assert error.message == (
        "DELETE failed: sales.tracked: other writers kept committing while this statement read"
        " its rows; run it again"
    )
    after = _by_row_id(spark, ident)
    assert {i: after[i] for i in before} == before  # none of the rows deleted


@pytest.mark.spark
@pytest.mark.parametrize("statement", ["rows their k names", "rows by their values", "delete"])
def test_appends_of_rows_it_does_not_name_let_the_statement_run(
    spark_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, statement: str
) -> None:
    """A stream appending just after the read, and again while the server looks at what it
    appended (rows with a k no statement names), no longer sends the statement back to read
    again: its rows are read once, and the appended rows are left as they came."""
    from pyairport.backends.spark import commits

    spark = spark_backend.spark
    ident = _table(spark, tmp_path)
    before = _by_row_id(spark, ident)
    by_k = _row_ids_by_k(before)
    named = by_k[9][:2] if statement == "rows by their values" else by_k[4] + by_k[7]
    appended = iter(range(1000, 1099))

    def another_append() -> None:
        spark.sql(f"INSERT INTO {ident} VALUES ({next(appended)}, 'theirs', 0.5)")

    looked = commits.holds_named
    looks: list[bool] = []

    def appended_while_looking(*args: Any) -> bool:
        if not looks:
            another_append()
        looks.append(looked(*args))
        return looks[-1]

    monkeypatch.setattr(commits, "holds_named", appended_while_looking)
    reads = _after_the_read(monkeypatch, another_append, times=99)
    assert _ours(spark, tmp_path, named, delete=statement == "delete") == len(named)
    assert len(reads) == 1  # read once, at the version before the first append
    after = _by_row_id(spark, ident)
    assert looks == [False, False]  # the first append, then the one made while looking
    added = sorted(row for i, row in after.items() if i not in before)
    assert added == [(1000, "theirs", 0.5), (1001, "theirs", 0.5)]
    for row_id, (k, note, f) in before.items():
        if row_id not in named:
            assert after[row_id] == (k, note, f)
        elif statement == "delete":
            assert row_id not in after
        else:
            assert after[row_id] == (k, "ours", f)


@pytest.mark.spark
def test_an_appended_row_holding_a_named_rows_values_sends_the_statement_back(
    spark_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two of k = 9's three rows are named, told apart by (k, note): a row appended with a
    named row's k and note (another f) would match the MERGE on them. The statement reads
    its rows again at the new version, where only every column tells them apart, and the
    appended row is left as it came."""
    spark = spark_backend.spark
    ident = _table(spark, tmp_path)
    before = _by_row_id(spark, ident)
    named = _row_ids_by_k(before)[9][:2]
    twin = before[named[0]][:2]
    other = f"INSERT INTO {ident} VALUES ({twin[0]}, '{twin[1]}', 7.5)"
    reads = _after_the_read(monkeypatch, lambda: spark.sql(other))
    assert _ours(spark, tmp_path, named) == len(named)
    assert len(reads) == 2
    after = _by_row_id(spark, ident)
    assert [row for i, row in after.items() if i not in before] == [(*twin, 7.5)]
    for row_id, (k, note, f) in before.items():
        assert after[row_id] == (k, "ours" if row_id in named else note, f)
