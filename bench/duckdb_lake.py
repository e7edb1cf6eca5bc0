"""DuckDB reading a Delta lake through pyairport, against DuckDB reading the same files itself
(the `delta` extension's delta_scan): the limit a Flight server is held to.

A plain Delta table of N rows in 5 files (id, customer, amount, note) and a 1,024-row
dimension table (customer, region), written by delta-rs into a fresh warehouse, served by
`pyairport serve --backend spark --warehouse` in its own process. One DuckDB 1.4.4 with the
Airport and delta extensions runs each query both ways, best of --repeats, and prints the
ratio (pyairport / delta_scan; 1.0 is DuckDB's own speed), and a third time through a server
started with --delta-scan-refs (DuckDB then reads the files itself, by delta_scan). The
answers of every way must agree, or the query is reported as wrong and not timed.

The last lines: an earlier version's sum named by its number and by its commit's time, a
join of two lake tables whose plan statistics change (EXPLAIN through pyairport shows whether
DuckDB pruned it from the tables' statistics), how much the server's resident memory grew
while DuckDB read every row (the table is about 75 times the server's 65,536-row batches: a
server that held the table would grow by its size), and the sum of a version Spark must read
(one of another shape than today's) beside today's, which delta-rs reads.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.duckdb_client import _free_port  # noqa: E402
from bench.spark import _children, rss_while  # noqa: E402
from tests.duckdb import extension as airport_extension  # noqa: E402

FILES = 5
CUSTOMERS = 1024

QUERIES: dict[str, str] = {
    "count(*)": "SELECT count(*) FROM {sales}",
    "sum(amount)": "SELECT round(sum(amount), 2) FROM {sales}",
    "GROUP BY customer": "SELECT customer, round(sum(amount), 2) FROM {sales} GROUP BY customer ORDER BY 1",
    "WHERE note = 'n5'": "SELECT count(*) FROM {sales} WHERE note = 'n5'",
    "join dimension, GROUP BY region": (
        "SELECT c.region, round(sum(s.amount), 2) FROM {sales} s JOIN {customers} c USING (customer)"
        " GROUP BY c.region ORDER BY 1"
    ),
    "WHERE id BETWEEN 1000 AND 1999": "SELECT * FROM {sales} WHERE id BETWEEN 1000 AND 1999 ORDER BY id",
    "SELECT * (all rows)": "SELECT * FROM {sales}",
}
# Ids of the dimension table's "late" rows lie past every sales id: with statistics DuckDB
# sees that no sale can match and plans an empty result.
STATS_JOIN = "SELECT count(*) FROM {sales} s JOIN {late} l ON s.id = l.id"


def write_lake(warehouse: Path, rows: int) -> None:
    """The tables, written by delta-rs (a plain Delta table, as any writer makes it)."""
    import numpy as np
    from deltalake import write_deltalake

    per_file = rows // FILES
    sales = warehouse / "lake" / "sales"
    for part in range(FILES):
        ids = np.arange(part * per_file, (part + 1) * per_file, dtype=np.int64)
        batch = pa.table(
            {
                "id": ids,
                "customer": pa.array(np.char.add("c", (ids % CUSTOMERS).astype(str))),
                "amount": (ids % 1000).astype(np.float64) / 10,
                "note": pa.array(np.char.add("n", (ids % 10).astype(str))),
            }
        )
        write_deltalake(str(sales), batch, mode="append")
    keys = np.arange(CUSTOMERS)
    customers = pa.table(
        {
            "customer": pa.array(np.char.add("c", keys.astype(str))),
            "region": pa.array(np.char.add("r", (keys % 8).astype(str))),
        }
    )
    write_deltalake(str(warehouse / "lake" / "customers"), customers)
    late = pa.table({"id": np.arange(rows * 2, rows * 2 + CUSTOMERS, dtype=np.int64)})
    write_deltalake(str(warehouse / "lake" / "late"), late)


@contextmanager
def serving(warehouse: Path, *extra: str) -> Iterator[tuple[str, int]]:
    """`pyairport serve --backend spark` on the warehouse (and extra flags); yields
    (location, pid) once the server serves, Spark's warm-up is over and the server is idle:
    the warm-up keeps both cores busy for half a minute, and Spark's JVM goes on compiling
    what it ran for about ten seconds after it (measured: 1.7 cores); a query timed beside
    either measures them."""
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "pyairport",
        "serve",
        "--backend",
        "spark",
        "--warehouse",
        str(warehouse),
        "--port",
        str(port),
        *extra,
    ]
    jars = ROOT / ".cache" / "jars"
    if (jars / ".fetched").exists():
        command += ["--jars-dir", str(jars)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if "serving" in line.lower():
                break
        else:
            raise RuntimeError("pyairport serve exited before serving")
        warmed = threading.Event()
        # read on, so that what the server says later never fills the pipe and stops it
        threading.Thread(target=_watch, args=(process.stdout, warmed), daemon=True).start()
        if "--no-spark-warm-up" not in extra:
            warmed.wait(WARM_UP_SECONDS)  # none comes from a Spark not on this machine
        settle(process.pid)
        yield f"grpc://127.0.0.1:{port}", process.pid
    finally:
        process.terminate()
        process.wait(60)


WARM_UP_SECONDS = 180.0
"""The longest a server's Spark warm-up is waited for (it takes about half a minute here)."""


