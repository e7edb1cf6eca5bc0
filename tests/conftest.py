"""Fixtures shared by every test folder: one Spark session (with Delta) per test run, and
the DuckDB Airport extension's path (or the DuckDB tier's skip)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
JARS = ROOT / ".cache" / "jars"

INTERPRETED = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
"""The tests' Spark runs its plans interpreted: their tables are a few rows, and nearly every
statement is of a new shape, whose generated Java Spark would compile once and run once (DuckDB's
Airport suite on Spark: 703 s against 858 s compiled, every file passing either way). The answers
are Spark's either way; `pyairport serve` and the benchmarks keep Spark's code generation."""


@pytest.fixture(scope="session")
def airport_extension_path() -> str:
    """The Airport extension DuckDB loads; where there is none, the test is skipped (failed
    where the DuckDB tier is required)."""
    from tests.duckdb import extension

    try:
        return extension.locate()
    except extension.Unavailable as why:
        if os.environ.get(extension.REQUIRED):
            pytest.fail(f"the DuckDB tier cannot run: {why}", pytrace=False)
        pytest.skip(f"DuckDB tier skipped: {why}")


@pytest.fixture(scope="session")
def spark_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


@pytest.fixture(scope="session")
def spark_backend(spark_warehouse: Path) -> Iterator[Any]:
    """The run's SparkBackend: local[2] Spark with Delta on a fresh warehouse. Starting Spark
    costs seconds, so every Spark test shares it. The whole run's Delta tables pass through
    its one JVM (DuckDB's suite alone makes hundreds): Spark's default 1 GiB heap fills up."""
    from pyairport.backends.spark import SparkBackend
    from pyairport.backends.spark.session import spark_session

    session = spark_session(
        master="local[2]",
        warehouse=spark_warehouse,
        jars_dir=JARS,
        app_name="pyairport-tests",
        conf={"spark.driver.memory": "4g", **INTERPRETED},
    )
    backend = SparkBackend(session, spark_warehouse)
    yield backend
    backend.close()  # its staging folder
    session.stop()


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def spark_connect_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A SparkBackend talking Spark Connect to the server that ships in the pyspark wheel,
    started here on 127.0.0.1 with Delta configured on the server side."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import pyspark

    from pyairport.backends.spark import SparkBackend
    from pyairport.backends.spark.session import LOCAL_CONF, delta_jars, spark_session

    warehouse = tmp_path_factory.mktemp("connect-warehouse")
    port = _free_port()
    spark_home = Path(pyspark.__file__).parent
    conf = {
        **LOCAL_CONF,
        **INTERPRETED,
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.sql.warehouse.dir": str(warehouse),
    }
    command = [
        str(spark_home / "bin" / "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master",
        "local[2]",
        "--jars",
        ",".join(delta_jars(JARS)),
    ]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    log = (warehouse / "connect-server.log").open("w")
    env = dict(os.environ, SPARK_HOME=str(spark_home), PYSPARK_PYTHON=sys.executable)
    server = subprocess.Popen(
        [*command, "spark-internal"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while "Spark Connect server started" not in (warehouse / "connect-server.log").read_text():
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    "the Spark Connect server did not start: see "
                    + str(warehouse / "connect-server.log")
                )
            time.sleep(0.5)
        url = f"sc://127.0.0.1:{port}"
        session = spark_session(remote=url)
        yield SparkBackend(session, warehouse, remote=url)
        session.stop()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)
        log.close()


@pytest.fixture
def spark_statements(spark_backend: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The text of every statement the run's Spark session is given by spark.sql from here on
    to the end of the test (clear it to start again): what the server asked Spark."""
    spark = spark_backend.spark
    ran: list[str] = []
    run_sql = spark.sql

    def noted(query: str, *args: Any, **kwargs: Any) -> Any:
        ran.append(query)
        return run_sql(query, *args, **kwargs)

    monkeypatch.setattr(spark, "sql", noted)
    return ran
