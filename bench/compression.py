"""Compressed DoGet streams: every column of TPC-H's `lineitem` read by DuckDB 1.4.4 through
`pyairport serve --compression none|lz4|zstd` (and ZSTD with `--string-dictionaries`,
"zstd+dict"): the bytes the server sent (its
pyairport_bytes_sent_total) beside the table's Parquet files, the query's time and the
server's CPU time.

    python bench/compression.py --scale 1
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.duckdb_lake import _free_port, serving  # noqa: E402
from tests import tpch  # noqa: E402
from tests.duckdb import extension as airport_extension  # noqa: E402

QUERY = "SELECT max(COLUMNS(*)) FROM lake.tpch.lineitem"  # every column of every row
SETTINGS = (("none",), ("lz4",), ("zstd",), ("zstd", "--string-dictionaries"))
LABELS = {"--string-dictionaries": "dict"}


def sent(metrics: str) -> float:
    """The bytes of the Flight messages the server has sent to readers, all tables."""
    text = urllib.request.urlopen(metrics).read().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "pyairport_bytes_sent_total"
    )


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    db = airport_extension.connect(airport_extension.locate())
    with tempfile.TemporaryDirectory(prefix="pyairport-compression-") as scratch:
        warehouse = Path(scratch)
        tpch.generate(db, args.scale)
        tpch.write_plain(db, warehouse)
        folder = warehouse / tpch.SCHEMA / "lineitem"
        parquet = sum(f.stat().st_size for f in folder.glob("*.parquet"))
        rows = db.execute("SELECT count(*) FROM lineitem").fetchone()[0]
        print(
            f"every column of TPC-H SF {args.scale:g} lineitem ({rows:,} rows) from DuckDB"
            f" {db.execute('SELECT version()').fetchone()[0]}, best of {args.repeats};"
            f" its Parquet files: {parquet / 1e6:,.0f} MB"
        )
        print(f"  {'codec':<10}{'on the wire':>14}{'/ Parquet':>11}{'query':>9}{'server CPU':>12}")
        want = None
        for codec, *more in SETTINGS:
            port = _free_port()
            metrics = f"http://127.0.0.1:{port}/metrics"
            flags = ("--compression", codec, *more, "--metrics-port", str(port))
            codec = "+".join([codec, *(LABELS[flag] for flag in more)])
            with serving(warehouse, *flags) as (location, pid):
                db.execute(f"ATTACH '' AS lake (TYPE airport, LOCATION '{location}')")
                best = None
                for _ in range(args.repeats):
                    before, cpu, started = sent(metrics), cpu_seconds(pid), time.perf_counter()
                    got = db.execute(QUERY).fetchall()
                    took = time.perf_counter() - started
                    moved, cpu = sent(metrics) - before, cpu_seconds(pid) - cpu
                    if best is None or took < best[0]:
                        best = (took, moved, cpu)
                    want = want or got
                    assert got == want, f"{codec}: another answer"
                db.execute("DETACH lake")
            assert best is not None
            took, moved, cpu = best
            print(
                f"  {codec:<10}{moved / 1e6:>11,.0f} MB{moved / parquet:>11.2f}{took:>8.2f}s"
                f"{cpu:>11.2f}s"
            )
    db.close()


if __name__ == "__main__":
    main()
