"""DuckDB as the client: the statements a DuckDB user runs, against pyairport (memory and
Spark), airport-go and the Query-farm test server (the server DuckDB's Airport extension is
tested against), each beside DuckDB running the same statements on a table of its own (the
floor: no Flight at all). One run, each server in its own process, a fresh DuckDB for each.

  INSERT            INSERT INTO t SELECT i, 'user_'||i, 'user_'||i||'@example.com' FROM range(N)
  INSERT RETURNING  the same for the next N ids, RETURNING id
  UPDATE            UPDATE t SET email = 'u'||id WHERE id > N           (N rows)
  SELECT count(*)   over the 2N rows
  SELECT *          the 2N rows, fetched as Arrow

Prints rows/s and the ratio to DuckDB's own table. A statement that does not touch the rows it
should is reported as such, not timed. The Query-farm server's UPDATE is not run: its tables
made by CREATE TABLE have no rowid column, so DuckDB's UPDATE changes no row there (0 of
100,000), and at a million rows it runs for minutes before changing none.

Needs the DuckDB tier's extension (make duckdb-extension), Go for airport-go, Python 3.12 for
the Query-farm server (installed into .cache/queryfarm-venv on first use); a server that cannot
be had is skipped with the reason.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.duckdb import extension as airport_extension  # noqa: E402
from tests.interop.gobuild import GoUnavailable, go_server  # noqa: E402

QUERYFARM_VENV = ROOT / ".cache" / "queryfarm-venv"
QUERYFARM_PACKAGE = "query-farm-airport-test-server==0.1.1"
WORKLOADS = ("INSERT", "INSERT RETURNING", "UPDATE", "SELECT count(*)", "SELECT *")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _process(command: list[str], ready: Callable[[str], str | None], **kw: Any) -> Iterator[str]:
    """A server process; yields what ready() makes of the first line it accepts."""
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            found = ready(line)
            if found:
                break
        else:
            raise RuntimeError(f"{command[0]} stopped before it served")
        yield found
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _serving_line(line: str) -> str | None:
    return line.split(" serving on ")[1].split()[0] if " serving on " in line else None


@contextmanager
def pyairport(backend: str) -> Iterator[str]:
    """`pyairport serve` on a fresh warehouse (spark) that goes with it."""
    command = [str(Path(sys.executable).parent / "pyairport"), "serve", "--backend", backend]
    command += ["--port", "0", "--log-level", "WARNING"]
    with tempfile.TemporaryDirectory(prefix="pyairport-duckdb-bench-") as warehouse:
        if backend == "spark":
            command += ["--warehouse", warehouse, "--spark-master", "local[2]", "--demo"]
            if (ROOT / ".cache" / "jars").is_dir():
                command += ["--jars-dir", str(ROOT / ".cache" / "jars")]
        env = dict(os.environ, GRPC_VERBOSITY="NONE")
        with _process(command, _serving_line, env=env, cwd=ROOT) as location:
            yield location


def _python312() -> str:
    """pyenv's 3.12, else python3.12 on PATH (as the Makefile's test-python finds it)."""
    pyenv = shutil.which("pyenv")
    root = (
        subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
        if pyenv
        else ""
    )
    versions = sorted(Path(root, "versions").glob("3.12.*/bin/python3.12")) if root else []
    found = str(versions[-1]) if versions else shutil.which("python3.12")
    if not found:
        raise RuntimeError("the Query-farm server needs Python 3.12 (pyenv install 3.12)")
    return found


def queryfarm() -> AbstractContextManager[str]:
    server = QUERYFARM_VENV / "bin" / "airport_test_server"
    if not server.exists():
        subprocess.run([_python312(), "-m", "venv", str(QUERYFARM_VENV)], check=True)
        subprocess.run(
            [str(QUERYFARM_VENV / "bin" / "pip"), "install", "-q", QUERYFARM_PACKAGE], check=True
        )
    location = f"grpc://127.0.0.1:{_free_port()}"
    return _process(
        [str(server), "--location", location],
        lambda line: location if "Starting server" in line else None,
        cwd=tempfile.mkdtemp(prefix="queryfarm-"),  # it keeps its databases in its folder
    )


class Target:
    """Where the statements go: a table name in a DuckDB, and how to prepare it."""

    def __init__(
        self,
        name: str,
        server: Callable[[], AbstractContextManager[str]] | None,
        not_run: dict[str, str] | None = None,
    ):
        self.name, self.server, self.not_run = name, server, not_run or {}

    def prepare(self, duck: Any, location: str | None) -> str:
        if location is None:
            duck.execute("CREATE TABLE users (id BIGINT, name VARCHAR, email VARCHAR)")
            return "users"
        if self.name == "Query-farm":
            # its catalog is made by DDL, under a database per token, kept between runs
            duck.execute(f"CREATE SECRET qf (TYPE airport, auth_token 'bench', scope '{location}')")
            duck.execute(f"CALL airport_action('{location}', 'reset')")
            duck.execute(f"CALL airport_action('{location}', 'create_database', 'qf')")
            duck.execute(f"ATTACH 'qf' AS lake (TYPE airport, LOCATION '{location}')")
            duck.execute("CREATE SCHEMA lake.bench")
            duck.execute("CREATE TABLE lake.bench.users (id BIGINT, name VARCHAR, email VARCHAR)")
            return "lake.bench.users"
        duck.execute(f"ATTACH '' AS lake (TYPE airport, LOCATION '{location}')")
        return "lake.batch_schema.users"


def statements(table: str, n: int) -> list[tuple[str, str, int]]:
    """(workload, SQL, rows it should touch)."""
    fill = "SELECT i, 'user_' || i, 'user_' || i || '@example.com' FROM range({}, {}) t(i)"
    return [
        ("INSERT", f"INSERT INTO {table} {fill.format(1, n + 1)}", n),
        (
            "INSERT RETURNING",
            f"INSERT INTO {table} {fill.format(n + 1, 2 * n + 1)} RETURNING id",
            n,
        ),
        ("UPDATE", f"UPDATE {table} SET email = 'u' || id WHERE id > {n}", n),
        ("SELECT count(*)", f"SELECT count(*) FROM {table}", 2 * n),
        ("SELECT *", f"SELECT * FROM {table}", 2 * n),
    ]


def _touched(workload: str, cursor: Any) -> int:
    """How many rows the statement touched, as DuckDB reports it."""
    if workload == "SELECT *":
        return int(cursor.fetch_arrow_table().num_rows)
    rows = cursor.fetchall()
    if workload == "INSERT RETURNING":
        return len(rows)
    return int(rows[0][0])


def measure(target: Target, extension: str, n: int) -> dict[str, float | str]:
    """rows/s for each workload, or why it was not measured."""
    figures: dict[str, float | str] = {}
    try:
        context = target.server() if target.server else nullcontext(None)
        with context as location:
            duck = airport_extension.connect(extension)
            try:
                table = target.prepare(duck, location)
                for workload, sql, expected in statements(table, n):
                    if workload in target.not_run:
                        figures[workload] = target.not_run[workload]
                        continue
                    start = time.perf_counter()
                    touched = _touched(workload, duck.execute(sql))
                    seconds = time.perf_counter() - start
                    if touched != expected:
                        figures[workload] = f"n/a: {touched:,} of {expected:,} rows"
                    else:
                        figures[workload] = expected / seconds
            finally:
                duck.close()
    except (GoUnavailable, RuntimeError, OSError, subprocess.CalledProcessError) as why:
        print(f"{target.name}: skipped: {why}", file=sys.stderr)
        return dict.fromkeys(WORKLOADS, "skipped (see above)")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="N (default 1,000,000)")
    parser.add_argument(
        "--servers",
        default="memory,spark,airport-go,query-farm",
        help="comma-separated subset of memory,spark,airport-go,query-farm",
    )
    args = parser.parse_args()
    try:
        extension = airport_extension.locate()
    except airport_extension.Unavailable as why:
        sys.exit(f"duckdb_client.py: {why}")
    available = {
        "memory": Target("pyairport memory", lambda: pyairport("memory")),
        "spark": Target("pyairport Spark", lambda: pyairport("spark")),
        "airport-go": Target("airport-go", lambda: go_server("-max-message-mb", "256")),
        "query-farm": Target("Query-farm", queryfarm, {"UPDATE": "n/a: no rowid column"}),
    }
    targets = [Target("DuckDB's own table", None)]
    targets += [available[name] for name in args.servers.split(",")]
    results = {target.name: measure(target, extension, args.rows) for target in targets}
    floor = results["DuckDB's own table"]
    print(f"DuckDB 1.4.4 as the client, N = {args.rows:,} rows (rows/s; ratio to DuckDB's own)")
    print(f"  {'':18}" + "".join(f"{t.name:>26}" for t in targets))
    for workload in WORKLOADS:
        cells = []
        for target in targets:
            value = results[target.name][workload]
            if isinstance(value, str):
                cells.append(f"{value[:24]:>26}")
            elif target.server is None:
                cells.append(f"{value:>18,.0f}        ")
            else:
                base = floor[workload]
                ratio = value / base if isinstance(base, float) else float("nan")
                cells.append(f"{value:>18,.0f} ({ratio:5.3f})")
        print(f"  {workload:18}" + "".join(cells))


if __name__ == "__main__":
    main()
