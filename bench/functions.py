"""A Python scalar function called from DuckDB through pyairport, beside the same Python
function registered in DuckDB itself (`create_function(..., type='arrow')`, the floor: no
Flight at all). The function is the demo catalog's email_domain (pyarrow compute); the
server is `pyairport serve --backend memory` in its own process.

    SELECT count(DISTINCT f('u' || i || '@d' || (i % 100) || '.org')) FROM range(N) t(i)

DuckDB calls a function a chunk of 2,048 rows at a time either way; through pyairport each
chunk is one round trip (DuckDB sends the chunk and waits for its answer). Prints rows/s,
best of --repeats, and the ratio pyairport / DuckDB's own.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.duckdb_client import pyairport  # noqa: E402
from pyairport.demo.functions import email_domain  # noqa: E402
from tests.duckdb import extension as airport_extension  # noqa: E402

QUERY = "SELECT count(DISTINCT {f}('u' || i || '@d' || (i % 100) || '.org')) FROM range({n}) t(i)"


def _best(run: object, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run()  # type: ignore[operator]
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import duckdb
    from duckdb.sqltypes import VARCHAR

    extension = airport_extension.locate()
    with pyairport("memory") as location:
        remote = airport_extension.connect(extension)
        remote.execute(f"ATTACH '' AS lake (TYPE airport, LOCATION '{location}')")
        local = duckdb.connect()
        local.create_function(
            "email_domain",
            email_domain.fn,
            [VARCHAR],
            VARCHAR,
            type="arrow",
        )
        queries = {
            "DuckDB's own (create_function, arrow)": (
                local,
                QUERY.format(f="email_domain", n=args.rows),
            ),
            "pyairport memory": (
                remote,
                QUERY.format(f="lake.demo_schema.email_domain", n=args.rows),
            ),
        }
        answers = {name: db.execute(sql).fetchall() for name, (db, sql) in queries.items()}
        if len(set(map(str, answers.values()))) != 1:
            raise SystemExit(f"the two answers differ: {answers}")
        seconds = {
            name: _best(lambda db=db, sql=sql: db.execute(sql).fetchall(), args.repeats)
            for name, (db, sql) in queries.items()
        }
    print(
        f"A scalar Python function over {args.rows:,} rows from DuckDB {duckdb.__version__}"
        f" (best of {args.repeats}; pyarrow {pa.__version__})"
    )
    for name, took in seconds.items():
        print(f"  {name:<40} {args.rows / took:>12,.0f} rows/s  ({took * 1000:7.1f} ms)")
    own, served = seconds.values()
    print(f"  ratio pyairport / DuckDB's own       {own / served:12.2f}   (goal >= 0.50)")


if __name__ == "__main__":
    main()
