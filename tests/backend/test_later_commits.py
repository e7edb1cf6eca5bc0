"""Which commits after a row-tracked statement's read let it run (later_commits.py): commits
that only added files, and of those, files holding no row the statement names. The log is
written here as Delta writes it (one JSON action a line); Spark's own logs are read in
tests/backend/test_whole_table.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyairport.backends.spark import file_parts
from pyairport.backends.spark.later_commits import (
    EVERY_ROW,
    Named,
    added,
    holds_named,
    only_appended,
)

COMMIT_INFO = {"commitInfo": {"operation": "WRITE", "operationParameters": {"mode": "Append"}}}
ADD = {"add": {"path": "part-1.parquet", "size": 10, "dataChange": True, "partitionValues": {}}}
ROW_TRACKING = {"domainMetadata": {"domain": "delta.rowTracking", "removed": False}}
STREAM = {"txn": {"appId": "stream", "version": 3}}


def _log(tmp_path: Path, commits: dict[int, list[dict[str, Any]]]) -> Path:
    log = tmp_path / "_delta_log"
    log.mkdir()
    for version, actions in commits.items():
        text = "\n".join(json.dumps(a) for a in actions) + "\n"
        (log / f"{version:020d}.json").write_text(text)
    return log


def test_appends_with_their_bookkeeping_only_appended(tmp_path: Path) -> None:
    log = _log(tmp_path, {4: [COMMIT_INFO, ADD, ROW_TRACKING], 5: [STREAM, COMMIT_INFO, ADD]})
    assert only_appended(log, 3, 5)
    assert only_appended(log, 5, 5)  # nothing after


@pytest.mark.parametrize(
    "action",
    [
        {"remove": {"path": "part-0.parquet", "dataChange": True}},
        {"add": ADD["add"] | {"deletionVector": {"storageType": "u", "cardinality": 1}}},
        {"metaData": {"id": "t", "schemaString": "{}"}},
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7}},
        {"cdc": {"path": "_change_data/c.parquet"}},
        ["not", "an", "action"],
    ],
    ids=["remove", "deletion vector", "metadata", "protocol", "change data", "no object"],
)
def test_anything_more_than_adding_is_not(tmp_path: Path, action: Any) -> None:
    log = _log(tmp_path, {4: [COMMIT_INFO, ADD], 5: [COMMIT_INFO, action]})
    assert only_appended(log, 3, 4)
    assert not only_appended(log, 3, 5)


def test_a_commit_not_in_the_folder_or_not_json_is_not(tmp_path: Path) -> None:
    log = _log(tmp_path, {4: [COMMIT_INFO, ADD]})
    assert not only_appended(log, 3, 5)  # version 5 is elsewhere (a catalog's commits)
    (log / f"{5:020d}.json").write_text("{not json\n")
    assert not only_appended(log, 3, 5)


def _files(paths: list[str], records: list[int | None]) -> file_parts.PartFiles:
    table = pa.table({"path": paths, "num_records": pa.array(records, pa.int64())})
    return file_parts.PartFiles(Path("/nowhere"), pa.schema([("k", pa.int64())]), (), table, {})


def test_the_added_files_are_those_the_earlier_version_had_not() -> None:
    before = _files(["a%20b.parquet", "c.parquet"], [1, 2])
    now = _files(["a b.parquet", "c.parquet", "d.parquet", "e.parquet"], [1, 2, 3, 0])
    assert added(before, now) == [2, 3]


def test_a_statement_naming_every_row_is_held_by_any_added_row() -> None:
    now = _files(["d.parquet", "e.parquet", "f.parquet"], [0, 3, None])
    assert not holds_named(now, [0], EVERY_ROW)
    assert holds_named(now, [0, 1], EVERY_ROW)
    assert holds_named(now, [2], EVERY_ROW)  # a file the log does not count
    assert not holds_named(now, [], Named("k", pa.chunked_array([[1]])))


def test_by_values_only_a_row_holding_one_is_held(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"k": pa.array([5, None, 7], pa.int64())}), tmp_path / "d.parquet")
    pq.write_table(pa.table({"k": pa.array([8], pa.int64())}), tmp_path / "e.parquet")
    table = pa.table({"path": ["d.parquet", "e.parquet"], "num_records": [3, 1]})
    files = file_parts.PartFiles(tmp_path, pa.schema([("k", pa.int64())]), (), table, {})
    named = Named("k", pa.chunked_array([[1, 2, 7]]))
    assert holds_named(files, [0, 1], named)
    assert not holds_named(files, [1], named)
    assert not holds_named(files, [1], Named("k", pa.chunked_array([[9, None]])))
    assert holds_named(files, [0], Named("k", pa.chunked_array([[9, None]])))  # null is null