def _watch(lines: Any, warmed: threading.Event) -> None:
    """Read the server's output to its end, setting warmed at the warm-up's line."""
    for line in lines:
        if "warm" in line.lower():
            warmed.set()


def settle(pid: int, most: float = 120.0) -> None:
    """Wait (up to most seconds) until pid and its children use under a tenth of a core."""
    deadline = time.monotonic() + most
    before = _cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = _cpu_seconds(pid)
        if now - before < 0.1:
            return
        before = now


def _cpu_seconds(pid: int) -> float:
    """The CPU time pid and its descendants have used (user and system)."""
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended while we looked
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        todo += _children(current)
    return total


def _same_rows(a: pa.Table, b: pa.Table) -> bool:
    """The same rows, in any order (a scan's order is not a query's answer)."""
    if a.equals(b):
        return True
    keys = [(name, "ascending") for name in a.column_names]
    return a.schema == b.schema and a.sort_by(keys).equals(b.sort_by(keys))


def best_of(repeats: int, run: Callable[[], Any]) -> tuple[float, Any]:
    best, answer = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        answer = run()
        best = min(best, time.perf_counter() - start)
    return best, answer


def time_travel(db: Any, folder: Path, repeats: int) -> None:
    """sum(amount) of an earlier version through pyairport, named by its version and by its
    commit's time (which the server turns into the version from the log: commit_times.py)."""
    from datetime import UTC, datetime, timedelta

    version = FILES // 2
    log = folder / "_delta_log" / f"{version:020d}.json"
    committed = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(
        milliseconds=log.stat().st_mtime_ns // 1_000_000
    )
    query = "SELECT round(sum(amount), 2) FROM lake.lake.sales AT ({at})"
    by_version, answer = best_of(
        repeats, lambda: db.execute(query.format(at=f"VERSION => {version}")).fetchall()
    )
    at = f"TIMESTAMP => TIMESTAMPTZ '{committed.isoformat()}'"
    by_time, same = best_of(repeats, lambda: db.execute(query.format(at=at)).fetchall())
    label = f"sum(amount) of version {version}"
    if same != answer:
        print(f"  {label}: WRONG: by its commit's time {same}, by its number {answer}")
        return
    print(
        f"  {label}: by its number {by_version:.3f}s (baseline), by its commit's time"
        f" {by_time:.3f}s ({by_time / by_version:.2f})"
    )


