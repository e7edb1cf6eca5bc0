"""DuckDB reading a wide Delta table through pyairport, against its own delta_scan: what each
column a query touches costs beyond its values.

A table of --columns BIGINT columns and --rows rows, written by delta-rs into a fresh
warehouse and served by `pyairport serve --backend spark` in its own process. One DuckDB 1.4.4
runs `SELECT * … LIMIT 1`, `SELECT *` and a one-column sum both ways, best of --repeats, and
prints the ratio to delta_scan. DuckDB asks the server for the statistics of every column a
query touches, twice, one call at a time while it plans (docs/benchmarks.md): a `SELECT *` of
a wide table makes thousands of calls, so each call's cost is multiplied by the width.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.duckdb_lake import _same_rows, best_of, serving  # noqa: E402
from tests.duckdb import extension as airport_extension  # noqa: E402

QUERIES = {
    "SELECT * LIMIT 1": "SELECT * FROM {wide} LIMIT 1",
    "SELECT * (all rows)": "SELECT * FROM {wide}",
    "sum of one column": "SELECT sum(c7) FROM {wide}",
}


def write_wide(folder: Path, columns: int, rows: int) -> None:
    import deltalake

    values = pa.array(range(rows), pa.int64())
    table = pa.table({f"c{i}": pc.add(values, i) for i in range(columns)})
    deltalake.write_deltalake(str(folder), table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--columns", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    extension = airport_extension.locate()
    with tempfile.TemporaryDirectory(prefix="pyairport-wide-bench-") as scratch:
        folder = Path(scratch) / "warehouse" / "lake" / "wide"
        write_wide(folder, args.columns, args.rows)
        with serving(folder.parent.parent, "--no-spark-warm-up") as (location, _):
            db = airport_extension.connect(extension)
            db.execute("LOAD delta")
            db.execute(f"ATTACH '' AS lake (TYPE airport, LOCATION '{location}')")
            ways = {"pyairport": "lake.lake.wide", "delta_scan": f"delta_scan('{folder}')"}
            print(
                f"DuckDB {db.execute('SELECT version()').fetchone()[0]} reading a"
                f" {args.columns:,}-column, {args.rows:,}-row Delta table, best of"
                f" {args.repeats} (the first query through pyairport timed alone: the"
                " server works each column's statistics out once per version)"
            )
            first = best_of(
                1,
                lambda: db.execute(
                    QUERIES["SELECT * LIMIT 1"].format(wide=ways["pyairport"])
                ).fetchall(),
            )[0]
            print(f"  first SELECT * LIMIT 1 through pyairport   {first:7.3f}s")
            print(f"  {'query':<24}{'pyairport':>18}{'delta_scan':>12}")
            for label, query in QUERIES.items():
                times, answers = {}, {}
                for way, name in ways.items():
                    sql = query.format(wide=name)
                    times[way], answers[way] = best_of(
                        args.repeats, lambda sql=sql: db.execute(sql).fetch_arrow_table()
                    )
                # LIMIT 1 may take any row; the others are the same rows
                if answers["pyairport"].num_rows != answers["delta_scan"].num_rows or (
                    label != "SELECT * LIMIT 1"
                    and not _same_rows(answers["pyairport"], answers["delta_scan"])
                ):
                    print(f"  {label:<24} WRONG: pyairport answered otherwise")
                    continue
                base = times["delta_scan"]
                print(
                    f"  {label:<24}{times['pyairport']:>9.3f}s ({times['pyairport'] / base:>5.2f})"
                    f"{base:>11.3f}s"
                )
            db.close()


if __name__ == "__main__":
    main()
