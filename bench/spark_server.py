"""The Spark server the Spark benchmark talks to, in its own process: Delta tables in a
scratch warehouse, plus bench actions: `bench_reset` (a new table with N rows, made as
pyairport makes tables, or without deletion vectors if asked),
`bench_direct_write` (the baseline: the same Arrow rows written straight to Delta),
`bench_spark_table` (a table of N rows written by Spark itself, Delta's defaults),
`bench_sql` (seconds Spark takes for one SQL statement in this session),
`bench_merge_view` (seconds for Spark's MERGE of N new values from a view) and
`bench_last_commit` (seconds the last Flight statement spent in its Delta commit, the
statement Spark runs for it — the rest of a statement's time is pyairport's own — and, of
those, in making the view a MERGE reads the rows from)."""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench_server import COLUMNS, rows, serve_until_stdin_closes

from airport_contracts import Context
from pyairport.backends.spark import SparkBackend, SparkTable
from pyairport.backends.spark.commits import DeltaChanges
from pyairport.backends.spark.session import spark_session
from pyairport.catalog import MutableCatalog


def main() -> None:
    warehouse = Path(tempfile.mkdtemp(prefix="pyairport-bench-"))
    jars = Path(".cache/jars")  # make jars; else Spark fetches Delta from Maven Central
    session = spark_session(
        master="local[2]", warehouse=warehouse, jars_dir=jars if jars.is_dir() else None
    )
    backend = SparkBackend(session, warehouse)
    catalog: MutableCatalog = backend.catalog
    # measuring only: how long the last commit took, and its view of the rows (a MERGE's)
    last_commit = {"seconds": 0.0, "view": 0.0}
    commit, view = DeltaChanges.commit, SparkBackend.view

    def timed_commit(changes: DeltaChanges, pending: Any) -> int | None:
        start, last_commit["view"] = time.perf_counter(), 0.0
        try:
            return commit(changes, pending)
        finally:
            last_commit["seconds"] = time.perf_counter() - start

    def timed_view(spark_backend: SparkBackend, data: Any) -> str:
        start = time.perf_counter()
        try:
            return view(spark_backend, data)
        finally:
            last_commit["view"] += time.perf_counter() - start

    DeltaChanges.commit = timed_commit  # type: ignore[method-assign]
    SparkBackend.view = timed_view  # type: ignore[method-assign]

    session.sql("CREATE DATABASE IF NOT EXISTS bench")

    def named(table: SparkTable) -> SparkTable:
        """The table also under Spark SQL's name bench.<name>, as the benchmark's own
        statements address it (the backend addresses warehouse tables by their folder)."""
        session.sql(
            f"CREATE TABLE IF NOT EXISTS bench.{table.name()} USING delta"
            f" LOCATION '{table.layout.location}'"
        )
        return table

    def reset(ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        """body: N, or N:plain for a table without deletion vectors (pyairport's tables have
        them)."""
        count, _, kind = body.decode().partition(":")
        name = f"t_{uuid.uuid4().hex[:8]}"
        table = named(
            backend.table("bench", name, COLUMNS, rows=rows(int(count)) if int(count) else None)
        )
        if kind == "plain":
            session.sql(
                f"ALTER TABLE {table.fqn} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')"
            )
        return [name.encode()]

    def direct_write(ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        count = int(body.decode())
        data = rows(count)
        target = named(backend.table("bench", f"direct_{uuid.uuid4().hex[:8]}", COLUMNS))
        start = time.perf_counter()
        with_rowid = data.add_column(
            0, "rowid", __import__("pyarrow").array(range(1, count + 1), "int64")
        )
        session.createDataFrame(with_rowid).write.format("delta").mode("append").saveAsTable(
            f"bench.{target.name()}"
        )
        return [str(time.perf_counter() - start).encode()]

    def spark_table(ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        """A table of the same N rows that Spark itself created and wrote, with Delta's
        default settings (bench.<name> in Spark's catalog; pyairport does not serve it)."""
        import pyarrow as pa

        count = int(body.decode())
        name = f"spark_{uuid.uuid4().hex[:8]}"
        data = rows(count).add_column(0, "rowid", pa.array(range(1, count + 1), pa.int64()))
        session.createDataFrame(data).write.format("delta").saveAsTable(f"bench.{name}")
        return [name.encode()]

    def sql(ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        start = time.perf_counter()
        session.sql(body.decode()).collect()
        return [str(time.perf_counter() - start).encode()]

    def merge_view(ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        """body: table:count:seed:rows (rows: the table's size). The view is made first; the
        MERGE alone is timed. Nothing reads the table before it: a query there would warm
        what the MERGE reads, which the statement over Flight gets no help with."""
        import numpy as np
        import pyarrow as pa

        table, count, seed, total = body.decode().split(":")
        rng = np.random.default_rng(int(seed))
        ids = np.sort(rng.choice(np.arange(1, int(total) + 1), size=int(count), replace=False))
        changes = pa.table({"rowid": pa.array(ids, pa.int64()), "value": rng.random(len(ids))})
        view = backend.view(changes)
        try:
            start = time.perf_counter()
            session.sql(
                f"MERGE INTO bench.{table} t USING {view} s ON t.rowid = s.rowid"
                " WHEN MATCHED THEN UPDATE SET t.value = s.value"
            ).collect()
            return [str(time.perf_counter() - start).encode()]
        finally:
            backend.drop_view(view)

    def last_commit_seconds(ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        return [f"{last_commit['seconds']} {last_commit['view']}".encode()]

    serve_until_stdin_closes(
        catalog,
        {
            "bench_last_commit": last_commit_seconds,
            "bench_reset": reset,
            "bench_direct_write": direct_write,
            "bench_spark_table": spark_table,
            "bench_sql": sql,
            "bench_merge_view": merge_view,
        },
    )
    session.stop()
    shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    main()
