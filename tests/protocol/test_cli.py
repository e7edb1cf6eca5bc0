"""`pyairport serve`: prints where it listens, serves, stops cleanly, fails in one line."""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pytest

from pyairport.client import AirportClient, RemoteError

from ..waiting import until

PYAIRPORT = [sys.executable, "-m", "pyairport"]
T = TypeVar("T")


def _start(*args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [*PYAIRPORT, "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.fullmatch(
        r"pyairport serving on (grpc://127\.0\.0\.1:\d+) \(backend memory; catalogs [^)]*\)\n", line
    )
    if not match:
        process.kill()  # else reading its stderr waits for a server that keeps serving
        raise AssertionError(line + (process.stderr.read() if process.stderr else ""))
    return process, match.group(1)


def test_serve_answers_and_stops_cleanly_on_sigterm() -> None:
    process, location = _start()
    try:
        with AirportClient(location) as client:
            data = pa.table({"id": pa.array([1], pa.int64()), "name": ["a"], "email": ["b"]})
            assert client.insert("dml_schema", "users", data).total_changed == 1
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert "shutting down" in out
    assert "Traceback" not in err


def test_the_catalog_name_is_what_duckdb_attaches() -> None:
    """`serve --catalog-name test1`: DuckDB's ATTACH 'test1' lists it; ATTACH '' does not."""
    process, location = _start("--catalog-name", "test1")
    try:
        with AirportClient(location) as client:
            assert {s.name for s in client.list_schemas("test1")} >= {"dml_schema"}
            with pytest.raises(RemoteError, match='expected "test1", got ""'):
                client.list_schemas("")
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)


def test_sigint_also_stops_it() -> None:
    process, _ = _start()
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=20)
    assert process.returncode == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="tgkill is Linux's")
def test_sigterm_that_lands_on_another_thread_still_stops_it() -> None:
    """The kernel may hand a process's SIGTERM to any of its threads (gRPC's, Spark's). Python
    runs the handler only in the main thread, which must therefore not sleep unwakeably."""
    process, _ = _start()
    try:
        others = [int(t) for t in os.listdir(f"/proc/{process.pid}/task") if int(t) != process.pid]
        assert others, "the server runs gRPC threads"
        ctypes.CDLL(None, use_errno=True).tgkill(process.pid, others[-1], signal.SIGTERM)
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert "shutting down" in out


