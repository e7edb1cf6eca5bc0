"""table_changes reads a range of the change data feed in bounded pieces
(backends/spark/change_pieces.py), each one Spark query, with the rows Spark's whole read has."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airport_contracts import Context
from pyairport.backends.spark import change_pieces
from pyairport.backends.spark.change_pieces import Piece, changed_rows, pieces


def test_a_commits_rows_from_its_metrics_an_update_twice() -> None:
    assert changed_rows({"numOutputRows": "1000", "numFiles": "3"}) == 1000
    assert changed_rows({"numUpdatedRows": "10", "numCopiedRows": "90"}) == 110
    assert changed_rows({"numTargetRowsUpdated": "5", "numTargetRowsDeleted": "2"}) == 12
    assert changed_rows({}) is None
    assert changed_rows(None) is None


def test_commits_share_a_piece_within_the_bound_and_a_large_one_is_split() -> None:
    commits = [(3, 40), (4, 50), (5, 30), (6, 250), (7, 10), (8, None), (9, 5)]
    assert pieces(3, None, commits, 100) == [
        Piece(3, 4),  # 90 rows
        Piece(5, 5),  # 30 + 250 is over: the large one alone
        Piece(6, 6, parts=3),
        Piece(7, 7),
        Piece(8, 8),  # no metrics: alone
        Piece(9, None),  # to the latest, as asked
    ]


def test_the_pieces_cover_the_range_asked_for_exactly() -> None:
    assert pieces(2, 9, [(3, 1), (5, 1)], 100) == [Piece(2, 9)]
    assert pieces(0, 7, [(0, 60), (1, 60)], 100) == [Piece(0, 0), Piece(1, 7)]
    # no commit in the range (past the latest): the range as asked, for Spark to judge
    assert pieces(99, None, [], 100) == [Piece(99, None)]


@pytest.mark.spark
@pytest.mark.parametrize("session", ["classic", "connect"])
def test_table_changes_streams_piece_by_piece_with_sparks_rows(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, session: str
) -> None:
    """Over embedded Spark and Spark Connect: a commit too large for one piece is split by
    a hash of its rows, built with the functions of the session's kind."""
    from pyairport.backends.spark import SparkBackend
    from pyairport.backends.spark.lake_functions import LakeFunctions

    connect = session == "connect"
    spark = request.getfixturevalue("spark_connect_backend" if connect else "spark_backend").spark
    ident = f"delta.`{tmp_path / 's' / 'events'}`"
    spark.sql(
        f"CREATE TABLE {ident} (id BIGINT, tags MAP<STRING, STRING>, note STRING) USING delta"
        " TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"
    )
    spark.sql(f"INSERT INTO {ident} SELECT id, map('k', 'v'), 'n' FROM range(0, 300)")
    spark.sql(f"INSERT INTO {ident} VALUES (1000, map(), 'a'), (1001, NULL, 'b')")
    spark.sql(f"UPDATE {ident} SET note = 'changed' WHERE id < 20")
    spark.sql(f"DELETE FROM {ident} WHERE id >= 1000")
    monkeypatch.setattr(change_pieces, "PIECE_ROWS", 64)
    queries: list[int] = []
    backend = SparkBackend(spark, tmp_path, remote="sc://127.0.0.1" if connect else None)
    try:
        functions = LakeFunctions(backend)
        original = functions._changes

        def counted(*args: Any) -> Any:
            frame = original(*args)
            queries.append(frame.count())
            return frame

        monkeypatch.setattr(functions, "_changes", counted)
        got = functions.table_changes.execute(Context.background(), ["s.events", 1, None])
        got_rows = got.read_all()
    finally:
        backend.close()
    want = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", 1)
        .load(str(tmp_path / "s" / "events"))
        .toArrow()
    )

    def rows(table: pa.Table) -> list[tuple[Any, ...]]:
        keep = ["id", "note", "_change_type", "_commit_version"]
        return sorted(tuple(r.values()) for r in table.select(keep).to_pylist())

    assert got_rows.num_rows == want.num_rows == 300 + 2 + 40 + 2
    assert rows(got_rows) == rows(want)
    versions = got_rows.column("_commit_version").to_pylist()
    assert versions == sorted(versions)  # in commit order
    assert len(queries) > 5 and max(queries) <= 100  # the largest commit has 300
