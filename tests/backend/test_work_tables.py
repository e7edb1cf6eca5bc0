"""The work tables a statement makes beside its target (a table being built, a table set aside
by REPLACE, rows sent to a remote Spark) never outlive it: a statement that fails settles
them, and a server started after one was killed mid-statement settles what it left."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import pyarrow as pa
import pytest

from airport_contracts import Context
from pyairport.backends.spark.staging_folders import (
    STAGING_ROOT,
    _owner_gone,
    _started,
    dead_stagings,
)
from pyairport.backends.spark.work_tables import discard, note
from pyairport.client import RemoteError
from pyairport.transactions import MemoryTransactionManager

from ..protocol.conftest import serving


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_staging_folder_is_a_dead_servers_by_its_pid_and_start_time() -> None:
    me = os.getpid()
    started = _started(me)
    assert started is not None and started.isdigit()  # Linux: /proc gives it
    assert not _owner_gone(f"{me}-{started}-abc_1")
    # this pid, started at another time: a container's earlier server, restarted with its pid
    assert _owner_gone(f"{me}-{int(started) + 1}-abc_1")
    assert _owner_gone(f"{_dead_pid()}-{started}-abc_1")
    assert not _owner_gone(f"{me}-abc_1")  # a folder of an older server: its pid is all it has
    assert not _owner_gone("lost+found")


def test_a_dead_servers_folder_of_another_user_is_not_this_servers_to_settle() -> None:
    """STAGING_ROOT is in the host's shared temporary folder: anyone may make a folder there
    that looks like a dead server's, to have this server act on notes of theirs."""
    if os.getuid() != 0:
        pytest.skip("making a folder of another user needs root")
    folder = STAGING_ROOT / f"{_dead_pid()}-1-theirs"
    folder.mkdir(parents=True)
    try:
        os.chown(folder, 65534, 65534)
        assert folder not in dead_stagings()
        os.chown(folder, os.getuid(), os.getgid())
        assert folder in dead_stagings()
    finally:
        shutil.rmtree(folder)


def _table(spark: Any, lake: Path, schema: str, name: str, ids: list[int]) -> None:
    path = lake / schema / name
    spark.createDataFrame([(i,) for i in ids], "id BIGINT").write.format("delta").save(str(path))


def _ids(spark: Any, path: Path) -> list[int]:
    return sorted(r[0] for r in spark.sql(f"SELECT id FROM delta.`{path}`").collect())


@pytest.mark.spark
def test_a_server_started_after_one_was_killed_settles_the_work_tables_it_left(
    spark_backend: Any, tmp_path: Path
) -> None:
    from pyairport.backends.spark import SparkBackend

    spark = spark_backend.spark
    lake = (tmp_path / "lake").resolve()
    _table(spark, lake, "sales", "t", [1, 2])
    # The folder of a server killed mid-statement: the work tables it noted, made as it made
    # them, and a staged file.
    dead = STAGING_ROOT / f"{_dead_pid()}-1-killed"
    dead.mkdir(parents=True)
    killed = SimpleNamespace(staging=dead, place=f"warehouse {lake}")
    sent = note(killed, "rows", "sales")  # rows sent to a remote Spark
    built = note(killed, "new", "sales")  # a CREATE's table, not yet moved into place
    aside = note(killed, "old", "sales", replaces="kept")  # REPLACE set kept aside, then died
    done = note(killed, "old", "sales", replaces="t")  # the new t was in place already
    for work, ids in ((sent, [7]), (built, []), (aside, [3, 4]), (done, [5])):
        _table(spark, lake, "sales", work.name, ids)
    never = note(killed, "new", "sales")  # noted, killed before it was made
    (dead / "statement-1").mkdir()
    (dead / "statement-1" / "rows-0.parquet").write_bytes(b"staged")
    other = note(SimpleNamespace(staging=dead, place="warehouse /elsewhere"), "rows", "x")
    # planted by someone who wants t gone: a note names only a work table
    planted = {"lake": killed.place, "schema": "sales", "name": "t", "replaces": None}
    (dead / "work-planted.json").write_text(json.dumps(planted))
    try:
        backend = SparkBackend(spark, lake)
        try:
            folders = sorted(p.name for p in (lake / "sales").iterdir())
            assert folders == ["kept", "t"], folders
            assert _ids(spark, lake / "sales" / "kept") == [3, 4]
            assert _ids(spark, lake / "sales" / "t") == [1, 2]
            ctx = Context.background()
            served = {t.name() for s in backend.catalog.schemas(ctx) for t in s.tables(ctx)}
            assert served == {"kept", "t"}
            # another warehouse's note stays for its own server; nothing else of the folder
            assert [p.name for p in dead.iterdir()] == [f"work-{other.name}.json"]
            assert json.loads((dead / f"work-{other.name}.json").read_text())["schema"] == "x"
            assert never.name not in str(list(lake.rglob("*")))
        finally:
            backend.close()
        assert not backend.staging.exists()
    finally:
        shutil.rmtree(dead, ignore_errors=True)