def test_bad_flag_is_one_line() -> None:
    done = subprocess.run(
        [*PYAIRPORT, "serve", "--bogus"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "unrecognized arguments: --bogus" in done.stderr


def test_port_in_use_is_one_line() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [*PYAIRPORT, "serve", "--port", str(port)], capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 1
    assert (
        done.stderr
        == f"pyairport: error: cannot listen on 127.0.0.1:{port}: address in use or not available\n"
    )


def test_the_data_socket_is_announced_and_goes_at_stop() -> None:
    process, location = _start("--data-socket", "auto")
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.fullmatch(r"pyairport scans for this host on grpc\+unix://(/\S+)\n", line)
        assert match, line
        socket_path = Path(match.group(1))
        assert socket_path.is_socket()
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert not socket_path.parent.exists()


def test_a_data_socket_it_cannot_make_is_one_line(tmp_path: Path) -> None:
    where = tmp_path / "missing" / "data.sock"
    done = _serve_refused("--data-socket", str(where))
    assert done.returncode == 1
    assert done.stderr == (
        f"pyairport: error: cannot listen on {where}: no such folder, not a socket, or no"
        " permission\n"
    )


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "pyairport"
    assert script.exists() and os.access(script, os.X_OK)


@pytest.mark.skipif(
    importlib.util.find_spec("pyspark") is not None, reason="pyspark is installed here"
)
def test_spark_without_pyspark_is_one_line(tmp_path: Path) -> None:
    """An installation without the [spark] extra (as `make test-python` has) says what to
    install."""
    done = subprocess.run(
        [*PYAIRPORT, "serve", "--backend", "spark", "--warehouse", str(tmp_path / "w")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (
        1,
        "pyairport: error: pyspark is not installed: pip install 'pyairport[spark]'\n",
    )


@pytest.mark.spark
def test_spark_without_delta_jars_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            *PYAIRPORT,
            "serve",
            "--backend",
            "spark",
            "--jars-dir",
            str(tmp_path / "none"),
            "--warehouse",
            str(tmp_path / "w"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert (
        done.stderr
        == f"pyairport: error: Delta Lake jars not found in {tmp_path / 'none'}/ (delta-spark_*.jar): run `make jars` (uses Maven)\n"
    )


@pytest.mark.spark
def test_spark_that_cannot_fetch_delta_is_one_line(tmp_path: Path) -> None:
    """Without --jars-dir Spark fetches Delta from Maven Central; when it cannot (here: Ivy
    told to look only in an empty folder), one line says what to do, not Ivy's report and a
    JVM stack trace."""
    (tmp_path / "repo").mkdir()
    settings = tmp_path / "ivysettings.xml"
    settings.write_text(
        '<ivysettings><settings defaultResolver="nowhere"/><resolvers>'
        f'<filesystem name="nowhere"><artifact pattern="{tmp_path}/repo/[artifact].[ext]"/>'
        "</filesystem></resolvers></ivysettings>"
    )
    (tmp_path / "spark-defaults.conf").write_text(
        f"spark.jars.ivySettings {settings}\nspark.jars.ivy {tmp_path / 'ivy'}\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYAIRPORT_JARS"}
    env["SPARK_CONF_DIR"] = str(tmp_path)
    done = subprocess.run(
        [*PYAIRPORT, "serve", "--backend", "spark", "--warehouse", str(tmp_path / "w")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 1
    delta, spark = version("delta-spark"), version("pyspark")
    assert done.stderr == (
        f"pyairport: error: Spark could not fetch Delta Lake {delta} for Spark {spark} from"
        " Maven Central: run `make jars` and pass --jars-dir .cache/jars\n"
    )
    assert done.stdout == ""


@pytest.mark.spark
def test_spark_without_java_is_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(Path(sys.executable).parent)  # python, but no java
    done = subprocess.run(
        [*PYAIRPORT, "serve", "--backend", "spark", "--warehouse", str(tmp_path / "w")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 1
    assert (
        done.stderr
        == "pyairport: error: Java not found: Spark needs a JDK (17 or newer) on PATH or in JAVA_HOME\n"
    )


def test_transaction_timeout_aborts_a_transaction_nobody_finished() -> None:
    process, location = _start("--transaction-timeout", "1")
    try:
        with AirportClient(location) as client:
            old = client.begin_transaction()
            time.sleep(1.3)
            young = client.begin_transaction()
            assert old is not None and young is not None
            assert client.transaction_status(old) == ("aborted", True)
            assert client.transaction_status(young) == ("active", True)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)


@pytest.mark.parametrize("value", ["-1", "nan"])
def test_negative_transaction_timeout_is_one_line(value: str) -> None:
    done = subprocess.run(
        [*PYAIRPORT, "serve", f"--transaction-timeout={value}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == "pyairport: error: --transaction-timeout must be 0 or more\n"


def test_a_team_server_from_flags_reloads_on_sighup(tmp_path: Path) -> None:
    """`serve --catalog-name sales --add-catalog hr --tokens-file F --policy P`: identities and
    grants as the files say, a log line per call naming its identity, an audit line per
    statement; on SIGHUP the files are read again."""
    from ..team import make_team

    team = make_team(tmp_path)
    process, location = _start(
        "--catalog-name",
        "sales",
        "--add-catalog",
        "hr",
        "--tokens-file",
        str(team.tokens_file),
        "--policy",
        str(team.policy_file),
        "--log-level",
        "DEBUG",
    )
    data = pa.table({"id": pa.array([1], pa.int64()), "name": ["a"], "email": ["b"]})
    try:
        with AirportClient(location, token=team.tokens["reader"], catalog="sales") as reader:
            assert {s.name for s in reader.list_schemas("sales")} >= {"dml_schema"}
            with pytest.raises(RemoteError, match='"reader" has no write grant'):
                reader.insert("dml_schema", "users", data)
            # the policy now lets reader write sales.dml_schema
            grant = '\n[[grant]]\nidentity = "reader"\ncatalog = "sales"\nschemas = ["dml_schema"]\nrights = ["write"]\n'
            team.policy_file.write_text(team.policy_file.read_text() + grant)
            process.send_signal(signal.SIGHUP)
            inserted = _once_reloaded(lambda: reader.insert("dml_schema", "users", data))
            assert inserted.total_changed == 1
        with AirportClient(location, token=team.tokens["admin"], catalog="hr") as admin:
            assert {s.name for s in admin.list_schemas("hr")} >= {"dml_schema"}
            # reader's token revoked: gone from the file, and SIGHUP
            kept = [
                line
                for line in team.tokens_file.read_text().splitlines()
                if not line.startswith("reader ")
            ]
            team.tokens_file.write_text("\n".join(kept) + "\n")
            process.send_signal(signal.SIGHUP)
            with AirportClient(location, token=team.tokens["reader"], catalog="sales") as gone:

                def refused() -> RemoteError:
                    # not pytest.raises: its "DID NOT RAISE" is no AssertionError, so
                    # _once_reloaded would not wait for the reload
                    try:
                        gone.list_schemas("sales")
                    except RemoteError as error:
                        return error
                    raise AssertionError("the revoked token is still served")

                assert _once_reloaded(refused).message == "unauthenticated"
            assert {s.name for s in admin.list_schemas("hr")} >= {"dml_schema"}
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert "reloaded Policy" in err and "reloaded TokensFile" in err
    assert 'reader insert "sales"."dml_schema"."users" rows=1 ok' in err  # the audit line
    assert "[reader trace=- session=-]" in err  # every line of a call names its identity
    assert team.tokens["reader"] not in err and team.tokens["admin"] not in err


def _once_reloaded(call: Callable[[], T]) -> T:
    """call's result once the server has acted on its SIGHUP (within 10 s): until then call
    raises (a RemoteError, or the AssertionError of a refusal that did not come yet)."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return call()
        except (RemoteError, AssertionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _serve_refused(*args: str) -> subprocess.CompletedProcess[str]:
    """`pyairport serve --port 0 ARGS` that must not start: its exit and its stderr."""
    return subprocess.run(
        [*PYAIRPORT, "serve", "--port", "0", *args], capture_output=True, text=True, timeout=60
    )


def test_hash_token_prints_what_a_tokens_file_keeps() -> None:
    done = subprocess.run(
        [*PYAIRPORT, "hash-token"], input="s3cret\n", capture_output=True, text=True, timeout=60
    )
    expected = "sha256:" + hashlib.sha256(b"s3cret").hexdigest()
    assert (done.returncode, done.stdout) == (0, expected + "\n")


def test_a_policy_without_identities_is_one_line(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[[grant]]\nidentity = "a"\ncatalog = ""\nrights = ["read"]\n')
    done = _serve_refused("--policy", str(policy))
    assert (done.returncode, done.stderr) == (
        2,
        "pyairport: error: --policy grants rights to identities: give --tokens-file or"
        " --jwt-keys\n",
    )


def test_a_token_stored_in_clear_is_refused(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.txt"
    tokens.write_text("alice s3cret\n")
    done = _serve_refused("--tokens-file", str(tokens))
    assert done.returncode == 2
    assert done.stderr == (
        f"pyairport: error: {tokens}:1: the token must be stored hashed, as `pyairport"
        " hash-token` prints it\n"
    )


def test_spark_warm_up_reports_in_one_line_and_never_stops_the_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What serve says of the engine's warm-up (test_spark_process.py runs the real one): its
    time when done; a failure's first line as a warning, never a JVM stack; nothing once the
    server stops or its engine has exited (the main loop says that)."""
    from pyairport.cli.serve import Engine, _warm_up

    def fails() -> float:
        raise RuntimeError("DELTA_NO_WAY: refused\n\tat org.apache.spark.sql.delta.Snapshot")

    running, stopping = threading.Event(), threading.Event()
    stopping.set()
    _warm_up(Engine([], lambda: None, lambda: None, lambda: 2.04), running)
    _warm_up(Engine([], lambda: None, lambda: None, fails), running)
    _warm_up(Engine([], lambda: None, lambda: None, fails), stopping)
    _warm_up(Engine([], lambda: None, lambda: 3, fails), running)
    said = capsys.readouterr()
    assert said.out == "pyairport: Spark warmed up in 2.0 s\n"
    assert said.err == "pyairport: warning: Spark's warm-up failed: DELTA_NO_WAY: refused\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--data-workers", "-1"), "--data-workers must be 0 or more"),
        (("--data-workers", "1"), "data workers read Delta tables: use --backend spark"),
        (
            ("--backend", "spark", "--data-worker", "grpc://10.0.0.7:9000"),
            "--data-worker needs --data-key-file: the key its worker was given",
        ),
        (("--data-key-file", "data.key"), "data workers read Delta tables: use --backend spark"),
    ],
)
def test_data_workers_misconfigured_is_one_line(args: tuple[str, ...], message: str) -> None:
    done = _serve_refused(*args)
    assert done.returncode == 2
    assert done.stderr == f"pyairport: error: {message}\n"


def test_string_dictionaries_beside_delta_scan_refs_is_refused_in_one_line() -> None:
    """A delta_scan reads the files' strings where the catalog would declare dictionaries."""
    done = _serve_refused("--backend", "spark", "--string-dictionaries", "--delta-scan-refs")
    assert done.returncode == 2
    message = "--string-dictionaries and --delta-scan-refs: choose one"
    assert done.stderr == f"pyairport: error: {message}\n"


HAS_DELTA_RS = importlib.util.find_spec("deltalake") is not None
NEEDS_DELTA_RS = pytest.mark.skipif(not HAS_DELTA_RS, reason="a worker needs deltalake")


def _key_file(folder: Path, text: str = "ab" * 32) -> Path:
    key = folder / "data.key"
    key.write_text(text + "\n")
    key.chmod(0o600)
    return key


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        ((), 2, "give --key-file (the catalog server's --data-key-file)"),
        (
            ("--key-file", "{bad}"),
            2,
            "{bad} does not hold a key: 64 hex digits (openssl rand -hex 32)",
        ),
        (("--key-file", "{missing}"), 2, "[Errno 2] No such file or directory: '{missing}'"),
        (
            ("--key-file", "{good}", "--advertise", "grpc://10.0.0.8:9000"),
            2,
            "--advertise and --join-root-cert go with --join",
        ),
        (
            ("--key-file", "{good}", "--join", "grpc+unix:///tmp/catalog.sock"),
            2,
            "--join 'grpc+unix:///tmp/catalog.sock': the catalog's grpc:// or grpc+tls:// address",
        ),
        (
            ("--secrets-on-stdin", "--join", "grpc://10.0.0.8:8815"),
            2,
            "a worker serve starts (--secrets-on-stdin) does not join: serve names it",
        ),
        (("--metrics-port", "70000"), 2, "--metrics-port 70000 is not a port number"),
        (
            ("--metrics-port", "0", "--report-on-stdout"),
            2,
            "--report-on-stdout is serve's: give --metrics-port without it",
        ),
        pytest.param(
            ("--key-file", "{good}", "--listen", "grpc://0.0.0.0:0", "--join", "grpc://10.0.0.8:1"),
            2,
            "give --advertise: 'grpc://0.0.0.0:",
            marks=NEEDS_DELTA_RS,
        ),
        pytest.param(
            ("--key-file", "{good}", "--listen", "grpc+unix:///no/such/folder/w.sock"),
            1,
            "cannot listen on grpc+unix:///no/such/folder/w.sock: ",
            marks=NEEDS_DELTA_RS,
        ),
    ],
)
def test_a_worker_that_cannot_serve_says_why_in_one_line(
    tmp_path: Path, args: tuple[str, ...], status: int, message: str
) -> None:
    bad = tmp_path / "bad.key"
    bad.write_text("not hex\n")
    paths = {"bad": str(bad), "missing": str(tmp_path / "missing.key")}
    paths["good"] = str(_key_file(tmp_path))
    listen = () if "--listen" in args else ("--listen", "grpc://127.0.0.1:0")
    argv = [a.format(**paths) for a in args]
    done = subprocess.run(
        [*PYAIRPORT, "worker", *listen, *argv], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == status
    assert done.stderr.startswith(f"pyairport: error: {message.format(**paths)}")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.skipif(HAS_DELTA_RS, reason="deltalake is installed here")
def test_a_worker_without_delta_rs_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [*PYAIRPORT, "worker", "--listen", "grpc://127.0.0.1:0", "--key-file"]
        + [str(_key_file(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "pyairport: error: a worker reads Delta tables (deltalake is missing):"
        " pip install 'pyairport[spark]'\n"
    )


@NEEDS_DELTA_RS
def test_a_worker_serves_on_its_address_refuses_what_its_key_did_not_seal_and_stops(
    tmp_path: Path,
) -> None:
    """`pyairport worker` as an operator runs it on another host: the address it serves on,
    the token checked before the ticket, a ticket of another key refused, both in its
    metrics (--metrics-port), SIGTERM exits 0."""
    import grpc

    from airport_contracts import flight_pb2, flight_pb2_grpc
    from pyairport.server.ticket_seal import PREFIX

    process, at = _worker_process(
        "--key-file", str(_key_file(tmp_path)), "--auth-token", "s3cret", "--metrics-port", "0"
    )
    try:
        assert process.stdout is not None
        metrics_line = process.stdout.readline()
        metrics_at = re.fullmatch(
            r"pyairport worker metrics on (http://127\.0\.0\.1:\d+/metrics)\n", metrics_line
        )
        assert metrics_at, metrics_line
        with grpc.insecure_channel(at.removeprefix("grpc://")) as channel:
            stub = flight_pb2_grpc.FlightServiceStub(channel)
            for token, code, message in (
                (
                    "wrong",
                    grpc.StatusCode.UNAUTHENTICATED,
                    "unauthenticated. Detail: Unauthenticated",
                ),
                (
                    "s3cret",
                    grpc.StatusCode.PERMISSION_DENIED,
                    "ticket refused: not sealed by this server's catalog, or changed since."
                    " Detail: Unauthorized",
                ),
            ):
                ticket = flight_pb2.Ticket(ticket=PREFIX + os.urandom(80))
                with pytest.raises(grpc.RpcError) as refused:
                    list(stub.DoGet(ticket, metadata=[("authorization", f"Bearer {token}")]))
                assert (refused.value.code(), refused.value.details()) == (code, message)
        with urllib.request.urlopen(metrics_at.group(1), timeout=10) as response:
            scraped = response.read().decode()
        for code in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
            assert f'pyairport_calls_total{{code="{code}",method="-",rpc="DoGet"}} 1.0' in scraped
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert "Traceback" not in err


@NEEDS_DELTA_RS
def test_a_worker_joins_its_catalog_and_leaves_it_when_stopped(tmp_path: Path) -> None:
    """`pyairport worker --join`: the running catalog names it in endpoints without being
    told of it, and stops naming it as soon as the worker is stopped."""
    from pyairport.demo import memory_demo_catalog
    from pyairport.server import AirportServer, ServerConfig
    from pyairport.server.data_workers import DataWorkers, WorkerFlags
    from pyairport.server.ticket_seal import read_key

    key_file = _key_file(tmp_path)
    catalog = memory_demo_catalog()
    elsewhere = "ipv4:10.1.2.3:5000"
    with AirportServer(catalog, config=ServerConfig("127.0.0.1", 0)) as server:
        workers = DataWorkers(read_key(str(key_file)), 0, [], WorkerFlags(), lambda c, p: None)  # type: ignore[arg-type,return-value]
        server.serve_parts_at(workers)
        process, at = _worker_process("--key-file", str(key_file), "--join", server.location)
        try:
            assert until(lambda: workers.for_peer(elsewhere) is not None)
            placement = workers.for_peer(elsewhere)
            assert placement is not None and placement.locations == [at]
        finally:
            process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=20)
        assert process.returncode == 0, err
        assert f"joined {server.location} as {at}" in err
        assert workers.for_peer(elsewhere) is None  # it left before it stopped serving
        server.serve_parts_at(None)
        workers.stop()


def _worker_process(*args: str) -> tuple[subprocess.Popen[str], str]:
    """`pyairport worker` on a free loopback port with args, once it serves: the process
    and its address."""
    process = subprocess.Popen(
        [*PYAIRPORT, "worker", "--listen", "grpc://127.0.0.1:0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.fullmatch(r"pyairport worker serving on (grpc://127\.0\.0\.1:\d+)\n", line)
    if match is None:
        process.kill()
        raise AssertionError(line + process.communicate()[1])
    return process, match.group(1)


def test_py4j_s_report_of_a_call_to_a_gone_jvm_is_left_out_of_the_log() -> None:
    """py4j logs a call cut off by the JVM's death at ERROR, traceback and all, through the
    root logger, before it raises it to the server (which then says so itself): a stop of the
    whole process group raced it into the log. Other py4j errors, and every other logger's,
    stay; its notes below WARNING go."""
    import logging

    from pyairport.cli.main import _py4j_chatter

    class Py4JNetworkError(Exception):
        """py4j's, by name: py4j is not installed on every Python the tests run on."""

    inside = os.path.join(os.sep, "site-packages", "py4j", "java_gateway.py")

    def kept(pathname: str, level: int, error: BaseException | None) -> bool:
        info = (type(error), error, None) if error is not None else None
        record = logging.LogRecord("root", level, pathname, 1, "a note", None, info)
        return _py4j_chatter(record)

    assert not kept(inside, logging.ERROR, Py4JNetworkError("gone"))
    assert not kept(inside, logging.ERROR, ConnectionResetError(104, "reset"))
    assert not kept(inside, logging.INFO, None)
    assert kept(inside, logging.ERROR, ValueError("a py4j error of another kind"))
    assert kept(__file__, logging.ERROR, ConnectionResetError(104, "reset"))
    assert kept(__file__, logging.INFO, None)
