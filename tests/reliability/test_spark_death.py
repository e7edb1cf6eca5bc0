"""A server that survives its Spark (issue #45, deviation engine_failure_is_unavailable): when
the Spark JVM under `pyairport serve` dies — killed here in the middle of an INSERT — the
statement fails UNAVAILABLE in one line with nothing committed, the process exits 3 naming
why (so that a supervisor starts it again) and leaves no staged file; a health watcher sees
NOT_SERVING before the process goes; a new server serves the lake as it was, SERVING."""

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
from grpc_health.v1 import health_pb2, health_pb2_grpc

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
            "--no-spark-warm-up",  # the kills below land in the tests' statements
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


def _watch(location: str, seen: list[str]) -> threading.Thread:
    """Watch the server's health ("") until the stream ends, noting each status and when."""
    channel = grpc.insecure_channel(location.removeprefix("grpc://"))
    stub = health_pb2_grpc.HealthStub(channel)

    def watch() -> None:
        try:
            for answer in stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=120):
                seen.append(health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status))
        except grpc.RpcError:
            seen.append("GONE")
        finally:
            channel.close()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def test_a_dead_jvm_fails_the_statement_unavailable_and_the_server_exits(tmp_path: Path) -> None:
    from pyairport.backends.spark.staging_folders import STAGING_ROOT

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
    health: list[str] = []
    watcher = _watch(location, health)
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
            assert health[:1] == ["SERVING"]
            os.kill(_java(process.pid), signal.SIGKILL)
            writer.join(60)
        out, err = process.communicate(timeout=60)
        watcher.join(30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 3, err
    changes = [s for i, s in enumerate(health) if i == 0 or s != health[i - 1]]
    assert changes == ["SERVING", "NOT_SERVING", "GONE"], health
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
        probe = subprocess.run(
            [sys.executable, "-m", "pyairport", "health", "--port", location.rsplit(":", 1)[1]],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (probe.returncode, probe.stdout) == (0, "SERVING\n"), probe.stderr
    finally:
        again.send_signal(signal.SIGTERM)
        again.communicate(timeout=60)
    committed = result if isinstance(result, int) else 0
    assert after in (before, before + 2_000_000)
    assert after == before + committed or (committed == 0 and after in (before, before + 2_000_000))
