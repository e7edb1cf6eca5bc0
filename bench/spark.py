"""Spark benchmark: Flight DML into Delta tables against Spark itself, in one run.

1. INSERT 1M rows over Flight (64k-row batches) into a Delta table, against a direct Spark
   write of the same Arrow data in the same server process: ratio, target <= 1.15.
2. Statements over Flight on a table pyairport made (deletion vectors on) against Spark's
   own in the same session: a 1-row INSERT (target <= 1.2), UPDATE and DELETE by rowid
   against the same SQL statement on a table Spark wrote with Delta's defaults (target <= 0.6), a 10k-rowid UPDATE against
   Spark's MERGE from a view on the same table and on Spark's (target <= 1.05).
3. DoGet of a 1M-row Delta table against pyarrow reading its parquet files: MB/s; of a
   2M-row table after scattered statements against pyarrow reading the version's files, and
   the first DoGet after a commit against the next; then 1-row statements and the DoGet on a
   table with Delta deletion vectors against one without.
4. Peak server memory (the Python process and Spark's JVM) during a 10M-row INSERT, then a
   DoGet of those 10M rows (streamed, twice) against pyarrow reading the files batch by
   batch: MB/s, ratio, and the server's memory meanwhile.
5. With `--returning ROWS` alone: UPDATE and DELETE of 50,000 rowids of a ROWS-row table in
   DuckDB's shape (2048-row batches, RETURNING in lock-step) against the same statements
   without RETURNING: ratio on/off (the target for RETURNING: <= 1.2).
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).parent))
from bench_server import rows  # noqa: E402

from pyairport.client import AirportClient  # noqa: E402


def _peak_kib(pid: int) -> int:
    """VmHWM (peak resident set) of a process, KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _children(pid: int) -> list[int]:
    found = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found  # the process has ended
    for task in tasks:
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue  # a thread that ended while we looked
        found += [int(c) for c in children]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--statements-only",
        type=int,
        metavar="ROWS",
        help="run only the statements (part 2 and the deletion vectors), on ROWS-row tables"
        " (more than 20,000)",
    )
    parser.add_argument(
        "--scans-only",
        type=int,
        metavar="ROWS",
        help="run only the scan after scattered statements, on a ROWS-row table (after the"
        " statements, when both are asked for)",
    )
    parser.add_argument(
        "--returning",
        type=int,
        metavar="ROWS",
        help="run only UPDATE and DELETE with and without RETURNING, on a ROWS-row table",
    )
    parser.add_argument("--repeats", type=int, default=5, help="runs of each statement")
    parser.add_argument(
        "--warm-up-rounds",
        type=int,
        default=4,
        help="untimed rounds of the 1-row statements before they are timed (Spark's JIT)",
    )
    args = parser.parse_args()
    env = dict(os.environ, GRPC_VERBOSITY="NONE")
    here = Path(__file__).parent
    process = subprocess.Popen(
        [sys.executable, str(here / "spark_server.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=here.parent,
    )
    assert process.stdout is not None and process.stdin is not None
    location = process.stdout.readline().strip()
    client = AirportClient(location, max_message_bytes=256 * 1024 * 1024)
    try:
        if args.returning:
            returning_bench(client, args.returning, min(args.repeats, 3))
            return
        if args.statements_only:
            (name,) = client.action("bench_reset", str(args.statements_only).encode())
            statements_bench(
                client, name.decode(), args.statements_only, args.repeats, args.warm_up_rounds
            )
            deletion_vectors_bench(client, args.statements_only, args.repeats)
        if args.scans_only:
            scattered_scan_bench(client, location, args.scans_only)
        if args.statements_only or args.scans_only:
            return
        n = 1_000_000
        data = rows(n)
        (warm,) = client.action("bench_reset", b"0")
        client.insert("bench", warm.decode(), rows(10_000))  # JIT and first-commit costs
        client.action("bench_direct_write", b"10000")
        flight_times, direct_times = [], []
        for _ in range(2):
            (name,) = client.action("bench_reset", b"0")
            start = time.perf_counter()
            client.insert("bench", name.decode(), data, batch_rows=65_536)
            flight_times.append(time.perf_counter() - start)
            (seconds,) = client.action("bench_direct_write", str(n).encode())
            direct_times.append(float(seconds))
        flight, direct = min(flight_times), min(direct_times)
        print(f"INSERT {n:,} rows into a Delta table (best of 2)")
        print(f"  direct Spark write of the Arrow data (baseline)  {direct:6.2f} s")
        print(f"  over Flight, 64k-row batches                      {flight:6.2f} s")
        print(
            f"  ratio Flight/direct                               {flight / direct:6.2f}   (target <= 1.15)"
        )

        (name,) = client.action("bench_reset", str(n).encode())
        statements_bench(client, name.decode(), n, args.repeats, args.warm_up_rounds)
        (fresh,) = client.action(
            "bench_reset", str(n).encode()
        )  # one version: its files are the table
        scan_bench(location, fresh.decode(), n)
        scattered_scan_bench(client, location, 2 * n)
        deletion_vectors_bench(client, n, args.repeats)

        (name,) = client.action("bench_reset", b"0")
        big = 10_000_000
        peaks: dict[str, int] = {"python": 0, "jvm": 0}
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                peaks["python"] = max(peaks["python"], _peak_kib(process.pid))
                for child in _children(process.pid):
                    peaks["jvm"] = max(peaks["jvm"], _peak_kib(child))
                time.sleep(0.2)

        watcher = threading.Thread(target=watch)
        watcher.start()
        before = _peak_kib(process.pid)
        start = time.perf_counter()
        # one statement whose input is generated chunk by chunk on the client
        reader = pa.RecordBatchReader.from_batches(
            data.schema,
            (
                b
                for c in range(10)
                for b in rows(1_000_000, c * 1_000_000).to_batches(max_chunksize=65_536)
            ),
        )
        client.insert("bench", name.decode(), reader)
        seconds = time.perf_counter() - start
        done.set()
        watcher.join()
        print(
            f"INSERT {big:,} rows (one statement, {seconds:.1f} s): peak server memory "
            f"{peaks['python'] / 1024:,.0f} MiB Python (before: {before / 1024:,.0f} MiB), {peaks['jvm'] / 1024:,.0f} MiB JVM; input ~{10 * data.nbytes / 2**20:,.0f} MiB"
        )
        streamed_scan_bench(location, name.decode(), big, process.pid)
    finally:
        client.close()
        process.stdin.close()
        process.wait(timeout=120)


def statements_bench(
    client: AirportClient, table: str, n: int, repeats: int = 5, warm_up_rounds: int = 4
) -> None:
    """Statements over Flight on a table pyairport made (deletion vectors on), taken in turn
    with Spark's own (other rowids each time), best of `repeats` after `warm_up_rounds`
    untimed rounds of the 1-row statements: a 1-row INSERT (target <= 1.2), UPDATE and DELETE
    against the same SQL statement on a table Spark wrote with the same rows and Delta's
    default settings (target <= 0.6); a 10,000-rowid UPDATE against Spark's MERGE from a
    view, on the very same table and on Spark's (target <= 1.05). Also the part of the Flight
    statement's time that is not its Delta commit (pyairport's own work), median of them.
    Spark's own time for the same statement varies by a third between runs, and every tenth
    commit also writes a Delta checkpoint, on whichever side it falls."""
    (spark_written,) = client.action("bench_spark_table", str(n).encode())
    theirs_table = spark_written.decode()
    rng = np.random.default_rng(7)
    picks = iter(rng.permutation(np.arange(1, n + 1)).tolist())
    seeds = itertools.count(1)

    def flight(run: Callable[[], object]) -> tuple[float, float, float]:
        """Seconds of the statement, of them outside its Delta commit, and making its view."""
        start = time.perf_counter()
        run()
        seconds = time.perf_counter() - start
        (answer,) = client.action("bench_last_commit", b"")
        commit, view = map(float, answer.split())
        return seconds, seconds - commit, view

    def sql(statement: str) -> float:
        (seconds,) = client.action("bench_sql", statement.encode())
        return float(seconds)

    def merge(on: str) -> float:
        (seconds,) = client.action("bench_merge_view", f"{on}:10000:{next(seeds)}:{n}".encode())
        return float(seconds)

    def one_row_update() -> tuple[float, ...]:
        update = pa.table({"name": ["x"], "rowid": pa.array([next(picks)], pa.int64())})
        ours = flight(lambda: client.update("bench", table, update))
        statement = f"UPDATE bench.{theirs_table} SET name = 'x' WHERE rowid = {next(picks)}"
        return *ours, sql(statement)

    def one_row_insert() -> tuple[float, ...]:
        key = n + next(seeds)  # a new id and rowid on each side
        row = rows(1, key)
        ours = flight(lambda: client.insert("bench", table, row))
        values = f"({key}, {key}, {key * 1.5}, {key & 127}, 'item_{key}')"
        columns = "rowid, id, value, category, name"
        return *ours, sql(f"INSERT INTO bench.{theirs_table} ({columns}) VALUES {values}")

    def one_row_delete() -> tuple[float, ...]:
        rowid = next(picks)
        ours = flight(lambda: client.delete("bench", table, [rowid]))
        return *ours, sql(f"DELETE FROM bench.{theirs_table} WHERE rowid = {next(picks)}")

    def update_10k() -> tuple[float, ...]:
        ids = pa.array(sorted(next(picks) for _ in range(10_000)), pa.int64())
        update = pa.table({"value": pa.array(rng.random(10_000)), "rowid": ids})
        ours = flight(lambda: client.update("bench", table, update))
        return *ours, merge(table), merge(theirs_table)

    print(
        f"Statements on a {n:,}-row Delta table pyairport made (deletion vectors on), over"
        f" Flight, and Spark's own on the same table or on one Spark wrote with the same rows"
        f" and Delta's defaults, best of {repeats}"
    )
    for _ in range(warm_up_rounds):  # Spark's JIT: a session's first statements run slower
        one_row_insert(), one_row_update(), one_row_delete()
    cases = (
        ("INSERT 1 row", one_row_insert, 1.2),
        ("UPDATE 1 row by rowid", one_row_update, 0.6),
        ("DELETE 1 row by rowid", one_row_delete, 0.6),
        ("UPDATE 10,000 rowids", update_10k, 1.05),
    )
    for label, run, target in cases:
        times = np.array([run() for _ in range(repeats)])  # flight, own, view, Spark's...
        ours = times[:, 0].min()
        own, view = np.median(times[:, 1]), np.median(times[:, 2])
        made = f", {view * 1000:.0f} ms of it making the view" if view else ""
        print(
            f"  {label:<24} Flight {ours:5.2f} s (median {np.median(times[:, 0]):5.2f}),"
            f" outside the Delta commit {own * 1000:.0f} ms{made}"
        )
        baselines = (
            [("Spark SQL's same statement on Spark's table", times[:, 3])]
            if times.shape[1] == 4
            else [
                ("Spark's MERGE from a 10,000-row view, the same table", times[:, 3]),
                ("Spark's MERGE from a 10,000-row view, Spark's table", times[:, 4]),
            ]
        )
        for baseline, seconds in baselines:
            print(
                f"    {baseline:<62} {seconds.min():5.2f} s (median {np.median(seconds):5.2f})"
                f"   ratio {ours / seconds.min():4.2f}   (target <= {target})"
            )


def deletion_vectors_bench(client: AirportClient, n: int, repeats: int) -> None:
    """1-row statements and a DoGet over Flight on a table with Delta deletion vectors (as
    pyairport makes them) against one without (each with the same n rows), in turn, best of
    `repeats`: what deletion vectors buy statements and cost scans."""
    tables = {
        kind: client.action("bench_reset", f"{n}:{kind}".encode())[0].decode()
        for kind in ("plain", "dv")
    }
    rowids = iter(range(1, n + 1, 97))
    times: dict[tuple[str, str], list[float]] = {}

    def timed(key: tuple[str, str], run: Callable[..., object], *args: object) -> None:
        start = time.perf_counter()
        run(*args)
        times.setdefault(key, []).append(time.perf_counter() - start)

    def scan(table: str) -> None:
        client.scan("bench", table).read_all()

    for _ in range(repeats):
        for kind, table in tables.items():
            update = pa.table({"name": ["x"], "rowid": pa.array([next(rowids)], pa.int64())})
            timed(("UPDATE 1 row by rowid", kind), client.update, "bench", table, update)
            timed(("DELETE 1 row by rowid", kind), client.delete, "bench", table, [next(rowids)])
            timed(("DoGet of the table", kind), scan, table)
    print(f"Deletion vectors on a {n:,}-row Delta table, over Flight, best of {repeats}")
    for label in ("UPDATE 1 row by rowid", "DELETE 1 row by rowid", "DoGet of the table"):
        plain, dv = min(times[(label, "plain")]), min(times[(label, "dv")])
        print(
            f"  {label:<24} without {plain:5.2f} s   with deletion vectors {dv:5.2f} s"
            f"   ratio with/without {dv / plain:4.2f}"
        )


def returning_bench(client: AirportClient, n: int, repeats: int, count: int = 50_000) -> None:
    """UPDATE and DELETE of count rowids as DuckDB sends them (2048-row batches; with
    RETURNING, each batch's rows awaited before the next is sent), with RETURNING and
    without, in turn, best of `repeats`, each on rowids no statement touched before."""
    (table,) = client.action("bench_reset", f"{n}:dv".encode())
    name = table.decode()
    starts = iter(range(1, n + 1, count))
    times: dict[tuple[str, bool], list[float]] = {}
    for _ in range(repeats):
        for returning in (False, True):
            updated, deleted = (
                pa.array(range(first, first + count), pa.int64())
                for first in itertools.islice(starts, 2)
            )
            update = pa.table({"name": pa.array(["x"] * count), "rowid": updated})
            statements = (("UPDATE", client.update, update), ("DELETE", client.delete, deleted))
            for label, call, data in statements:
                start = time.perf_counter()
                answer = call(
                    "bench",
                    name,
                    data,
                    returning=returning,
                    batch_rows=2048,
                    lock_step=returning,
                )
                times.setdefault((label, returning), []).append(time.perf_counter() - start)
                if returning:
                    assert answer.returning is not None and answer.returning.num_rows == count
    print(
        f"UPDATE and DELETE of {count:,} rowids of a {n:,}-row Delta table pyairport made, in"
        f" DuckDB's shape (2048-row batches, RETURNING in lock-step), best of {repeats}"
    )
    for label in ("UPDATE", "DELETE"):
        off, on = min(times[(label, False)]), min(times[(label, True)])
        print(
            f"  {label}  without RETURNING {off:6.2f} s   with {on:6.2f} s"
            f"   ratio on/off {on / off:5.2f}   (target <= 1.2)"
        )


def scattered_scan_bench(client: AirportClient, location: str, n: int, repeats: int = 3) -> None:
    """DoGet of an n-row table pyairport made, after DELETEs and UPDATEs scattered over it,
    against pyarrow reading the parquet files of the table's latest version (what delta-rs
    names: pyarrow reads deleted rows too); the rows compared with what the statements left.
    Then, after each of `repeats` 1-row UPDATEs, the first DoGet against the next one."""
    import glob

    import pyarrow.compute as pc
    import pyarrow.flight as flight
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    (name,) = client.action("bench_reset", str(n).encode())
    table = name.decode()
    rng = np.random.default_rng(11)
    expected = rows(n).add_column(0, "rowid", pa.array(range(1, n + 1), pa.int64()))
    for _ in range(5):  # 500 rows deleted and 500 updated, 100 at a time, all over the table
        gone = np.sort(rng.choice(np.arange(1, n + 1), 100, replace=False))
        client.delete("bench", table, gone.tolist())
        expected = expected.filter(pc.invert(pc.is_in(expected["rowid"], pa.array(gone))))
        changed = np.sort(rng.choice(expected["rowid"].to_numpy(), 100, replace=False))
        client.update("bench", table, pa.table({"name": ["changed"] * 100, "rowid": changed}))
        hit = pc.is_in(expected["rowid"], pa.array(changed))
        names = pc.if_else(hit, pa.scalar("changed"), expected["name"])
        expected = expected.set_column(expected.schema.get_field_index("name"), "name", names)
    flight_client = flight.connect(location)
    ticket = flight.Ticket(b'{"schema":"bench","table":"' + table.encode() + b'"}')

    def do_get() -> tuple[float, pa.Table]:
        start = time.perf_counter()
        scanned = flight_client.do_get(ticket).read_all()
        return time.perf_counter() - start, scanned

    first_seconds, scanned = do_get()
    in_order = scanned.sort_by("rowid").select(expected.column_names)  # served: rowid last
    assert in_order.equals(expected), "the DoGet's rows differ from the table's"
    (folder,) = glob.glob(f"/tmp/pyairport-bench-*/bench/{table}")
    files = [uri.removeprefix("file://") for uri in DeltaTable(folder).file_uris()]
    over_flight, local_seconds = [], []
    for _ in range(repeats):
        over_flight.append(do_get()[0])
        start = time.perf_counter()
        pq.read_table(files)
        local_seconds.append(time.perf_counter() - start)
    megabytes = scanned.nbytes / 1e6
    print(
        f"SCAN (DoGet) of a {n:,}-row Delta table pyairport made ({megabytes:,.0f} MB, "
        f"{len(files)} files), after 5 DELETEs and 5 UPDATEs of 100 rowids each, best of {repeats}"
    )
    print(
        f"  pyarrow reading the version's files (baseline) {megabytes / min(local_seconds):6.0f} MB/s"
    )
    print(
        f"  DoGet over Flight, rows as the statements left them {megabytes / min(over_flight):6.0f} MB/s"
        f"   ratio Flight/local {min(local_seconds) / min(over_flight):5.2f}   (target >= 0.5)"
    )
    firsts, nexts = [first_seconds], [min(over_flight)]
    for rowid in rng.choice(expected["rowid"].to_numpy(), repeats, replace=False).tolist():
        client.update("bench", table, pa.table({"name": ["again"], "rowid": [rowid]}))
        firsts.append(do_get()[0])
        nexts.append(do_get()[0])
    flight_client.close()
    ratios = [first / after for first, after in zip(firsts, nexts, strict=True)]
    print(
        f"  the first DoGet after a commit {np.median(firsts):5.2f} s, the next {np.median(nexts):5.2f} s"
        f" (medians of {len(firsts)}): ratio first/next {np.median(ratios):4.2f}   (target <= 1.3)"
    )


def _rss_kib(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0  # the process ended while we looked (one of Spark's short-lived children)
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def rss_while(pid: int, run: Callable[[], None]) -> tuple[int, int]:
    """pid's resident set before run, and the most it reached while run ran (KiB)."""
    before = _rss_kib(pid)
    highest = before
    done = threading.Event()

    def watch() -> None:
        nonlocal highest
        while not done.is_set():
            highest = max(highest, _rss_kib(pid))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        run()
    finally:
        done.set()
        watcher.join()
    return before, highest


def streamed_scan_bench(location: str, table: str, n: int, server_pid: int) -> None:
    """DoGet of a Delta table larger than one scan range, twice: throughput, and how much the
    server's Python process grows while it streams (the client keeps nothing). The second
    scan shows whether that memory is held for reuse (it does not grow again) or per scan."""
    import pyarrow.flight as flight
    import pyarrow.parquet as pq

    flight_client = flight.connect(location)
    ticket = flight.Ticket(b'{"schema":"bench","table":"' + table.encode() + b'"}')
    seen = {"rows": 0, "bytes": 0}

    def scan() -> None:
        seen["rows"] = seen["bytes"] = 0
        for chunk in flight_client.do_get(ticket):
            seen["rows"] += chunk.data.num_rows
            seen["bytes"] += chunk.data.nbytes

    fastest = float("inf")
    for attempt in ("first", "second"):
        start = time.perf_counter()
        before, highest = rss_while(server_pid, scan)
        seconds = time.perf_counter() - start
        fastest = min(fastest, seconds)
        assert seen["rows"] == n
        print(
            f"SCAN (DoGet) of a {n:,}-row Delta table ({seen['bytes'] / 1e6:,.0f} MB, streamed,"
            f" {attempt} time): {seen['bytes'] / 1e6 / seconds:5.0f} MB/s; server Python RSS"
            f" {before / 1024:,.0f} MiB before, {highest / 1024:,.0f} MiB at most while streaming"
        )
    flight_client.close()
    start = time.perf_counter()
    local_rows = sum(
        batch.num_rows
        for path in _table_files(table)
        for batch in pq.ParquetFile(path).iter_batches(batch_size=65_536)
    )
    local = time.perf_counter() - start
    assert local_rows == n
    print(
        f"  pyarrow reading its parquet files batch by batch (baseline) "
        f"{seen['bytes'] / 1e6 / local:5.0f} MB/s; ratio Flight (the faster time)/local"
        f" {local / fastest:5.2f}   (target >= 0.5)"
    )


def _table_files(table: str) -> list[str]:
    """The parquet files of a bench table that has had one write: its files are its rows."""
    import glob

    return glob.glob(f"/tmp/pyairport-bench-*/bench/{table}/*.parquet")


def scan_bench(location: str, table: str, n: int, repeats: int = 3) -> None:
    """DoGet of an n-row Delta table against pyarrow reading the table's parquet files, in
    turn, best of `repeats` (after one DoGet to warm up)."""
    import pyarrow.flight as flight
    import pyarrow.parquet as pq

    flight_client = flight.connect(location)
    ticket = flight.Ticket(b'{"schema":"bench","table":"' + table.encode() + b'"}')
    flight_client.do_get(ticket).read_all()
    files = _table_files(table)
    over_flight, local_seconds = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        scanned = flight_client.do_get(ticket).read_all()
        over_flight.append(time.perf_counter() - start)
        start = time.perf_counter()
        local = pq.read_table(files)
        local_seconds.append(time.perf_counter() - start)
        assert local.num_rows == scanned.num_rows == n
    flight_client.close()
    megabytes = scanned.nbytes / 1e6
    print(f"SCAN (DoGet) of a {n:,}-row Delta table ({megabytes:,.0f} MB), best of {repeats}")
    print(
        f"  pyarrow reading its parquet files (baseline)  {megabytes / min(local_seconds):7.0f} MB/s"
    )
    print(
        f"  DoGet over Flight     {megabytes / min(over_flight):7.0f} MB/s"
        f"   ratio Flight/local {min(local_seconds) / min(over_flight):5.2f}   (target >= 0.5)"
    )


if __name__ == "__main__":
    main()
