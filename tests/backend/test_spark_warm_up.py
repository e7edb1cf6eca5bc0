"""Spark's warm-up (backends/spark/warm_up.py): it runs through the backend's own statements
on tables of its own, and leaves nothing behind, in the lake, in Spark's catalog or on disk,
whether it finishes or fails. (`pyairport serve` running it beside its clients:
test_spark_process.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airport_contracts import Context
from pyairport.backends.spark import warm_up as warm_up_module
from pyairport.backends.spark.warm_up import warm_up

pytestmark = pytest.mark.spark


def _served(spark_backend: Any) -> list[str]:
    schemas = spark_backend.catalog.schemas(Context.background())
    return sorted(schema.name() for schema in schemas)


def _spark_tables(spark: Any) -> list[str]:
    return sorted(f"{t.namespace}.{t.name}" for t in spark.catalog.listTables())


def test_warm_up_runs_every_statement_and_leaves_nothing(
    spark_backend: Any, tmp_path: Path, spark_statements: list[str]
) -> None:
    served, tables = _served(spark_backend), _spark_tables(spark_backend.spark)
    scratch = tmp_path / "scratch"
    spark_statements.clear()
    assert warm_up(spark_backend.spark, scratch) > 0
    kinds = {q.split()[0] for q in spark_statements}
    assert {"UPDATE", "DELETE", "MERGE"} <= kinds
    assert any(" VALUES (" in q for q in spark_statements)  # a few rows' INSERT
    assert any(" FROM parquet." in q for q in spark_statements)  # a staged file's INSERT
    assert not scratch.exists()
    assert list(tmp_path.iterdir()) == []
    assert _served(spark_backend) == served
    assert _spark_tables(spark_backend.spark) == tables  # no table, no temporary view


def test_a_failed_warm_up_raises_and_leaves_nothing(
    spark_backend: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(table: Any, *, each_its_own: bool) -> None:
        raise RuntimeError("refused")

    monkeypatch.setattr(warm_up_module, "_each_statement", refused)
    scratch = tmp_path / "scratch"
    with pytest.raises(RuntimeError, match="refused"):
        warm_up(spark_backend.spark, scratch)
    assert not scratch.exists()
