"""A timestamp time point read by delta-rs at the version Delta's `TIMESTAMP AS OF` picks
(commit_times.py), and left to Spark wherever the log does not say it without a doubt."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airport_contracts import Context, ScanOptions, TimePoint, TimePointInvalid
from pyairport.backends.spark.commit_times import version_at

EPOCH_MS = 1_796_400_000_000  # 2026-12-04, in milliseconds
MS = timedelta(milliseconds=1)


def _log(tmp_path: Path, times_ms: dict[int, int], checkpoints: tuple[int, ...] = ()) -> Path:
    """A _delta_log folder whose commit files have these modification times."""
    log = tmp_path / "_delta_log"
    log.mkdir(parents=True)
    for version, ms in times_ms.items():
        path = log / f"{version:020d}.json"
        path.write_text("{}\n")
        os.utime(path, ns=(ms * 1_000_000 + 123_456, ms * 1_000_000 + 123_456))
    for version in checkpoints:
        (log / f"{version:020d}.checkpoint.parquet").write_bytes(b"")
    (log / "_last_checkpoint").write_text("{}")  # not a commit: ignored
    return log


def _at(ms: int, micros: int = 0) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC) + timedelta(microseconds=micros)


def test_the_latest_commit_at_or_before_the_moment(tmp_path: Path) -> None:
    log = _log(tmp_path, {0: EPOCH_MS, 1: EPOCH_MS + 10, 2: EPOCH_MS + 20})
    assert version_at(log, _at(EPOCH_MS), {}) == 0
    assert version_at(log, _at(EPOCH_MS + 9, 999), {}) == 0  # the microseconds dropped
    assert version_at(log, _at(EPOCH_MS + 10), {}) == 1
    assert version_at(log, _at(EPOCH_MS + 20), {}) == 2  # the latest, at its own time
    # Delta's errors are Spark's to give: before the first commit, after the latest
    assert version_at(log, _at(EPOCH_MS - 1), {}) is None
    assert version_at(log, _at(EPOCH_MS + 20) + MS, {}) is None


def test_whatever_delta_would_adjust_or_read_elsewhere_is_left_to_spark(tmp_path: Path) -> None:
    equal = _log(tmp_path / "a", {0: EPOCH_MS, 1: EPOCH_MS, 2: EPOCH_MS + 5})
    assert version_at(equal, _at(EPOCH_MS + 7), {}) is None  # times that do not increase
    gap = _log(tmp_path / "b", {0: EPOCH_MS, 2: EPOCH_MS + 5})
    assert version_at(gap, _at(EPOCH_MS + 7), {}) is None
    plain = _log(tmp_path / "c", {0: EPOCH_MS, 1: EPOCH_MS + 5})
    ict = {"delta.enableInCommitTimestamps": "TRUE"}
    assert version_at(plain, _at(EPOCH_MS + 5), ict) is None  # the times are in the commits
    assert version_at(tmp_path / "none", _at(EPOCH_MS), {}) is None
    (tmp_path / "empty").mkdir()
    assert version_at(tmp_path / "empty", _at(EPOCH_MS), {}) is None


def test_a_cleaned_log_answers_from_its_first_checkpoint_on(tmp_path: Path) -> None:
    times = {v: EPOCH_MS + 10 * v for v in range(7, 13)}  # 0-6 cleaned up
    log = _log(tmp_path / "a", times, checkpoints=(5, 10))
    assert version_at(log, _at(EPOCH_MS + 95), {}) is None  # 9: not rebuilt from 10
    assert version_at(log, _at(EPOCH_MS + 100), {}) == 10
    assert version_at(log, _at(EPOCH_MS + 119), {}) == 11
    assert version_at(log, _at(EPOCH_MS + 120), {}) == 12
    kept = _log(tmp_path / "b", times, checkpoints=(6,))  # the commit before the first
    assert version_at(kept, _at(EPOCH_MS + 70), {}) == 7
    none = _log(tmp_path / "c", times)
    assert version_at(none, _at(EPOCH_MS + 120), {}) is None


COLUMNS = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture
def table(spark_backend: Any) -> Any:
    return spark_backend.table("unit", f"t_{uuid.uuid4().hex[:8]}", COLUMNS, id_from_rowid="id")


def _commits(table: Any) -> list[int]:
    """The modification time of each of the table's commits, in milliseconds, by version."""
    log = table.layout.location / "_delta_log"
    return [p.stat().st_mtime_ns // 1_000_000 for p in sorted(log.glob("*.json"))]


def _spark_ids(table: Any, moment: datetime) -> list[int]:
    rows = table.spark.sql(
        f"SELECT id FROM {table.fqn} TIMESTAMP AS OF TIMESTAMP'{moment.isoformat(' ')}'"
    ).collect()
    return sorted(r[0] for r in rows)


def _served_ids(table: Any, moment: datetime) -> list[int]:
    options = ScanOptions(columns=["id"], time_point=_point(moment))
    scanned = table.scan(Context.background(), options)
    return sorted(scanned.read_all().column("id").to_pylist())


def _point(moment: datetime) -> TimePoint:
    return TimePoint(unit="timestamp", value=moment.isoformat())


@pytest.mark.spark
def test_delta_rs_reads_the_version_spark_reads(table: Any) -> None:
    spark = table.spark
    for statement in (
        f"INSERT INTO {table.fqn} (id, name) VALUES (1, 'a'), (2, 'b')",
        f"INSERT INTO {table.fqn} (id, name) VALUES (3, 'c')",
        f"DELETE FROM {table.fqn} WHERE id = 1",
        f"UPDATE {table.fqn} SET id = 20 WHERE id = 2",
    ):
        spark.sql(statement)
    times = _commits(table)
    assert all(b > a for a, b in zip(times, times[1:], strict=False)), times
    layout = table.fresh_layout()[0]
    for version, ms in enumerate(times):
        moments = [_at(ms), _at(ms, 999)]
        if version + 1 < len(times):
            moments.append(_at(times[version + 1] - 1, 999))
        for moment in moments:
            snapshot = table.direct_snapshot(layout, _point(moment))
            assert snapshot is not None and snapshot.version() == version, (version, moment)
            assert _served_ids(table, moment) == _spark_ids(table, moment), (version, moment)


@pytest.mark.spark
def test_spark_still_gives_the_errors_and_the_adjusted_times(table: Any) -> None:
    spark = table.spark
    spark.sql(f"INSERT INTO {table.fqn} (id, name) VALUES (1, 'a')")
    spark.sql(f"INSERT INTO {table.fqn} (id, name) VALUES (2, 'b')")
    times = _commits(table)
    for moment, error in (
        (_at(times[0]) - MS, "DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION"),
        (_at(times[-1]) + MS, "DELTA_TIMESTAMP_GREATER_THAN_COMMIT"),
        (datetime(1, 1, 1, tzinfo=UTC), "DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION"),
        (datetime(9999, 12, 31, 23, 59, 59, 999999, UTC), "DELTA_TIMESTAMP_GREATER_THAN_COMMIT"),
    ):
        with pytest.raises(TimePointInvalid) as refused:
            _served_ids(table, moment)
        assert str(refused.value).startswith(f"invalid time point: [{error}]"), refused.value
    # the last commit's file stamped with its predecessor's time: Delta reads it one
    # millisecond later, and so does the scan, through Spark
    log = sorted((table.layout.location / "_delta_log").glob("*.json"))
    before = log[-2].stat().st_mtime_ns
    os.utime(log[-1], ns=(before, before))
    layout = table.fresh_layout()[0]
    same = _at(before // 1_000_000)
    assert table.direct_snapshot(layout, _point(same)) is None
    for moment in (same, same + MS):
        assert _served_ids(table, moment) == _spark_ids(table, moment), moment
    assert _served_ids(table, same) != _served_ids(table, same + MS)
