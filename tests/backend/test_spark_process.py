"""`pyairport serve --backend spark` as users run it: data survives a restart, a server
killed with SIGKILL in the middle of an INSERT comes back at its last commit, and Spark's
warm-up and its data workers run beside the first clients and leave nothing behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.flight as flight
import pytest

from pyairport.client import AirportClient
from pyairport.client.remote_catalog import decode_endpoints, endpoints_request

from ..conftest import JARS

pytestmark = pytest.mark.spark


def _serve(warehouse: Path, errors: list[str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """A `pyairport serve` of warehouse in a process group of its own, and where it serves;
    what it logs goes into errors, where given."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pyairport",
            "serve",
            "--backend",
            "spark",
            "--port",
            "0",
            "--warehouse",
            str(warehouse),
            "--jars-dir",
            str(JARS),
            "--spark-master",
            "local[2]",
            "--no-transactions",
            "--demo",
            "--no-spark-warm-up",  # the warm-up has a test of its own, below
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if errors is None else subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the Spark JVM goes down with it
    )
    assert process.stdout is not None
    if errors is not None:
        threading.Thread(target=lambda: errors.extend(process.stderr or ()), daemon=True).start()
    line = process.stdout.readline()
    match = re.fullmatch(
        r"pyairport serving on (grpc://\S+) \(backend spark; catalogs [^)]*\)\n", line
    )
    if not match:
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError(f"server did not start: {line!r}")
    # Keep reading what it (and the Spark JVM that shares its stdout) prints: a full pipe
    # would block the writer, and with it the server's shutdown.
    threading.Thread(target=process.stdout.read, daemon=True).start()
    return process, match.group(1)


def _users(n: int, start: int = 0) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({"id": ids, "name": pa.array(["n"] * n), "email": pa.array(["e"] * n)})


def test_sigkill_mid_insert_leaves_the_last_commit_and_a_writable_table(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    process, location = _serve(warehouse)
    try:
        with AirportClient(location) as client:
            assert client.insert("dml_schema", "users", _users(3)).total_changed == 3
            outcome: list[object] = []
            streaming = threading.Event()

            def big_insert() -> None:
                def batches():  # a DuckDB-shaped INSERT that is still streaming when killed
                    for i in range(2000):
                        streaming.set()
                        yield from _users(2048, 1000 + i * 2048).to_batches()

                try:
                    first = next(iter(_users(1).to_batches()))
                    outcome.append(
                        client.insert(
                            "dml_schema",
                            "users",
                            pa.RecordBatchReader.from_batches(first.schema, batches()),
                        )
                    )
                except Exception as exc:
                    outcome.append(exc)

            worker = threading.Thread(target=big_insert)
            worker.start()
            assert streaming.wait(60)
            threading.Event().wait(2.0)  # let the server stage part of the input
            killed = process.pid  # the server itself (no shell in between)
            os.killpg(process.pid, signal.SIGKILL)
            worker.join(60)
            assert outcome and isinstance(outcome[0], Exception), (
                "the insert finished before the kill"
            )
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    process, location = _serve(warehouse)
    try:
        with AirportClient(location) as client:
            assert client.insert("dml_schema", "users", _users(1, 500)).total_changed == 1
        from pyairport.backends.spark.staging_folders import STAGING_ROOT

        assert not list(STAGING_ROOT.glob(f"{killed}-*")), "the killed server's staging stays"
        assert not (warehouse / ".pyairport-staging").exists()  # nothing staged in the lake
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)

    logged: list[str] = []
    process, location = _serve(warehouse, logged)  # a clean restart keeps everything committed
    try:
        from pyairport.client import AirportClient as Client

        with Client(location) as client:
            # every committed row, by the rowids a scan finds (the restarted servers claimed
            # blocks of their own: the row inserted after the kill is not rowid 4)
            rowids = client.scan("dml_schema", "users", ["rowid"]).read_all().column("rowid")
            assert len(rowids) == 4
            answer = client.delete("dml_schema", "users", rowids.to_pylist(), returning=True)
            assert answer.returning is not None
            assert sorted(answer.returning.column("id").to_pylist()) == [0, 1, 2, 500]
    finally:
        # as systemd stops a service: the stop signal to every process of its group, Spark's
        # JVM too, which may go first; a stop all the same, no traceback
        os.killpg(process.pid, signal.SIGTERM)
        status = process.wait(60)
    assert status == 0, "".join(logged)
    assert not [line for line in logged if "Traceback" in line], "".join(logged)


