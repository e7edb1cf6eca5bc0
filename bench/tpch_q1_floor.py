"""TPC-H q1 through Flight, beside DuckDB's own Delta reader: the floor of any Flight data
plane for a query that reads 6M rows of seven columns, and where pyairport stands on it.

TPC-H --scale's `lineitem` is written as a plain Delta table by delta-rs. DuckDB 1.4.4 runs
q1 unchanged (its `lineitem` replaced), best of --repeats, in one run:

- `delta_scan` of the folder: DuckDB's own reader, the baseline (1.00);
- `airport_take_flight` from a bare Arrow C++ Flight server (pyarrow's FlightServerBase)
  serving q1's seven columns from memory, typed as pyairport serves them (strings as
  `string`, DECIMAL(15,2) as `decimal64`), in 65,536-row batches, over a Unix socket and over
  TCP loopback: no reading, no Python per batch — what moving the columns through Flight into
  DuckDB costs on this machine;
- `pyairport serve --backend spark` over the same folder: at its TCP address, and with
  `--data-socket auto` (DuckDB follows the endpoints to the Unix socket), in one part and in
  two (`--scan-parts 2`: two streams DuckDB reads on two threads), and with two data workers
  (`--data-workers 2`: the parts read and sent by two worker processes), in one part and two.

Every answer must equal delta_scan's, or the way is reported WRONG. Then, for `delta_scan` and
each way of serving, four DuckDBs summing two columns of `lineitem` at once against one alone:
with DuckDB's default threads (one query already takes both of this machine's cores, so four
take about 4x one's time by DuckDB's own reader), and with one thread each (2x where the
reading costs no CPU beside DuckDB's thread).

    python bench/tpch_q1_floor.py --scale 1
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.data_plane_floor import BATCH_ROWS, ColumnServer  # noqa: E402
from bench.duckdb_lake import best_of, serving  # noqa: E402
from pyairport.backends.spark.stored_types import served_type  # noqa: E402
from tests import tpch  # noqa: E402
from tests.duckdb import extension as airport_extension  # noqa: E402

COLUMNS = [
    "l_returnflag",
    "l_linestatus",
    "l_quantity",
    "l_extendedprice",
    "l_discount",
    "l_tax",
    "l_shipdate",
]

# The reads are delta-rs': Spark's warm-up would only take CPU from them.
SERVED = {
    name: ("--no-spark-warm-up", *flags)
    for name, flags in {
        "pyairport, TCP": (),
        "pyairport, data socket": ("--data-socket", "auto"),
        "pyairport, data socket, 2 parts": ("--data-socket", "auto", "--scan-parts", "2"),
        "pyairport, 2 data workers": ("--data-workers", "2"),
        "pyairport, 2 data workers, 2 parts": ("--data-workers", "2", "--scan-parts", "2"),
    }.items()
}


def _as_served(table: pa.Table) -> pa.Table:
    """The columns as pyairport's DoGet types them: delta-rs' string views as strings, its
    DECIMAL(15,2) as decimal64 (spark/stored_types.served_type)."""
    fields = [
        pa.field(f.name, pa.string() if pa.types.is_string_view(f.type) else served_type(f.type))
        for f in table.schema
    ]
    return table.cast(pa.schema(fields))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from deltalake import DeltaTable

    with tempfile.TemporaryDirectory(prefix="pyairport-q1-") as scratch:
        warehouse = Path(scratch) / "lake"
        db = airport_extension.connect(airport_extension.locate())
        db.execute("LOAD delta")
        tpch.generate(db, args.scale)
        tpch.write_plain(db, warehouse)
        q1 = dict(tpch.queries(db))[1]
        folder = warehouse / tpch.SCHEMA / "lineitem"
        columns = _as_served(DeltaTable(str(folder)).to_pyarrow_table(columns=COLUMNS))
        batches = pa.Table.from_batches(columns.to_batches(max_chunksize=BATCH_ROWS))
        servers = {
            "bare Arrow C++ server, Unix socket": ColumnServer(
                f"grpc+unix://{scratch}/floor.sock", batches
            ),
            "bare Arrow C++ server, TCP": ColumnServer("grpc://127.0.0.1:0", batches),
        }
        for server in servers.values():
            if server.where.endswith(":0"):
                server.where = f"grpc://127.0.0.1:{server.port}"
            threading.Thread(target=server.serve, daemon=True).start()
        ways: dict[str, Callable[[], Any]] = {
            "DuckDB delta_scan": lambda: db.execute(
                q1.replace("lineitem", f"delta_scan('{folder}')", 1)
            ).fetchall()
        }
        for name, server in servers.items():
            sql = q1.replace("lineitem", f"airport_take_flight('{server.where}', ['amount'])", 1)
            ways[name] = lambda sql=sql: db.execute(sql).fetchall()
        print(
            f"TPC-H q1 over lineitem's {columns.num_rows:,} rows ({columns.nbytes / 1e6:.0f} MB"
            f" of Arrow as served), DuckDB {db.execute('SELECT version()').fetchone()[0]},"
            f" best of {args.repeats}; ratios to delta_scan"
        )
        base, expected = _report(ways, args.repeats)
        together = {
            "DuckDB delta_scan": _four_against_one(
                "LOAD delta",
                SUM_TWO.replace("lake.tpch.lineitem", f"delta_scan('{folder}')"),
                args.repeats,
            )
        }
        for name, flags in SERVED.items():
            with serving(warehouse, *flags) as (location, _):
                db.execute(f"ATTACH '' AS lake (TYPE airport, LOCATION '{location}')")
                run = lambda: tpch.run(db, "lake.tpch", q1)  # noqa: E731
                _report({name: run}, args.repeats, base, expected)
                db.execute("DETACH lake")
                attach = f"ATTACH '' AS lake (TYPE airport, LOCATION '{location}')"
                together[name] = _four_against_one(attach, SUM_TWO, args.repeats)
        print(f"four DuckDBs at once against one: {SUM_TWO}")
        print(f"  {'':<36}{'DuckDB default threads':>32}{'one thread each':>34}")
        for name, (default, single) in together.items():
            print(f"  {name:<36}{_one_and_four(*default):>32}{_one_and_four(*single):>34}")
        db.close()
        for server in servers.values():
            server.shutdown()


SUM_TWO = "SELECT sum(l_quantity), sum(l_extendedprice) FROM lake.tpch.lineitem"


def _four_against_one(
    setup: str, sql: str, repeats: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    """The best time of one DuckDB's sql and of four DuckDBs' at once (each DuckDB after its
    setup statement), with DuckDB's default threads and then with one thread each."""
    extension = airport_extension.locate()
    clients = [airport_extension.connect(extension) for _ in range(4)]
    for client in clients:
        client.execute(setup)

    def four() -> None:
        threads = [threading.Thread(target=lambda c=c: c.execute(sql).fetchall()) for c in clients]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    timings = []
    for threads in ("RESET threads", "SET threads = 1"):
        for client in clients:
            client.execute(threads)
        one_time, _ = best_of(repeats, lambda: clients[0].execute(sql).fetchall())
        four_time, _ = best_of(repeats, four)
        timings.append((one_time, four_time))
    for client in clients:
        client.close()
    return timings[0], timings[1]


def _one_and_four(one: float, four: float) -> str:
    return f"one {one:.3f}s, four {four:.3f}s ({four / one:.2f}x)"


def _report(
    ways: dict[str, Callable[[], Any]],
    repeats: int,
    base: float | None = None,
    expected: Any = None,
) -> tuple[float, Any]:
    """Each way's best time and ratio; the first way's time and answer are the baseline."""
    for name, run in ways.items():
        seconds, answer = best_of(repeats, run)
        if expected is not None and tpch.differences(answer, expected):
            print(f"  {name:<36} WRONG: {tpch.differences(answer, expected)}")
            continue
        base, expected = base or seconds, expected if expected is not None else answer
        print(f"  {name:<36}{seconds * 1000:>9.1f} ms ({seconds / base:>5.2f})", flush=True)
    assert base is not None
    return base, expected


if __name__ == "__main__":
    main()
