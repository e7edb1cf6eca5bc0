"""DuckDB's Airport extension's own SQL test suite (`test/sql/*.test` of its source), run as
written against pyairport on memory and on Spark, with DuckDB 1.4 and 1.5.

The files were written for Query.Farm's test server. Its two private actions are served here
by pyairport's public API, as the embedding application's own actions: `reset` stops serving
every catalog, `create_database NAME` serves a fresh, empty catalog NAME (on Spark: Delta
tables in a fresh warehouse folder of the run's one Spark session). Every file starts with
both, so each gets a fresh catalog `test1` on a server shared by the run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from queue import Queue
from typing import Any

import pytest

from airport_contracts import Context
from pyairport.server import AirportServer, ServerConfig
from pyairport.transactions import MemoryTransactionManager

from .extension import REQUIRED
from .sqllogic.clients import CLIENTS, Client, suite_files, suite_names
from .sqllogic.queryfarm_fixtures import add_test_server_fixtures

pytestmark = [pytest.mark.duckdb, pytest.mark.airport_suite]

RUNNER = Path(__file__).parent / "sqllogic" / "runner.py"

# Files that cannot pass here, and why. Nothing else is skipped; every record of every other
# file must pass.
CANNOT_PASS = {
    "airport-parquet-scan.test": "reads a remote parquet file (the NYC taxi data) over the"
    " network, which this machine does not reach",
}


def _test_server(make_catalog: Callable[[str], Any]) -> AirportServer:
    """A server of no catalog at first, with the test server's `reset` and `create_database`."""
    lock = threading.Lock()

    def reset(ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        with lock:
            for name in server.catalogs.names():
                server.remove_catalog(name)
        return []

    def create_database(ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        name = body.decode()
        with lock:
            if name in server.catalogs.names():
                server.remove_catalog(name)
            server.add_catalog(make_catalog(name), MemoryTransactionManager())
        return []

    actions = {"reset": reset, "create_database": create_database}
    server = AirportServer(None, None, ServerConfig(port=0), extra_actions=actions)
    return server.start()


STREAMS = 4
"""Files run at once, each with a test server of its own: a Spark statement waits on Spark
more than it uses a core, and so does DuckDB on the server."""


class SuiteRun:
    """Every file of the suite, with both clients, run in the background by STREAMS workers
    from the moment a backend's first file is asked for; each file's test waits for its
    results (the runs go in the tests' order)."""

    def __init__(self, make_catalog: Callable[[str], Any], suite_dir: Path) -> None:
        self.servers: Queue[AirportServer] = Queue()
        self.started = [_test_server(make_catalog) for _ in range(STREAMS)]
        for server in self.started:
            self.servers.put(server)
        self.suite_dir = suite_dir
        self.pool = ThreadPoolExecutor(STREAMS)
        self.runs: dict[tuple[str, str], Future[dict[str, Any]]] = {}
        for name in suite_names():
            if name in CANNOT_PASS:
                continue
            for client in CLIENTS:
                if client.missing() is None:
                    self.runs[client.name, name] = self.pool.submit(self._run, client, name)

    def _run(self, client: Client, name: str) -> dict[str, Any]:
        server = self.servers.get()
        try:
            files = {f.name: f for f in suite_files(client, self.suite_dir)}
            return run_suite_file(client, files[name], server.location)
        finally:
            self.servers.put(server)

    def result(self, client: Client, name: str) -> dict[str, Any]:
        return self.runs[client.name, name].result()

    def close(self) -> None:
        for run in self.runs.values():
            run.cancel()
        self.pool.shutdown(wait=True)
        for server in self.started:
            server.stop(0)


@pytest.fixture(scope="session")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("airport-suite")
    for client in CLIENTS:  # unpacked once, before any worker reads them
        if client.missing() is None:
            suite_files(client, path)
    return path


@pytest.fixture(scope="session")
def memory_suite(suite_dir: Path) -> Iterator[SuiteRun]:
    from pyairport.backends.memory import memory_table
    from pyairport.backends.memory.catalog import MemoryCatalog, MemorySchema

    def database(name: str) -> Any:
        catalog = MemoryCatalog(name)
        add_test_server_fixtures(
            catalog,
            MemorySchema,
            lambda schema, table, rows: memory_table(table, rows.schema, (), rows=rows),
        )
        return catalog

    run = SuiteRun(database, suite_dir)
    yield run
    run.close()


@pytest.fixture(scope="session")
def spark_suite(
    spark_backend: Any, tmp_path_factory: pytest.TempPathFactory, suite_dir: Path
) -> Iterator[SuiteRun]:
    """On the run's one Spark session; each catalog a fresh warehouse folder. The test
    server's static_data tables are made once, in a warehouse each catalog's starts as a copy
    of (files copied, then opened): made anew by Spark for each of the suite's ~180 catalogs
    they took about half of its Spark time."""
    from pyairport.backends.spark import SparkBackend
    from pyairport.backends.spark.ddl import SparkSchema

    opened: list[Any] = []

    def lake(name: str, template: Path | None) -> Any:
        folder = tmp_path_factory.mktemp("suite-lake")
        if template is not None:
            shutil.copytree(template, folder, dirs_exist_ok=True)
        backend = SparkBackend(spark_backend.spark, folder)
        opened.append(backend)
        backend.catalog.rename(name)
        add_test_server_fixtures(
            backend.catalog,
            lambda schema: SparkSchema(schema, backend),
            lambda schema, table, rows: backend.table(schema, table, rows.schema, (), rows=rows),
        )
        return backend.catalog, folder

    _, template = lake("", None)
    run = SuiteRun(lambda name: lake(name, template)[0], suite_dir)
    yield run
    run.close()
    for backend in opened:
        backend.close()


def _client(client: Client) -> Client:
    """client, when it can run here; else a failure where the DuckDB tier is required (make
    test), a skip saying why elsewhere."""
    why = client.missing()
    if why:
        if os.environ.get(REQUIRED):
            pytest.fail(f"the DuckDB client {client.name} cannot run: {why}", pytrace=False)
        pytest.skip(f"the DuckDB client {client.name} cannot run: {why}")
    return client


def run_suite_file(client: Client, file: Path, location: str) -> dict[str, Any]:
    """The runner's verdict on one file, in the client's own Python."""
    command = [str(client.python), str(RUNNER), str(file), "--extension", str(client.extension)]
    if client.extension_dir is not None:
        command += ["--extension-dir", str(client.extension_dir)]
    done = subprocess.run(
        [*command, "--server", location],
        capture_output=True,
        text=True,
        timeout=600,
        env={
            "QUERY_FARM_TELEMETRY_OPT_OUT": "1",
            "PATH": "/usr/bin:/bin",
            "HOME": os.environ.get("HOME", "/tmp"),
        },
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise AssertionError(f"the runner failed: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _params() -> list[Any]:
    params = []
    for backend in ("memory", "spark"):
        for name in suite_names():
            marks = [pytest.mark.spark] if backend == "spark" else []
            if name in CANNOT_PASS:
                marks.append(pytest.mark.skip(reason=CANNOT_PASS[name]))
            params.append(pytest.param(backend, name, marks=marks, id=f"{backend}-{name}"))
    return params


@pytest.mark.parametrize(("backend", "name"), _params())
def test_airport_suite_file(backend: str, name: str, request: pytest.FixtureRequest) -> None:
    """The file with DuckDB 1.4 and with 1.5, each against a fresh catalog test1."""
    clients = [_client(client) for client in CLIENTS]
    run: SuiteRun = request.getfixturevalue(f"{backend}_suite")
    results = [run.result(client, name) for client in clients]
    _record(backend, name, clients, results)
    report = [
        f"{client.name} line {f['line']}: {f.get('sql', '')!r}\n    {f['why']}"
        for client, result in zip(clients, results, strict=True)
        for f in result["failures"]
    ]
    assert not report, f"{name}:\n" + "\n".join(report)


RESULTS = "AIRPORT_SUITE_RESULTS"
"""Where each file's counts are appended as JSON lines (`make test-airport-suite` sets it and
prints the figures: sqllogic/figures.py)."""


def _record(backend: str, name: str, clients: list[Client], results: list[dict[str, Any]]) -> None:
    path = os.environ.get(RESULTS)
    if not path:
        return
    with open(path, "a", encoding="utf-8") as out:
        for client, result in zip(clients, results, strict=True):
            line = {"backend": backend, "client": client.name, "file": name}
            line |= {"run": result["run"], "passed": result["passed"]}
            out.write(json.dumps(line) + "\n")


def test_the_runner_can_fail(tmp_path: Path) -> None:
    """A wrong expected value, a statement that errs and an error that does not come are
    each a failure."""
    client = _client(CLIENTS[0])
    file = tmp_path / "wrong.test"
    file.write_text(
        "require airport\n\nrequire-env AIRPORT_TEST_SERVER\n\n"
        "statement ok\nCALL airport_action('${AIRPORT_TEST_SERVER}', 'reset');\n\n"
        "statement ok\nCALL airport_action('${AIRPORT_TEST_SERVER}', 'create_database', 'test1');\n\n"
        "statement ok\nATTACH 'test1' (TYPE AIRPORT, location '${AIRPORT_TEST_SERVER}');\n\n"
        "statement ok\nCREATE SCHEMA test1.s;\n\n"
        "statement ok\nCREATE TABLE test1.s.t (v INTEGER);\n\n"
        "statement ok\nINSERT INTO test1.s.t VALUES (1), (2);\n\n"
        "query I\nSELECT v FROM test1.s.t ORDER BY 1\n----\n1\n3\n\n"
        "query I\nSELECT v FROM test1.s.t ORDER BY 1\n----\n1\n2\n\n"
        "query T\nSELECT true\n----\n1\n\n"
        "statement ok\nSELECT * FROM test1.s.missing\n\n"
        "statement error\nSELECT 1\n----\n"
    )
    from pyairport.backends.memory.catalog import MemoryCatalog

    server = _test_server(MemoryCatalog)
    try:
        result = run_suite_file(client, file, server.location)
    finally:
        server.stop(0)
    failed = [(f["sql"], f["why"].split(":")[0]) for f in result["failures"]]
    assert result["run"] == 11 and result["passed"] == 8, result
    assert failed == [
        ("SELECT v FROM test1.s.t ORDER BY 1", "row 2 column 1"),
        ("SELECT * FROM test1.s.missing", "statement failed"),
        ("SELECT 1", "statement ran, an error was expected"),
    ], result
