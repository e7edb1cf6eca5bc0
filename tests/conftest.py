"""Fixtures shared by every test folder: one Spark session (with Delta) per test run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
JARS = ROOT / ".cache" / "jars"


@pytest.fixture(scope="session")
def spark_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


@pytest.fixture(scope="session")
def spark_backend(spark_warehouse: Path) -> Iterator[Any]:
    """The run's SparkBackend: local[2] Spark with Delta on a fresh warehouse. Starting Spark
    costs seconds, so every Spark test shares it."""
    from pyairport.backends.spark import SparkBackend
    from pyairport.backends.spark_session import spark_session

    session = spark_session(master="local[2]", warehouse=spark_warehouse, jars_dir=JARS, app_name="pyairport-tests")
    yield SparkBackend(session, spark_warehouse)
    session.stop()
