"""A server that survives its Spark (issue #45, deviation engine_failure_is_unavailable): when
the Spark JVM under `pyairport serve` dies — killed here in the middle of an INSERT — the
statement fails UNAVAILABLE in one line with nothing committed, the process exits 3 naming
why (so that a supervisor starts it again) and leaves no staged file; a new server serves the
lake as it was."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pyarrow as pa
import pytest

from pyairport.client import AirportClient, RemoteError

from ..protocol.conftest import assert_error_row

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
JARS = ROOT / ".cache" / "jars"


def _serve(warehouse: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "pyairport", "serve", "--port", "0"),
            *("--backend", "spark", "--warehouse", str(warehouse), "--demo"),
            *("--jars-dir", str(JARS), "--spark-conf", "spark.driver.memory=1g"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.match(r"pyairport serving on (grpc://\S+) ", line)
    if not match:
        process.kill()
        raise AssertionError(line + (process.stderr.read() if process.stderr else ""))
    return process, match.group(1)


def _descendants(pid: int) -> list[int]:
    """The processes below pid (Spark's JVM: spark-submit's java)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _java(pid: int) -> int:
    for child in _descendants(pid):
        try:
            if "java" in Path(f"/proc/{child}/comm").read_text():
                return child
        except OSError:
            continue
    raise AssertionError("no JVM under the server")


def test_a_dead_jvm_fails_the_statement_unavailable_and_the_server_exits(tmp_path: Path) -> None:
    from pyairport.backends.spark.backend import STAGING_ROOT

    warehouse = tmp_path / "lake"
    process, location = _serve(warehouse)
    rows = pa.table(
        {
            "id": pa.array(range(2_000_000), pa.int64()),
            "name": pa.array(["n"] * 2_000_000),
            "email": pa.array(["e"] * 2_000_000),
        }
    )
    outcome: list[BaseException | int] = []
    try:
        with AirportClient(location) as client:
            before = client.scan("dml_schema", "users").read_all().num_rows

            def insert() -> None:
                try:
                    outcome.append(client.insert("dml_schema", "users", rows).total_changed)
                except (RemoteError, grpc.RpcError) as error:
                    outcome.append(error)

            writer = threading.Thread(target=insert)
            writer.start()
            time.sleep(1.5)  # the rows are arriving, or being staged and committed
            os.kill(_java(process.pid), signal.SIGKILL)
            writer.join(60)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 3, err
    (reason,) = [line for line in err.splitlines() if line.startswith("pyairport: error:")]
    assert reason.startswith("pyairport: error: Spark's JVM exited (status ")
    (result,) = outcome
    if isinstance(result, RemoteError) and result.code != grpc.StatusCode.CANCELLED:
        params = {"error": "Spark's JVM has stopped; the server is restarting"}
        assert_error_row("engine_unavailable", params, result.code, result.message)
    assert not [p for p in STAGING_ROOT.glob(f"{process.pid}-*")], "staged files left behind"
    # a new server (what the supervisor starts) serves the lake: the INSERT all or nothing
    again, location = _serve(warehouse)
    try:
        with AirportClient(location) as client:
            after = client.scan("dml_schema", "users").read_all().num_rows
    finally:
        again.send_signal(signal.SIGTERM)
        again.communicate(timeout=60)
    committed = result if isinstance(result, int) else 0
    assert after in (before, before + 2_000_000)
    assert after == before + committed or (committed == 0 and after in (before, before + 2_000_000))
