"""The Spark server the Spark benchmark talks to, in its own process: Delta tables in a
scratch warehouse, plus bench actions: `bench_reset` (a new table with N rows) and
`bench_direct_write` (the baseline: the same Arrow rows written straight to Delta)."""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from pathlib import Path

from bench_server import COLUMNS, rows, serve_until_stdin_closes

from airport_contracts import Context
from pyairport.backends.spark import SparkBackend
from pyairport.backends.spark_session import spark_session
from pyairport.catalog import Catalog


def main() -> None:
    warehouse = Path(tempfile.mkdtemp(prefix="pyairport-bench-"))
    session = spark_session(master="local[2]", warehouse=warehouse)
    backend = SparkBackend(session, warehouse)
    catalog: Catalog = backend.catalog

    def reset(ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        count = int(body.decode())
        name = f"t_{uuid.uuid4().hex[:8]}"
        backend.table("bench", name, COLUMNS, rows=rows(count) if count else None)
        return [name.encode()]

    def direct_write(ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        count = int(body.decode())
        data = rows(count)
        target = backend.table("bench", f"direct_{uuid.uuid4().hex[:8]}", COLUMNS)
        start = time.perf_counter()
        with_rowid = data.add_column(
            0, "rowid", __import__("pyarrow").array(range(1, count + 1), "int64")
        )
        session.createDataFrame(with_rowid).write.format("delta").mode("append").saveAsTable(
            target.fqn
        )
        return [str(time.perf_counter() - start).encode()]

    serve_until_stdin_closes(catalog, {"bench_reset": reset, "bench_direct_write": direct_write})
    session.stop()
    shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    main()
