"""The benchmark script runs end to end (at a small size) and prints every figure it
promises; the figures themselves are for `make bench`, not for tests."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "run.py"


def test_memory_benchmark_prints_every_figure() -> None:
    run = subprocess.run(
        [sys.executable, str(BENCH), "--rows", "200000", "--repeats", "1"]
        + ["--single-row-statements", "2000"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert re.search(r"ratio memory/sink\s+\d+\.\d\d", out)
    assert re.search(r"page faults", out) and re.search(r"fresh memory.*\d+ ms", out)
    for op in ("UPDATE", "DELETE"):
        for batch in ("65536", "2048"):
            assert re.search(rf"{op}\s+RETURNING on/off\s+{batch}-row batches\s+\d+\.\d\d", out)
            assert re.search(rf"{op}\s+RETURNING on/off, lock-step\s+{batch}-row batches", out)
            assert re.search(
                rf"{op}\s+the table alone, in-process\s+{batch}-row batches.*on/off\s+\d+\.\d\d",
                out,
            )
    assert "the transport alone: a table returning the 100,000 rows it is sent" in out
    for batch in ("65536", "2048"):
        assert re.search(
            rf"{batch}-row batches\s+[\d.]+ ms, RETURNING\s+[\d.]+ ms \(on/off\s+\d+\.\d\d\),"
            r" in lock-step\s+[\d.]+ ms \(on/off\s+\d+\.\d\d\)",
            out,
        )
    assert re.search(r"transport alone: a table returning no rows.*on/off\s+\d+\.\d\d", out)
    for label in ("UPDATE", "UPDATE, RETURNING"):
        assert re.search(
            rf"{label}\s+statements 1-1,000\s+\d+ us each \(baseline\), the last 1,000\s+\d+ us each:"
            r" ratio\s+\d+\.\d\d",
            out,
        )
    assert re.search(
        r"UPDATE, each after a single-row INSERT.*ratio to UPDATE alone\s+\d+\.\d\d", out
    )
    for label in ("DELETE", "INSERT after the deletes"):
        assert re.search(
            rf"{label}\s+20,000 rows\s+\d+ us each \(baseline\),\s+200,000 rows\s+\d+ us each:"
            r" ratio\s+\d+\.\d\d",
            out,
        )
    assert re.search(r"DoGet over Flight\s+\d+ MB/s", out)


def test_duckdb_shaped_benchmark_prints_every_figure() -> None:
    script = BENCH.parent / "duckdb_shaped.py"
    run = subprocess.run(
        [sys.executable, str(script), "--rows", "20000", "--repeats", "1"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    labels = [
        f"{s}{r}" for s in ("INSERT", "UPDATE", "DELETE") for r in ("", " RETURNING lock-step")
    ]
    labels += ["INSERT, no-op table", "INSERT RETURNING lock-step, no-op table"]
    labels += ["UPDATE, no-op table", "DELETE, no-op table"]
    for label in labels:
        line = rf"^{label}\s+[\d,]+\s+[\d,]+\s+\d+\.\d\d$"
        assert re.search(line, run.stdout, re.M), (label, run.stdout)


def test_catalog_plane_benchmark_prints_each_server_and_their_refusals() -> None:
    """pyairport, a bare grpcio loop (on grpcio's thread-pool server and on grpc.aio) and a
    bare Arrow C++ loop: a 1-row statement's p50, the DuckDB-shaped INSERTs' rows/s (each
    server counted every row), and what each sends a client for the contract's
    INVALID_ARGUMENT."""
    run = subprocess.run(
        [sys.executable, str(BENCH.parent / "catalog_plane.py"), "--samples", "20"]
        + ["--rows", "20000", "--repeats", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    servers = (
        "pyairport (grpcio)",
        "bare grpcio loop",
        "bare grpc.aio loop",
        "bare Arrow C++ loop",
    )
    for server in servers:
        assert re.search(rf"^  {re.escape(server)}\s+\d+\.\d{{3}} ms$", out, re.M), server
    for label in ("plain", "RETURNING lock-step"):
        figures = r"\s+".join(rf"{re.escape(server)}\s+[\d,]+" for server in servers)
        assert re.search(rf"^  {label}\s+{figures}$", out, re.M), label
    assert "pyairport (grpcio)    INVALID_ARGUMENT 'null rowid value not allowed'" in out
    assert re.search(
        r"Arrow C\+\+ server      INVALID_ARGUMENT 'invalid rowid: null. Detail: ", out
    )


@pytest.fixture(scope="module")
def spark_bench() -> subprocess.CompletedProcess[str]:
    """bench/spark.py's statements and its scan after scattered statements, in one run: one
    Spark server started for both tests below."""
    return subprocess.run(
        [sys.executable, str(BENCH.parent / "spark.py"), "--statements-only", "30000"]
        + ["--scans-only", "30000", "--repeats", "1", "--warm-up-rounds", "1"],
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.spark
def test_spark_statement_benchmark_prints_every_figure(
    spark_bench: subprocess.CompletedProcess[str],
) -> None:
    run = spark_bench
    assert run.returncode == 0, run.stderr
    statements = ("INSERT 1 row", "UPDATE 1 row by rowid", "DELETE 1 row by rowid")
    for label in (*statements, "UPDATE 10,000 rowids"):
        line = (
            rf"^  {label}\s+Flight\s+\d+\.\d\d s \(median\s+\d+\.\d\d\),"
            r" outside the Delta commit \d+ ms(, \d+ ms of it making the view)?$"
        )
        assert re.search(line, run.stdout, re.M), (label, run.stdout)
    baseline = r"\s+\d+\.\d\d s \(median\s+\d+\.\d\d\)\s+ratio\s+\d+\.\d\d\s+\(target <= "
    assert len(re.findall(r"^    Spark SQL's .*" + baseline + r"1\.2\)$", run.stdout, re.M)) == 1
    assert len(re.findall(r"^    Spark SQL's .*" + baseline + r"0\.6\)$", run.stdout, re.M)) == 2
    assert len(re.findall(r"^    Spark's MERGE .*" + baseline + r"1\.05\)$", run.stdout, re.M)) == 2
    assert re.search(r"UPDATE 10,000 rowids .* ms of it making the view$", run.stdout, re.M)
    for label in ("UPDATE 1 row by rowid", "DELETE 1 row by rowid", "DoGet of the table"):
        line = (
            rf"^  {label}\s+without\s+\d+\.\d\d s\s+with deletion vectors\s+\d+\.\d\d s"
            r"\s+ratio with/without\s+\d+\.\d\d$"
        )
        assert re.search(line, run.stdout, re.M), (label, run.stdout)


@pytest.mark.spark
def test_spark_scan_benchmark_prints_every_figure(
    spark_bench: subprocess.CompletedProcess[str],
) -> None:
    run = spark_bench
    assert run.returncode == 0, run.stderr
    assert re.search(
        r"^  DoGet over Flight, rows as the statements left them\s+\d+ MB/s\s+ratio Flight/local"
        r"\s+\d+\.\d\d\s+\(target >= 0\.5\)$",
        run.stdout,
        re.M,
    ), run.stdout
    assert re.search(
        r"^  the first DoGet after a commit\s+\d+\.\d\d s, the next\s+\d+\.\d\d s \(medians of"
        r" \d+\): ratio first/next\s+\d+\.\d\d\s+\(target <= 1\.3\)$",
        run.stdout,
        re.M,
    ), run.stdout


@pytest.mark.duckdb
@pytest.mark.spark
@pytest.mark.usefixtures("airport_extension_path")
def test_duckdb_client_benchmark_prints_every_server_beside_duckdb() -> None:
    """DuckDB as the client against every server, at a small size: each workload's rows/s
    with its ratio to DuckDB's own table (or the reason a server did not do it)."""
    script = BENCH.parent / "duckdb_client.py"
    run = subprocess.run(
        [sys.executable, str(script), "--rows", "5000"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr
    header, *rows = run.stdout.splitlines()[1:]
    for server in ("DuckDB's own table", "pyairport memory", "pyairport Spark", "airport-go"):
        assert server in header
    assert "Query-farm" in header
    workloads = ("INSERT", "INSERT RETURNING", "UPDATE", "SELECT count(*)", "SELECT *")
    assert [row.strip().split("  ")[0] for row in rows] == list(workloads)
    for row in rows:
        # DuckDB's own figure, then pyairport memory, Spark and airport-go with their ratios
        assert len(re.findall(r"[\d,]+ \(\d+\.\d{3}\)", row)) >= 3, row


@pytest.mark.duckdb
@pytest.mark.spark
@pytest.mark.usefixtures("airport_extension_path")
def test_bulk_load_benchmark_prints_both_loads_their_ratio_and_the_servers_memory() -> None:
    """DuckDB copying a small TPC-H lineitem into the lake through pyairport, beside Spark
    loading the same rows from Parquet; the script exits non-zero where a copy's count or
    sum differs from DuckDB's."""
    run = subprocess.run(
        [sys.executable, str(BENCH.parent / "bulk_load.py"), "--scale", "0.01", "--repeats", "1"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "TPC-H SF 0.01 lineitem (60,175 rows), best of 1" in out, out
    assert re.search(r"^  Spark from Parquet \(baseline\)\s+\d+\.\d\d s$", out, re.M), out
    assert re.search(r"^  DuckDB through pyairport\s+\d+\.\d\d s\s+ratio \d+\.\d\d$", out, re.M), (
        out
    )
    assert re.search(r"^  server peak RSS: Python [1-9]\d* MiB, JVM [1-9]\d* MiB$", out, re.M)


@pytest.mark.duckdb
@pytest.mark.spark
@pytest.mark.usefixtures("airport_extension_path")
def test_duckdb_lake_benchmark_prints_every_query_beside_delta_scan() -> None:
    """DuckDB reading a small Delta table through pyairport (and with --delta-scan-refs) and
    with its own delta_scan: each query's times and ratios (no answer differs), an earlier
    version by number and by time, the join's plan, the server's memory, and a version Spark
    reads."""
    run = subprocess.run(
        [sys.executable, str(BENCH.parent / "duckdb_lake.py"), "--rows", "50000", "--repeats", "1"]
        # the figures' shape is the point here, not their warmth: half a minute of both
        # cores for each server's warm-up saved
        + ["--serve=--no-spark-warm-up"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "WRONG" not in out
    from bench.duckdb_lake import QUERIES

    for label in [*QUERIES, "join of two lake tables"]:
        timed = r"\s+[\d.]+s \(\s*\d+\.\d\d\)"
        assert re.search(rf"{re.escape(label)}{timed}{timed}\s+[\d.]+s", out), label
    assert re.search(
        r"sum\(amount\) of version 2: by its number [\d.]+s \(baseline\), by its commit's time"
        r" [\d.]+s \(\d+\.\d\d\)",
        out,
    )
    assert re.search(
        r"sum\(amount\) of the version before a column was added: today's version by delta-rs"
        r" [\d.]+s \(baseline\), that version by Spark [\d.]+s \(\d+\.\d\d\)",
        out,
    )
    assert "the join's plan through pyairport: pruned by statistics" in out
    assert re.search(r"server RSS \d+ MiB, grew -?\d+ MiB while DuckDB read all 50,000 rows", out)


@pytest.mark.duckdb
@pytest.mark.usefixtures("airport_extension_path")
def test_data_plane_floor_prints_each_way_beside_delta_scan() -> None:
    """DuckDB summing a small Delta column with delta_scan, and through a bare Arrow C++
    Flight server over TCP and a Unix socket; pyarrow reading the same streams: every way's
    time and ratio, every answer right."""
    run = subprocess.run(
        [sys.executable, str(BENCH.parent / "data_plane_floor.py"), "--rows", "100000"]
        + ["--repeats", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "WRONG" not in out
    for way in ("DuckDB delta_scan", "DuckDB over Flight, TCP loopback"):
        assert re.search(rf"{re.escape(way)}\s+[\d.]+ ms \(\s*\d+\.\d\d\)", out), way
    for way in ("DuckDB over Flight, Unix socket", "pyarrow client, Unix socket"):
        assert re.search(rf"{re.escape(way)}\s+[\d.]+ ms \(\s*\d+\.\d\d\)", out), way


@pytest.mark.duckdb
@pytest.mark.spark
@pytest.mark.usefixtures("airport_extension_path")
def test_tpch_benchmark_prints_every_query_and_the_whole_update() -> None:
    """TPC-H at a tiny scale on the row-tracked tables: the 22 queries right, each beside
    delta_scan, and the UPDATEs of every lineitem row (to one value, each to its own) exact
    beside Spark SQL's, with the server's memory; the one-value UPDATE exact alone, and under
    another writer's appends exact or refused whole."""
    run = subprocess.run(
        [sys.executable, str(BENCH.parent / "tpch.py"), "--scale", "0.01", "--repeats", "1"]
        + ["--shapes", "tracked", "--whole-update", "--stream-every", "1"]
        + ["--serve=--no-spark-warm-up"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "WRONG" not in out
    for query in range(1, 23):
        assert re.search(rf"^  q{query}\s+[\d.]+s \(\s*\d+\.\d\d\)", out, re.M), query
    assert re.search(r"geomean \d+\.\d\d, worst \d+\.\d\d; 22/22 right; server peak RSS", out)
    for kind in ("one value", "each its own"):
        assert re.search(
            r"UPDATE every lineitem\s+[\d.]+s\s+[\d.]+s\s+\d+\.\d\d  exact; "
            + kind
            + r": .*; server peak RSS: Python \d+ MiB, JVM \d+ MiB",
            out,
        ), kind
    merges = r"beside its MERGE by key\s+[\d.]+s\s+[\d.]+s\s+\d+\.\d\d  \(Spark's"
    assert len(re.findall(merges, out)) == 2
    alone = r"UPDATE every lineitem\s+[\d.]+s\s+1\.00  exact; one value, alone: 0 rows appended"
    assert re.search(alone, out)
    # under appends: exact, or refused by Delta's own check of them (never partly done)
    streamed = r"UPDATE every lineitem\s+[\d.]+s\s+\d+\.\d\d  (exact|refused); one value, under a"
    assert re.search(streamed, out)