@pytest.mark.spark
def test_a_replace_whose_last_move_fails_puts_the_old_table_back(
    spark_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyairport.backends.spark import SparkBackend

    spark = spark_backend.spark
    lake = (tmp_path / "lake").resolve()
    _table(spark, lake, "sales", "t", [1, 2])
    backend = SparkBackend(spark, lake)
    move = backend.move_table

    def failing(schema_name: str, old_name: str, new_name: str) -> str:
        if old_name.startswith("pyairport_ddl_new_"):
            raise OSError("disk gone")
        return move(schema_name, old_name, new_name)

    monkeypatch.setattr(backend, "move_table", failing)
    try:
        with serving(backend.catalog, MemoryTransactionManager()) as running:
            client = running.client
            with pytest.raises(RemoteError) as refused:
                client.create_table("sales", "t", pa.schema([pa.field("x", pa.int8())]), "replace")
            assert refused.value.code == grpc.StatusCode.INTERNAL, refused.value
            assert str(lake) not in refused.value.message
            assert sorted(p.name for p in (lake / "sales").iterdir()) == ["t"]
            ids = client.scan("sales", "t", ["id"]).read_all().column("id").to_pylist()
            assert sorted(ids) == [1, 2]
            assert not list(backend.staging.glob("work-*.json"))
    finally:
        backend.close()


class _Recorded(SimpleNamespace):
    """A lake that records what is asked of it, for work tables settled without Spark."""

    def __init__(self, staging: Path) -> None:
        super().__init__(staging=staging, place="warehouse /lake", asked=[])

    def exists(self, schema: str, name: str) -> bool:
        self.asked.append(("exists", schema, name))
        return True

    def remove_table(self, schema: str, name: str) -> None:
        self.asked.append(("remove_table", schema, name))

    def ident_for(self, schema: str, name: str) -> str:
        return f"{schema}.{name}"


def test_a_table_set_aside_is_removed_without_a_look_once_the_new_one_has_its_name(
    tmp_path: Path,
) -> None:
    lake = _Recorded(tmp_path)
    aside = note(lake, "old", "sales", replaces="t")
    discard(lake, aside)
    assert lake.asked == [("remove_table", "sales", aside.name)]
    assert not list(tmp_path.glob("work-*.json"))


def test_rows_never_sent_leave_no_note_and_remove_no_table(tmp_path: Path) -> None:
    from pyairport.backends.spark.sent_rows import sent_rows

    lake = _Recorded(tmp_path / "staging")
    lake.staging.mkdir()
    (tmp_path / "staged").mkdir()
    with sent_rows(lake, "sales", tmp_path / "staged") as source:
        assert source is None
        assert len(list(lake.staging.glob("work-*.json"))) == 1
    assert lake.asked == []
    assert not list(lake.staging.glob("work-*.json"))