def spark_read(db: Any, repeats: int) -> None:
    """sum(amount) of the table's last version before a column was added (another shape
    than today's: Spark reads it, scans.py) against the same rows at today's version (which
    delta-rs reads). Last, since it changes the table."""
    (version,) = db.execute("SELECT max(version) FROM lake.delta.history('lake.sales')").fetchone()
    db.execute("ALTER TABLE lake.lake.sales ADD COLUMN extra VARCHAR")
    query = "SELECT round(sum(amount), 2), count(*) FROM lake.lake.sales{at}"
    by_delta_rs, answer = best_of(repeats, lambda: db.execute(query.format(at="")).fetchall())
    at = f" AT (VERSION => {version})"
    by_spark, same = best_of(repeats, lambda: db.execute(query.format(at=at)).fetchall())
    label = "sum(amount) of the version before a column was added"
    if same != answer:
        print(f"  {label}: WRONG: read by Spark {same}, today's version {answer}")
        return
    print(
        f"  {label}: today's version by delta-rs {by_delta_rs:.3f}s (baseline), that version"
        f" by Spark {by_spark:.3f}s ({by_spark / by_delta_rs:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--serve",
        default="",
        metavar="FLAGS",
        help="more flags for both `pyairport serve`s, e.g. '--no-spark-warm-up'",
    )
    args = parser.parse_args()
    flags = shlex.split(args.serve)
    extension = airport_extension.locate()
    with tempfile.TemporaryDirectory(prefix="pyairport-lake-bench-") as scratch:
        warehouse = Path(scratch) / "warehouse"
        write_lake(warehouse, args.rows)
        with (
            serving(warehouse, *flags) as (location, pid),
            serving(warehouse, "--delta-scan-refs", *flags) as (refs_location, _),
        ):
            db = airport_extension.connect(extension)
            db.execute("LOAD delta")
            db.execute(f"ATTACH '' AS lake (TYPE airport, LOCATION '{location}')")
            db.execute(f"ATTACH '' AS refs (TYPE airport, LOCATION '{refs_location}')")
            own = {
                name: f"delta_scan('{warehouse / 'lake' / name}')"
                for name in ("sales", "customers", "late")
            }
            ways = {
                "pyairport": {name: f"lake.lake.{name}" for name in own},
                "--delta-scan-refs": {name: f"refs.lake.{name}" for name in own},
                "delta_scan": own,
            }
            print(
                f"DuckDB {db.execute('SELECT version()').fetchone()[0]} reading a {args.rows:,}-row"
                f" Delta table ({FILES} files), best of {args.repeats}; ratios to delta_scan"
            )
            print(f"  {'query':<34}{'pyairport':>18}{'--delta-scan-refs':>20}{'delta_scan':>12}")
            for label, query in [*QUERIES.items(), ("join of two lake tables", STATS_JOIN)]:
                times, answers = {}, {}
                for way, names in ways.items():
                    sql = query.format(**names)
                    times[way], answers[way] = best_of(
                        args.repeats, lambda sql=sql: db.execute(sql).fetch_arrow_table()
                    )
                wrong = [w for w in ways if not _same_rows(answers[w], answers["delta_scan"])]
                if wrong:
                    print(f"  {label:<34} WRONG: {', '.join(wrong)} answered otherwise")
                    continue
                base = times["delta_scan"]
                print(
                    f"  {label:<34}{times['pyairport']:>9.3f}s ({times['pyairport'] / base:>5.2f})"
                    f"{times['--delta-scan-refs']:>11.3f}s ({times['--delta-scan-refs'] / base:>5.2f})"
                    f"{base:>11.3f}s"
                )
            time_travel(db, warehouse / "lake" / "sales", args.repeats)
            plan = db.execute("EXPLAIN " + STATS_JOIN.format(**ways["pyairport"])).fetchall()
            text = "\n".join(row[1] for row in plan)
            pruned = "EMPTY_RESULT" in text or not re.search(r"HASH_JOIN|NESTED_LOOP", text)
            print(
                "  the join's plan through pyairport: "
                + ("pruned by statistics" if pruned else "a join")
            )
            sql = QUERIES["SELECT * (all rows)"].format(**ways["pyairport"])
            before, highest = rss_while(pid, lambda: db.execute(sql).fetch_arrow_table())
            growth = highest - before
            print(
                f"  server RSS {before / 1024:.0f} MiB, grew {growth / 1024:.0f} MiB while DuckDB"
                f" read all {args.rows:,} rows ({args.rows * 26 / 2**20:.0f} MiB of values)"
            )
            spark_read(db, args.repeats)
            db.close()


if __name__ == "__main__":
    main()
