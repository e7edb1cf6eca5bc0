"""Loading a table through pyairport, beside Spark loading the same rows itself.

DuckDB's `tpch` extension generates TPC-H scale factor --scale; DuckDB 1.4.4 copies its
`lineitem` into the lake with `CREATE TABLE lake.load.<name> AS SELECT * FROM lineitem`
through `pyairport serve --backend spark` (DuckDB sends the rows as Arrow batches, the server
stages them and Spark appends them in one Delta commit), and Spark, in this process, makes the
same table from the same rows written as Parquet by DuckDB (`CREATE TABLE delta.… AS SELECT *
FROM parquet.…`): what a Spark team would run to load them. Best of --repeats, each into a
table of its own; every copy's row count and sum of `l_extendedprice` must equal DuckDB's.
It prints both times, their ratio, and the server's peak resident memory (its Python process
and Spark's JVM) while the loads ran.

    python bench/bulk_load.py --scale 1
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.duckdb_lake import serving  # noqa: E402
from bench.tpch import _spark, peak_rss  # noqa: E402
from tests import tpch  # noqa: E402
from tests.duckdb import extension as airport_extension  # noqa: E402

TOTALS = "SELECT count(*), sum(l_extendedprice) FROM {table}"


def best(repeats: int, load: Any, check: Any) -> float:
    """The shortest of repeats loads (load(i) makes copy i); each copy checked."""
    times = []
    for copy in range(repeats):
        started = time.perf_counter()
        table = load(copy)
        times.append(time.perf_counter() - started)
        check(table)
    return min(times)


def duckdb_load(db: Any, copy: int) -> str:
    table = f"lake.load.copy_{copy}"
    db.execute(f"CREATE TABLE {table} AS SELECT * FROM lineitem")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    db = airport_extension.connect(airport_extension.locate())
    tpch.generate(db, args.scale)
    rows, total = db.execute(TOTALS.format(table="lineitem")).fetchone()
    with tempfile.TemporaryDirectory(prefix="pyairport-load-") as scratch:
        root = Path(scratch)
        source = root / "lineitem.parquet"
        db.execute(f"COPY lineitem TO '{source}' (FORMAT parquet)")
        spark = _spark(root)
        print(
            f"CREATE TABLE … AS SELECT * of TPC-H SF {args.scale:g} lineitem ({rows:,} rows),"
            f" best of {args.repeats}"
        )

        def exact(got: tuple[Any, ...], where: str) -> None:
            if tuple(got) != (rows, total):
                raise SystemExit(f"{where}: {got}, DuckDB has {(rows, total)}")

        def spark_load(copy: int) -> str:
            table = f"delta.`{root / 'spark' / str(copy)}`"
            spark.sql(f"CREATE TABLE {table} USING delta AS SELECT * FROM parquet.`{source}`")
            return table

        spark_time = best(
            args.repeats,
            spark_load,
            lambda table: exact(spark.sql(TOTALS.format(table=table)).first(), "Spark's copy"),
        )
        print(f"  Spark from Parquet (baseline)      {spark_time:7.2f} s")
        spark.stop()  # its JVM's memory and cores are the server's from here on
        warehouse = root / "lake"
        warehouse.mkdir()
        with serving(warehouse, "--no-spark-warm-up") as (location, pid):
            db.execute(f"ATTACH '' AS lake (TYPE airport, LOCATION '{location}')")
            db.execute("CREATE SCHEMA lake.load")
            with peak_rss(pid) as peak:
                ours = best(
                    args.repeats,
                    lambda copy: duckdb_load(db, copy),
                    lambda table: exact(db.execute(TOTALS.format(table=table)).fetchone(), table),
                )
            db.execute("DETACH lake")
        print(f"  DuckDB through pyairport           {ours:7.2f} s   ratio {ours / spark_time:.2f}")
        print(
            f"  server peak RSS: Python {peak['python'] / 1024:.0f} MiB,"
            f" JVM {peak['jvm'] / 1024:.0f} MiB"
        )
    db.close()


if __name__ == "__main__":
    main()