def test_serve_warms_spark_up_and_runs_its_data_workers_and_leaves_nothing(tmp_path: Path) -> None:
    """Also data workers: one of its own (`--data-workers 1`), named at start, one an
    operator started (`pyairport worker`, `--data-worker` with its `--data-key-file`) and one
    that joins the running server (`pyairport worker --join`); a scan's endpoints go round
    them and each serves the rows; the server's own goes with it."""
    temp = tmp_path / "temp"  # the server's temporary folder: the warm-up's tables go there
    temp.mkdir()
    warehouse = tmp_path / "warehouse"
    key = tmp_path / "data.key"
    key.write_text(os.urandom(32).hex())
    key.chmod(0o600)
    remote = subprocess.Popen(
        [sys.executable, "-m", "pyairport", "worker", "--listen", "grpc://127.0.0.1:0"]
        + ["--key-file", str(key)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert remote.stdout is not None
    remote_at = remote.stdout.readline().removeprefix("pyairport worker serving on ").strip()
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "pyairport", "serve", "--backend", "spark", "--port", "0"),
            *("--warehouse", str(warehouse), "--jars-dir", str(JARS), "--demo"),
            *("--data-workers", "1", "--data-worker", remote_at, "--data-key-file", str(key)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=dict(os.environ, TMPDIR=str(temp)),
    )
    assert process.stdout is not None and process.stderr is not None
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(process.stdout or ()), daemon=True).start()
    errors: list[str] = []
    threading.Thread(target=lambda: errors.extend(process.stderr or ()), daemon=True).start()
    joining: subprocess.Popen[str] | None = None
    try:
        deadline = time.monotonic() + 120
        while not lines and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
        match = re.match(r"pyairport serving on (grpc://\S+) ", lines[0] if lines else "")
        assert match, "".join(lines + errors)
        worker = re.fullmatch(r"pyairport data worker on (grpc\+unix://\S+)\n", lines[1])
        assert worker, "".join(lines + errors)
        joining = subprocess.Popen(
            [sys.executable, "-m", "pyairport", "worker", "--listen", "grpc://127.0.0.1:0"]
            + ["--key-file", str(key), "--join", match.group(1)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert joining.stdout is not None
        joined_at = joining.stdout.readline().removeprefix("pyairport worker serving on ").strip()
        with AirportClient(match.group(1)) as client:  # served while Spark warms up
            assert client.insert("dml_schema", "users", _users(2)).total_changed == 2
            request = endpoints_request("dml_schema", "users", [0], "")
            deadline = time.monotonic() + 30
            while joined_at not in _endpoint_uris(client, request):
                assert time.monotonic() < deadline, "the joining worker is never named"
                time.sleep(0.2)
            served_at = set()
            for _ in range(3):
                (endpoint,) = decode_endpoints(client.action("endpoints", request)[0])
                served_at.add(endpoint.location[0].uri)
                with flight.connect(endpoint.location[0].uri) as at_worker:
                    read = at_worker.do_get(flight.Ticket(endpoint.ticket.ticket)).read_all()
                assert sorted(read.column("id").to_pylist()) == [0, 1]
            assert served_at == {worker.group(1), remote_at, joined_at}
            joining.send_signal(signal.SIGTERM)
            assert joining.wait(20) == 0
            assert all(joined_at not in _endpoint_uris(client, request) for _ in range(3))
            deadline = time.monotonic() + 300
            while not any("warmed up" in line for line in lines):
                assert time.monotonic() < deadline and process.poll() is None, "".join(errors)
                time.sleep(0.2)
            assert re.fullmatch(r"pyairport: Spark warmed up in \d+\.\d s\n", lines[2])
            assert not [e for e in errors if "warm-up" in e]
            assert "warm_up" not in {schema.name for schema in client.list_schemas()}
            assert client.scan("dml_schema", "users").read_all().num_rows == 2
        assert sorted(p.name for p in warehouse.iterdir()) == [
            "batch_schema",
            "demo_schema",
            "dml_schema",
        ]
        folders = sorted(p.name for p in temp.iterdir())  # no scratch folder
        assert folders[0] == "pyairport-staging" and folders[1].startswith("pyairport-workers-")
        assert len(folders) == 2
        assert len(list((temp / "pyairport-staging").iterdir())) == 1  # the server's own
    finally:
        process.send_signal(signal.SIGTERM)
        remote.send_signal(signal.SIGTERM)
        if joining is not None and joining.poll() is None:
            joining.kill()
        assert remote.wait(20) == 0
        assert process.wait(60) == 0
    assert [p.name for p in temp.iterdir()] == ["pyairport-staging"]  # the worker's went too


def _endpoint_uris(client: AirportClient, request: bytes) -> set[str]:
    return {e.location[0].uri for e in decode_endpoints(client.action("endpoints", request)[0])}
