"""TPC-H through pyairport, beside DuckDB reading the same Delta folders itself (delta_scan),
DuckDB's own in-memory tables and, optionally, Spark SQL.

DuckDB's `tpch` extension generates scale factor --scale; delta-rs writes each table as a plain
Delta table and Spark copies them as row-tracked tables with deletion vectors (the two shapes a
lake has). For each shape `pyairport serve --backend spark --warehouse …` runs in its own
process and one DuckDB 1.4.4 runs the 22 queries (`USE lake.tpch`, unchanged) through it,
through delta_scan views of the same folders and over its own tables, best of --repeats; every
answer must equal DuckDB's own (and the reference DuckDB ships, at 0.01, 0.1 and 1) or the
query is reported WRONG and not timed. It prints the ratio to delta_scan per query, the
geometric mean and the worst, and the server's peak resident memory (its Python process and
Spark's JVM) while the queries ran.

With --dml, the refresh functions (RF1: INSERT of new orders and their lineitems; RF2: DELETE by
`IN (subquery)`; an UPDATE) run through DuckDB (on one thread) on the row-tracked lake, timed
beside Spark SQL
doing the same to a copy of the same tables (INSERT … SELECT, MERGE … WHEN MATCHED THEN DELETE,
MERGE … UPDATE), --dml-rounds times on rows no other round touches (the first round is each
JVM's first run of these statements on these tables, the Spark SQL's after its own MERGEs of
RF2, the server's after its warm-up's; each round and the medians are printed), and the changed
tables are compared with DuckDB's own after the same statements.

With --whole-update, last, every row of the row-tracked `lineitem` is updated through DuckDB,
to one value and then each to its own, beside Spark SQL's UPDATE of a copy and Spark's MERGE
of the rows into another, with the server's peak memory meanwhile; with --stream-every S too,
the one-value UPDATE again while this process's Spark, another writer, appends a row every S
seconds, beside the same UPDATE alone.

    python bench/tpch.py --scale 1 --dml
    python bench/tpch.py --scale 1 --shapes plain --serve '--data-socket auto --scan-parts 2'
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import median
from typing import Any

import duckdb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.duckdb_lake import best_of, serving, settle  # noqa: E402
from bench.spark import _children, _rss_kib  # noqa: E402
from tests import tpch  # noqa: E402
from tests.duckdb import extension as airport_extension  # noqa: E402

JARS = ROOT / ".cache" / "jars"
SPARK_REFRESH = (
    (
        "RF1 orders",
        "INSERT INTO {t}.orders SELECT o_orderkey + {new} AS o_orderkey, o_custkey, o_orderstatus,"
        " o_totalprice, o_orderdate, o_orderpriority, o_clerk, o_shippriority, o_comment"
        " FROM {src}.orders WHERE o_orderkey % {step} = {insert}",
    ),
    (
        "RF1 lineitem",
        "INSERT INTO {t}.lineitem SELECT l_orderkey + {new} AS l_orderkey, l_partkey, l_suppkey,"
        " l_linenumber, l_quantity, l_extendedprice, l_discount, l_tax, l_returnflag,"
        " l_linestatus, l_shipdate, l_commitdate, l_receiptdate, l_shipinstruct, l_shipmode,"
        " l_comment FROM {src}.lineitem WHERE l_orderkey % {step} = {insert}",
    ),
    (
        "RF2 lineitem",
        "MERGE INTO {t}.lineitem t USING (SELECT o_orderkey FROM {src}.orders"
        " WHERE o_orderkey % {step} = {delete}) s ON t.l_orderkey = s.o_orderkey WHEN MATCHED THEN DELETE",
    ),
    (
        "RF2 orders",
        "MERGE INTO {t}.orders t USING (SELECT o_orderkey FROM {src}.orders"
        " WHERE o_orderkey % {step} = {delete}) s ON t.o_orderkey = s.o_orderkey WHEN MATCHED THEN DELETE",
    ),
    (
        "UPDATE orders",
        "MERGE INTO {t}.orders t USING (SELECT o_orderkey FROM {src}.orders"
        " WHERE o_orderkey % {step} = {update}) s ON t.o_orderkey = s.o_orderkey WHEN MATCHED THEN"
        " UPDATE SET o_comment = 'refreshed', o_totalprice = t.o_totalprice + 1",
    ),
)


@contextmanager
def peak_rss(pid: int) -> Iterator[dict[str, int]]:
    """The most the server (pid) and its children (Spark's JVM) held while the block ran, KiB."""
    peak = {"python": 0, "jvm": 0}
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak["python"] = max(peak["python"], _rss_kib(pid))
            jvm = sum(_rss_kib(child) for child in _descendants(pid))
            peak["jvm"] = max(peak["jvm"], jvm)
            time.sleep(0.1)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        yield peak
    finally:
        done.set()
        watcher.join()


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for child in _children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def _spark(scratch: Path) -> Any:
    """The bench's own Spark; its warehouse (which it writes nothing to: tables go by path)
    in scratch, not an empty spark-warehouse left in the working directory."""
    from pyairport.backends.spark.session import spark_session

    return spark_session(
        master="local[2]",
        warehouse=scratch / "spark-warehouse",
        jars_dir=JARS if (JARS / ".fetched").exists() else None,
        app_name="pyairport-tpch-bench",
        conf={"spark.driver.memory": "6g"},
    )


def queries_bench(
    db: Any, location: str, warehouse: Path, scale: float, repeats: int, spark: Any | None
) -> list[float]:
    """The 22 queries three (or four) ways; the ratios to delta_scan of those answered right."""
    db.execute(f"ATTACH '' AS lake (TYPE airport, LOCATION '{location}')")
    db.execute("CREATE SCHEMA IF NOT EXISTS memory.ds")
    for table in tpch.TABLES:
        folder = warehouse / tpch.SCHEMA / table
        db.execute(
            f"CREATE OR REPLACE VIEW memory.ds.{table} AS SELECT * FROM delta_scan('{folder}')"
        )
    if spark is not None:
        for table in tpch.TABLES:
            spark.read.format("delta").load(
                str(warehouse / tpch.SCHEMA / table)
            ).createOrReplaceTempView(table)
    heading = f"  {'query':<6}{'pyairport':>18}{'delta_scan':>12}{'in memory':>12}"
    print(heading + (f"{'Spark SQL':>12}" if spark is not None else ""))
    ratios = []
    for number, query in tpch.queries(db):
        lake_time, got = best_of(repeats, lambda q=query: tpch.run(db, "lake.tpch", q))
        scan_time, _ = best_of(repeats, lambda q=query: tpch.run(db, "memory.ds", q))
        own_time, own = best_of(repeats, lambda q=query: tpch.run(db, "memory.main", q))
        problem = tpch.differences(got, own)
        reference = tpch.reference(db, scale, number)
        if not problem and reference is not None:
            problem = tpch.differences_from_reference(got, reference)
        if problem:
            print(f"  q{number:<5}WRONG: {problem}")
            continue
        ratio = lake_time / scan_time
        ratios.append(ratio)
        line = (
            f"  q{number:<5}{lake_time:>9.3f}s ({ratio:>5.2f}){scan_time:>11.3f}s{own_time:>11.3f}s"
        )
        if spark is not None:
            spark_time, _ = best_of(1, lambda q=query: spark.sql(q).collect())
            line += f"{spark_time:>11.3f}s"
        print(line)
    db.execute("DETACH lake")
    return ratios


def dml_bench(db: Any, location: str, tracked: Path, plain: Path, spark: Any, rounds: int) -> None:
    """The refresh functions through pyairport beside Spark SQL doing the same on a copy,
    rounds times (each round on rows of its own): the first round is each JVM's first run of
    a statement on these tables, the later ones the same statements warm."""
    copy = tracked.parent / "tracked-copy"
    shutil.copytree(tracked, copy)
    for table in tpch.TABLES:
        spark.read.format("delta").load(str(plain / tpch.SCHEMA / table)).createOrReplaceTempView(
            f"src_{table}"
        )
    db.execute(f"ATTACH '' AS lake (TYPE airport, LOCATION '{location}')")
    # DuckDB's Python client spins while one of its threads waits for the server to commit
    # (py-spy: CompletePendingQuery polling ExecuteTask), up to 4 s of CPU in a 6 s UPDATE,
    # taken from the server's Spark on this 2-core machine; the Spark SQL beside it has no
    # client. On one thread DuckDB waits without spinning (its scans here are one stream).
    db.execute("SET threads = 1")
    print(f"  {'statement':<24}{'pyairport':>12}{'Spark SQL':>12}{'ratio':>8}")
    times: dict[str, list[tuple[float, float]]] = {}
    for round_ in range(rounds):
        values = tpch.refresh_values(round_)
        pairs = zip(tpch.REFRESH, SPARK_REFRESH, strict=True)
        for (label, statement), (_, spark_statement) in pairs:
            sql = statement.format(db="lake.tpch", **values)
            lake_time, _ = best_of(1, lambda sql=sql: db.execute(sql).fetchall())
            spark_sql = _spark_names(spark_statement.format(t="{t}", src="{src}", **values), copy)
            spark_time, _ = best_of(1, lambda q=spark_sql: spark.sql(q).collect())
            times.setdefault(label, []).append((lake_time, spark_time))
            named = f"{label}, round {round_ + 1}" if rounds > 1 else label
            print(f"  {named:<24}{_timed(lake_time, spark_time)}")
    if rounds > 1:  # one run of a statement varies by a third here: the medians say more
        for label, pairs in times.items():
            ours, theirs = zip(*pairs, strict=True)
            print(f"  {label + ', median':<24}{_timed(median(ours), median(theirs))}")
    db.execute("RESET threads")
    tpch.refresh(db, "memory.main", rounds)
    for totals in tpch.TOTALS:
        problem = tpch.differences(
            tpch.run(db, "lake.tpch", totals), tpch.run(db, "memory.main", totals)
        )
        print(
            f"  after the refresh: {totals.split(' FROM ')[1]} {'exact' if not problem else 'WRONG: ' + problem}"
        )
    db.execute("DETACH lake")


# Every row of lineitem updated two ways: each row to a value of its own (the MERGE by values)
# and to one value (the server runs Spark's own UPDATE: no rows to match); label, the column
# set, its value as DuckDB and Spark SQL compute it (the MERGE's source too), and a check of
# the lake afterwards: (its count of changed rows, its rows). The MERGE by values first,
# and Spark's MERGE before its UPDATE, so that each side's MERGE is its JVM's first large one:
# a JVM's get faster over its first few (47.6 s, then 34.1 s in one JVM, docs/benchmarks.md).
WHOLE_UPDATES = (
    (
        "each its own",
        "l_quantity",
        "l_quantity + 1",
        None,  # against the sum before: sum(l_quantity) grows by one a row
    ),
    (
        "one value",
        "l_comment",
        "'updated whole'",
        "count(*) FILTER (WHERE l_comment = 'updated whole'), count(*)",
    ),
)
KEY = ("l_orderkey", "l_partkey", "l_suppkey", "l_linenumber")


def whole_update_bench(
    db: Any, location: str, tracked: Path, spark: Any, pid: int, stream_every: float | None
) -> None:
    """Every row of lineitem updated through DuckDB (which sends each row's rowid and the
    columns set), beside Spark SQL's UPDATE of a copy and Spark's MERGE of the same rows by
    their key into another, and the server's peak memory meanwhile: what it holds is the
    rowids and the columns that tell the rows apart; the values past 64 MiB, and the MERGE's
    source, wait in staged files (staging.py)."""
    db.execute(f"ATTACH '' AS lake (TYPE airport, LOCATION '{location}')")
    db.execute("SET threads = 1")  # as dml_bench: DuckDB's client spins while it waits
    copy, merged = tracked.parent / "lineitem-copy", tracked.parent / "lineitem-merged"
    for label, column, value, check in WHOLE_UPDATES:
        setting = f"{column} = {value}"
        for folder in (copy, merged):
            shutil.rmtree(folder, ignore_errors=True)
            shutil.copytree(tracked / tpch.SCHEMA / "lineitem", folder)
        os.sync()  # the copies' 0.4 GB on disk before anything is timed, not written back beside it
        (before,) = db.execute("SELECT sum(l_quantity) FROM lake.tpch.lineitem").fetchone()
        statement = f"UPDATE {{t}} SET {setting}"
        with peak_rss(pid) as peak:
            ours, _ = best_of(
                1, lambda s=statement: db.execute(s.format(t="lake.tpch.lineitem")).fetchall()
            )
        merge = (
            f"MERGE INTO delta.`{merged}` t USING (SELECT {', '.join(KEY)}, {value} AS c"
            f" FROM delta.`{merged}`) s ON {' AND '.join(f't.{k} = s.{k}' for k in KEY)}"
            f" WHEN MATCHED THEN UPDATE SET {column} = s.c"
        )
        by_key, _ = best_of(1, lambda m=merge: spark.sql(m).collect())
        theirs, _ = best_of(
            1, lambda s=statement: spark.sql(s.format(t=f"delta.`{copy}`")).collect()
        )
        if check is None:
            check = f"sum(l_quantity) - {before}, count(*)"
        (changed, rows) = db.execute(f"SELECT {check} FROM lake.tpch.lineitem").fetchone()
        print(
            f"  {'UPDATE every lineitem':<24}{_timed(ours, theirs)}"
            f"  {'exact' if changed == rows else f'WRONG: {changed:,} of {rows:,} rows'};"
            f" {label}: {setting}; server peak RSS: Python {peak['python'] / 1024:.0f} MiB,"
            f" JVM {peak['jvm'] / 1024:.0f} MiB"
        )
        print(
            f"  {'  beside its MERGE by key':<24}{_timed(ours, by_key)}  (Spark's MERGE of the rows)"
        )
    if stream_every is not None:
        streamed_update_bench(db, tracked, spark, stream_every)
    db.execute("RESET threads")
    db.execute("DETACH lake")


def streamed_update_bench(db: Any, tracked: Path, spark: Any, every: float) -> None:
    """Every lineitem set to one value through DuckDB alone, then again while Spark (another
    writer, this process's JVM) appends a copy of a row under a new, negative order key every
    `every` seconds. The UPDATE names its rows by their values at the version it read them
    at; appends of rows holding none of those values let it run on (later_commits.py), and
    no appended row DuckDB did not scan may change."""
    folder = tracked / tpch.SCHEMA / "lineitem"
    source = spark.sql(f"SELECT * FROM delta.`{folder}` WHERE l_orderkey = 1 LIMIT 1")
    row = source.collect()[0].asDict()

    def append(key: int) -> None:  # a blind append, as a stream's: it reads nothing
        values = row | {"l_orderkey": key, "l_comment": "appended"}
        new = spark.createDataFrame([tuple(values[f.name] for f in source.schema)], source.schema)
        new.write.format("delta").mode("append").save(str(folder))

    timings = {}
    for label, value in (("alone", "'alone'"), ("under a stream", "'streamed'")):
        stop = threading.Event()
        appended: list[int] = []

        def stream(stop: threading.Event = stop, appended: list[int] = appended) -> None:
            while not stop.wait(every):
                append(-1 - len(appended))
                appended.append(1)

        writer = threading.Thread(target=stream, daemon=True)
        if label != "alone":
            writer.start()
        started = time.perf_counter()
        try:
            update = f"UPDATE lake.tpch.lineitem SET l_comment = {value}"
            (changed,) = db.execute(update).fetchone()
        except duckdb.Error as refused:  # Delta's own conflict check may refuse it
            changed, why = -1, str(refused).split("message: ")[-1][:160]
        finally:
            timings[label] = time.perf_counter() - started
            stop.set()
            if writer.is_alive():
                writer.join()
        if changed < 0:
            where = f"WHERE l_comment = {value}"
            (partly,) = db.execute(f"SELECT count(*) FROM lake.tpch.lineitem {where}").fetchone()
            print(
                f"  {'UPDATE every lineitem':<24}{timings[label]:>11.2f}s"
                f"{timings[label] / timings['alone']:>8.2f}  "
                f"{'refused' if not partly else f'WRONG: {partly:,} rows changed'};"
                f" one value, {label}: {len(appended)} rows appended meanwhile: {why}"
            )
            continue
        (set_to, others, kept, stale) = db.execute(
            f"SELECT count(*) FILTER (WHERE l_comment = {value}),"
            " count(*) FILTER (WHERE l_orderkey < 0 AND l_comment <> 'appended'"
            f" AND l_comment <> {value}),"
            " count(*) FILTER (WHERE l_orderkey < 0 AND l_comment = 'appended'),"
            f" count(*) FILTER (WHERE l_orderkey > 0 AND l_comment <> {value})"
            " FROM lake.tpch.lineitem"
        ).fetchone()
        exact = set_to == changed and not others and not stale
        print(
            f"  {'UPDATE every lineitem':<24}{timings[label]:>11.2f}s"
            f"{timings[label] / timings['alone']:>8.2f}  "
            f"{'exact' if exact else f'WRONG: {set_to:,} set, {changed:,} changed, {stale:,} not'};"
            f" one value, {label}: {len(appended)} rows appended meanwhile, {kept} kept as"
            " appended"
        )


def _timed(ours: float, theirs: float) -> str:
    return f"{ours:>11.2f}s{theirs:>11.2f}s{ours / theirs:>8.2f}"


def _spark_names(statement: str, copy: Path) -> str:
    """The Spark statement over the copy's tables (by path) and the plain tables' views."""
    for table in ("orders", "lineitem"):
        statement = statement.replace(f"{{t}}.{table}", f"delta.`{copy / tpch.SCHEMA / table}`")
        statement = statement.replace(f"{{src}}.{table}", f"src_{table}")
    return statement


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--shapes", default="plain,tracked")
    parser.add_argument("--dml", action="store_true", help="time the refresh functions too")
    parser.add_argument(
        "--dml-rounds", type=int, default=3, help="the refresh functions' rounds (rows apart)"
    )
    parser.add_argument(
        "--whole-update",
        action="store_true",
        help="last, UPDATE every row of the row-tracked lineitem, beside Spark SQL's",
    )
    parser.add_argument(
        "--stream-every",
        type=float,
        metavar="S",
        help="with --whole-update: the one-value UPDATE again under appends every S seconds",
    )
    parser.add_argument("--spark-sql", action="store_true", help="time Spark SQL's queries too")
    parser.add_argument(
        "--serve",
        default="",
        metavar="FLAGS",
        help="more flags for `pyairport serve`, e.g. '--data-socket auto --scan-parts 2'",
    )
    args = parser.parse_args()
    extension = airport_extension.locate()
    shapes = args.shapes.split(",")
    with tempfile.TemporaryDirectory(prefix="pyairport-tpch-") as scratch:
        root = Path(scratch)
        db = airport_extension.connect(extension)
        db.execute("LOAD delta")
        started = time.perf_counter()
        tpch.generate(db, args.scale)
        tpch.write_plain(db, root / "plain")
        wanted = "tracked" in shapes or args.dml or args.whole_update or args.spark_sql
        spark = _spark(root) if wanted else None
        if spark is not None and "tracked" in shapes:
            tpch.write_tracked(spark, root / "plain", root / "tracked")
            settle(os.getpid())  # this process's Spark, busy for a while after its writes
        rows = db.execute("SELECT count(*) FROM lineitem").fetchone()[0]
        print(
            f"TPC-H SF {args.scale:g} (lineitem {rows:,} rows), made in"
            f" {time.perf_counter() - started:.0f} s; DuckDB"
            f" {db.execute('SELECT version()').fetchone()[0]}, best of {args.repeats};"
            " ratios to delta_scan"
        )
        for shape in shapes:
            warehouse = root / shape
            with serving(warehouse, *shlex.split(args.serve)) as (location, pid):
                print(f"{shape} tables{f' (serve {args.serve})' if args.serve else ''}:")
                with peak_rss(pid) as peak:
                    ratios = queries_bench(
                        db,
                        location,
                        warehouse,
                        args.scale,
                        args.repeats,
                        spark if args.spark_sql else None,
                    )
                print(
                    f"  geomean {geomean(ratios):.2f}, worst {max(ratios, default=float('nan')):.2f};"
                    f" {len(ratios)}/22 right; server peak RSS: Python"
                    f" {peak['python'] / 1024:.0f} MiB, JVM {peak['jvm'] / 1024:.0f} MiB"
                )
                if args.dml and shape == "tracked" and spark is not None:
                    dml_bench(db, location, warehouse, root / "plain", spark, args.dml_rounds)
                if args.whole_update and shape == "tracked" and spark is not None:
                    whole_update_bench(db, location, warehouse, spark, pid, args.stream_every)
        db.close()
        if spark is not None:
            spark.stop()


if __name__ == "__main__":
    main()
