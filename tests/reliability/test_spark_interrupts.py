"""A statement whose client left: its Spark work stops and nothing is committed
(backends/spark/interrupts.py). A DuckDB user's Ctrl-C on a large UPDATE, or a client whose
process died, must not change the table a minute later."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from pyairport.client import AirportClient
from pyairport.server import AirportServer, ServerConfig

pytestmark = pytest.mark.spark

ROWS = 1_000_000


def _versions(table: Path) -> list[str]:
    return sorted(p.name for p in (table / "_delta_log").glob("*.json"))


def _data_files(table: Path) -> set[Path]:
    return {p for p in table.rglob("*") if p.is_file() and "_delta_log" not in p.parts}


def test_an_update_whose_client_went_away_stops_and_commits_nothing(
    spark_backend: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Without the interrupt, Spark's MERGE ran on for ten seconds after the client left and
    committed the UPDATE (measured on this machine): here its jobs stop within moments, and
    no version is written while we watch."""
    from pyairport.backends.spark import SparkBackend

    spark = spark_backend.spark
    lake = tmp_path / "lake"
    lake.mkdir()
    backend = SparkBackend(spark, lake)
    server = AirportServer(backend.catalog, None, ServerConfig(port=0)).start()
    client = AirportClient(server.location)
    leaving = AirportClient(server.location)
    try:
        columns = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.float64())])
        client.create_schema("s")
        client.create_table("s", "big", columns)
        ids = np.arange(ROWS, dtype=np.int64)
        client.insert("s", "big", pa.table({"id": ids, "v": np.zeros(ROWS)}, columns))
        rowids = client.scan("s", "big", ["rowid"]).read_all().column("rowid")
        before = _versions(lake / "s" / "big")
        files_before = _data_files(lake / "s" / "big")
        changes = pa.table({"v": np.ones(ROWS), "rowid": rowids})
        outcome: list[BaseException | None] = []

        def update() -> None:
            try:
                leaving.update("s", "big", changes)
                outcome.append(None)
            except BaseException as exc:  # the call ends with the channel: any error
                outcome.append(exc)

        statement = threading.Thread(target=update, daemon=True)
        statement.start()
        tracker = spark.sparkContext.statusTracker()
        deadline = time.monotonic() + 60
        while not tracker.getActiveJobsIds() and not outcome:
            assert time.monotonic() < deadline, "the UPDATE never reached Spark"
            time.sleep(0.02)
        assert not outcome, "the UPDATE finished before it could be left"
        caplog.set_level(logging.INFO, logger="pyairport.spark")
        leaving.close()  # the client goes away mid-statement
        stopped_by = time.monotonic() + 10
        while "stopped the Spark work of a statement whose call ended" not in caplog.text:
            assert time.monotonic() < stopped_by, "Spark ran on after the client left"
            time.sleep(0.05)
        quiet_until = time.monotonic() + 5
        while time.monotonic() < quiet_until:  # no later phase of the MERGE commits
            assert _versions(lake / "s" / "big") == before
            time.sleep(0.1)
        assert not tracker.getActiveJobsIds()
        assert _data_files(lake / "s" / "big") == files_before
        statement.join(30)
        values = client.scan("s", "big", ["v"]).read_all().column("v")
        assert len(values) == ROWS and pa.compute.max(values).as_py() == 0.0
        one = pa.table({"v": [5.0], "rowid": rowids.slice(0, 1)})
        assert client.update("s", "big", one).total_changed == 1  # the server goes on
    finally:
        client.close()
        leaving.close()
        server.stop(0)
        backend.close()
