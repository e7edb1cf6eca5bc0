"""pyairport benchmarks: every figure is printed with a ratio against a baseline measured in
the same run. `make bench` runs them; the README shows the latest output.

1. INSERT 10M rows (4 columns, 64k-row batches) through DoExchange into the memory backend,
   against the same INSERT into a no-op sink on the same transport. Target ratio >= 0.9.
2. UPDATE and DELETE of 100k rowids in a 1M-row memory table: rows/s (target >= 5M rows/s),
   and RETURNING on vs off: ratio, target <= 1.2. RETURNING is measured as AirportClient sends
   it (pipelined) and in DuckDB's lock-step, where a client round trip per batch is added;
   beside it, the two halves of that ratio: the same statements on a memory table in this
   process (the table's own work, no transport), and RETURNING through tables that do no
   work (the transport's alone).
3. 10,000 single-row UPDATEs in a row on a 1M-row memory table (in-process): the last
   thousand statements against a fresh table's first thousand (flat is 1.00), and UPDATEs
   each after a single-row INSERT against UPDATEs alone. Single-row DELETEs, and INSERTs
   after them, in a table ten times the size of the baseline's (same cost is 1.00). Where
   two tables are compared, they take their statements in turn.
4. DoGet of the 10M-row table against reading the same rows from a local IPC file.
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).parent))
from bench_server import COLUMNS, rows  # noqa: E402

from airport_contracts import Context, DMLOptions, returning_columns  # noqa: E402
from pyairport.backends.memory import memory_table  # noqa: E402
from pyairport.client import AirportClient  # noqa: E402


def best_of(
    repeats: int, run: Callable[[], None], before: Callable[[], None] | None = None
) -> float:
    times = []
    for _ in range(repeats):
        if before:
            before()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def start_server(script: str = "bench_server.py", *args: str) -> tuple[subprocess.Popen[str], str]:
    """A server script of bench/ (with args) in its own process: (process, the location it
    prints). It stops when its stdin closes."""
    env = dict(os.environ, GRPC_VERBOSITY="NONE")
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).parent / script), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--single-row-statements", type=int, default=10_000)
    args = parser.parse_args()
    process, location = start_server()
    client = AirportClient(location, max_message_bytes=256 * 1024 * 1024)
    try:
        insert_bench(client, process.pid, args.rows, args.repeats)
        update_delete_bench(client, args.repeats)
        single_row_runs(1_000_000, args.single_row_statements)
        single_row_deletes(args.rows // 10, args.rows, args.single_row_statements // 5)
        scan_bench(client, location, args.rows, args.repeats)
    finally:
        client.close()
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


def page_faults(pid: int) -> int:
    """Minor page faults of a process so far (Linux): fresh memory it has touched."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[7])


def insert_bench(client: AirportClient, server_pid: int, n: int, repeats: int) -> None:
    data = rows(n)
    megabytes = data.nbytes / 1e6
    # gRPC grows a new channel's flow-control window during its first transfers: warm up.
    client.insert("bench", "sink", data, batch_rows=65_536)

    def measure(table: str) -> tuple[float, int]:
        faults = page_faults(server_pid)
        seconds = best_of(1, lambda: client.insert("bench", table, data, batch_rows=65_536))
        return seconds, page_faults(server_pid) - faults

    # Interleaved, so that drift in the machine's speed falls on both alike.
    sink_runs, memory_runs = [], []
    for _ in range(repeats):
        sink_runs.append(measure("sink"))
        client.action("bench_reset", b"target:0")
        memory_runs.append(measure("target"))
    (sink, sink_faults), (memory, memory_faults) = min(sink_runs), min(memory_runs)
    (touch,) = client.action("bench_first_touch", str(data.nbytes).encode())
    print(f"INSERT {n:,} rows ({megabytes:,.0f} MB, 64k-row batches) through DoExchange")
    print(
        f"  no-op sink (baseline)  {n / sink / 1e6:6.2f} M rows/s  {megabytes / sink:7.0f} MB/s"
        f"  {sink * 1000:5.0f} ms  {sink_faults:7,} page faults"
    )
    print(
        f"  memory backend         {n / memory / 1e6:6.2f} M rows/s  {megabytes / memory:7.0f} MB/s"
        f"  {memory * 1000:5.0f} ms  {memory_faults:7,} page faults"
    )
    print(f"  ratio memory/sink      {sink / memory:6.2f}   (target >= 0.90)")
    print(
        f"  the server writing {megabytes:,.0f} MB into fresh memory, as the backend keeps it:"
        f" {float(touch) * 1000:5.0f} ms"
    )


def update_delete_bench(client: AirportClient, repeats: int) -> None:
    table_rows, k = 1_000_000, 100_000
    rng = np.random.default_rng(42)
    rowids = pa.array(
        np.sort(rng.choice(np.arange(1, table_rows + 1), size=k, replace=False)), pa.int64()
    )
    update = pa.table({"value": pa.array(rng.random(k)), "rowid": rowids})
    reset = functools.partial(client.action, "bench_reset", f"target:{table_rows}".encode())
    print(f"UPDATE / DELETE of {k:,} rowids in a {table_rows:,}-row memory table")
    shapes = {
        "off": {},
        "on": {"returning": True},
        "lock-step": {"returning": True, "lock_step": True},
    }
    labels = {"off": "", "on": ", RETURNING", "lock-step": ", RETURNING in DuckDB's lock-step"}
    results = {}
    for op in ("update", "delete"):
        method = client.update if op == "update" else client.delete
        payload = update if op == "update" else rowids
        for batch_rows in (65_536, 2048):
            for shape, options in shapes.items():
                call = functools.partial(
                    method, "bench", "target", payload, batch_rows=batch_rows, **options
                )
                seconds = best_of(repeats, call, before=reset)
                results[(op, batch_rows, shape)] = seconds
                label = f"{batch_rows:>6}-row batches{labels[shape]}"
                print(
                    f"  {op.upper():6} {label:48} {k / seconds / 1e6:6.2f} M rows/s  ({seconds * 1000:6.1f} ms)"
                )
    in_process = in_process_returning(update, rowids, table_rows, repeats)
    for shape, target in (("on", "   (target <= 1.20)"), ("lock-step", "")):
        for op in ("update", "delete"):
            for batch_rows in (65_536, 2048):
                ratio = results[(op, batch_rows, shape)] / results[(op, batch_rows, "off")]
                what = "RETURNING on/off" + (", lock-step" if shape == "lock-step" else "")
                print(
                    f"  {op.upper():6} {what:28} {batch_rows:>6}-row batches  {ratio:5.2f}{target}"
                )
    for op in ("update", "delete"):
        for batch_rows in (65_536, 2048):
            plain, returning = in_process[(op, batch_rows)]
            print(
                f"  {op.upper():6} the table alone, in-process {batch_rows:>6}-row batches"
                f"  {plain * 1000:5.1f} ms, RETURNING {returning * 1000:5.1f} ms: on/off {returning / plain:5.2f}"
            )
    transport_alone(client, k, shapes, repeats)


def transport_alone(
    client: AirportClient, k: int, shapes: dict[str, dict[str, bool]], repeats: int
) -> None:
    """RETURNING through tables that do no work: what the transport alone adds."""
    data = rows(k)
    repeats *= 4  # statements of a few ms, whose best of a few runs scatters widely
    # A table that returns the rows it is sent: RETURNING costs it nothing, so the ratio is
    # the price of sending those bytes back (the UPDATE above returns the same 4 columns).
    print(f"  the transport alone: a table returning the {k:,} rows it is sent")
    for batch_rows in (65_536, 2048):
        off, on, lock_step = (
            best_of(
                repeats,
                functools.partial(
                    client.insert, "bench", "echo", data, batch_rows=batch_rows, **shapes[shape]
                ),
            )
            for shape in ("off", "on", "lock-step")
        )
        print(
            f"    {batch_rows:>6}-row batches  {off * 1000:5.1f} ms, RETURNING {on * 1000:5.1f} ms"
            f" (on/off {on / off:5.2f}), in lock-step {lock_step * 1000:5.1f} ms (on/off {lock_step / off:5.2f})"
        )
    # DuckDB's lock-step through a table that returns nothing: the round trips alone.
    plain = best_of(repeats, lambda: client.insert("bench", "sink", data, batch_rows=2048))
    lock_step = best_of(
        repeats,
        lambda: client.insert(
            "bench", "sink", data, batch_rows=2048, returning=True, lock_step=True
        ),
    )
    trips = -(-k // 2048)
    print(
        f"  the transport alone: a table returning no rows, {trips} lock-step round trips cost"
        f" {(lock_step - plain) * 1e6 / trips:5.0f} us each; RETURNING on/off {lock_step / plain:5.2f}"
    )


def in_process_returning(
    update: pa.Table, rowids: pa.Array, table_rows: int, repeats: int
) -> dict[tuple[str, int], tuple[float, float]]:
    """The same statements on a memory table called in this process, no transport: the
    RETURNING on/off ratio of the table's own work, which no transport can bring down."""
    data = rows(table_rows)
    opts = DMLOptions(returning=True, returning_columns=returning_columns(data.schema))
    tables: list[Any] = []

    def fresh() -> None:
        tables[:] = [memory_table("target", data.schema, rows=data)]

    results = {}
    for op, payload in (("update", update), ("delete", pa.table({"rowid": rowids}))):
        for batch_rows in (65_536, 2048):
            plain, returning = (
                best_of(
                    repeats,
                    functools.partial(
                        _in_process_statement, tables, op, payload, batch_rows, options
                    ),
                    before=fresh,
                )
                for options in (None, opts)
            )
            results[(op, batch_rows)] = (plain, returning)
    return results


def _in_process_statement(
    tables: list[Any], op: str, payload: pa.Table, batch_rows: int, opts: DMLOptions | None
) -> None:
    method = tables[0].update_batch if op == "update" else tables[0].delete_batch
    result = method(Context.background(), _reader(payload, batch_rows), opts)
    if result.returning_data is not None:
        result.returning_data.read_all()


def single_row_runs(table_rows: int, statements: int) -> None:
    """Single-row statements one after another, as DuckDB sends `UPDATE ... WHERE id = ?` in
    a loop, on a memory table in this process. The table keeps UPDATE values pending until a
    scan, so each statement must not pay for the ones before it: the last thousand of a run
    against a fresh table's first thousand (baseline; flat is 1.00). An INSERT must not make
    the next UPDATE pay for the table's size: UPDATEs each after a single-row INSERT against
    UPDATEs alone, the last thousand of each run (same cost is 1.00). Compared tables take
    their statements in turn, so that drift in the machine's speed (run one after the other,
    the first thousand were up to 2x slower than the last here, whatever the table held)
    falls on both alike."""
    data = rows(table_rows)
    opts = DMLOptions(returning=True, returning_columns=returning_columns(data.schema))
    rng = np.random.default_rng(7)
    updates = [  # built before the clock starts: a statement is timed from its reader on
        pa.table({"value": [float(rowid)], "rowid": pa.array([rowid], pa.int64())})
        for rowid in rng.integers(1, table_rows + 1, statements)
    ]
    print(
        f"{statements:,} single-row UPDATE statements in a row, {table_rows:,}-row memory table, in-process"
    )

    def fresh() -> Any:
        return memory_table("target", data.schema, rows=data)

    def updating(options: DMLOptions | None) -> list[Callable[[Any], object]]:
        return [functools.partial(_update, values, options) for values in updates]

    for label, options in (("", None), (", RETURNING", opts)):
        each_update, long_run = updating(options), fresh()
        for statement in each_update[:-1000]:
            statement(long_run)
        last_thousand = each_update[-1000:]
        first, last = (np.median(t) for t in _in_turn([fresh(), long_run], [last_thousand] * 2))
        print(
            f"  UPDATE{label:11}  statements 1-1,000 {first * 1e6:6.0f} us each (baseline),"
            f" the last 1,000 {last * 1e6:6.0f} us each: ratio {last / first:5.2f}   (flat = 1.00)"
        )
    insert = functools.partial(_insert, rows(1))
    alone, after = (
        np.median(t[-1000:])
        for t in _in_turn([fresh(), fresh()], [updating(None)] * 2, before=[None, insert])
    )
    print(
        f"  UPDATE, each after a single-row INSERT: the last 1,000 {after * 1e6:6.0f} us each:"
        f" ratio to UPDATE alone {after / alone:5.2f}   (same cost = 1.00)"
    )


def _update(values: pa.Table, options: DMLOptions | None, table: Any) -> None:
    result = table.update_batch(Context.background(), _reader(values), options)
    if result.returning_data is not None:
        result.returning_data.read_all()


def single_row_deletes(small: int, large: int, statements: int) -> None:
    """Single-row DELETEs on a memory table in this process, and single-row INSERTs into the
    table with those rows dead, in a table of `small` rows (baseline) and one of `large`:
    neither may cost in proportion to the table (same cost = 1.00). The two tables take
    their statements in turn, so that drift in the machine's speed (medians of these
    statements moved up to 2x between runs seconds apart) falls on both alike."""
    print(f"{statements:,} single-row DELETEs, then INSERTs, in-process")
    sizes = (small, large)
    tables = [memory_table("target", COLUMNS, rows=rows(n)) for n in sizes]
    rng = np.random.default_rng(3)

    def deleting(n: int) -> list[Callable[[Any], object]]:
        """DELETEs of distinct rows of an n-row table, each built before the clock starts (a
        statement is timed from its reader on)."""
        rowids = rng.choice(np.arange(1, n + 1), statements, replace=False)
        return [
            functools.partial(_delete, pa.table({"rowid": pa.array([rowid], pa.int64())}))
            for rowid in rowids
        ]

    inserting: list[Callable[[Any], object]] = [functools.partial(_insert, rows(1))] * statements
    runs = {
        "DELETE": [deleting(n) for n in sizes],
        "INSERT after the deletes": [inserting] * len(sizes),
    }
    for label, statements_of in runs.items():
        base, big = (float(np.median(t)) for t in _in_turn(tables, statements_of))
        print(
            f"  {label:24} {small:>11,} rows {base * 1e6:6.0f} us each (baseline),"
            f" {large:>11,} rows {big * 1e6:6.0f} us each: ratio {big / base:5.2f}   (same cost = 1.00)"
        )


def _in_turn(
    tables: list[Any],
    statements: list[list[Callable[[Any], object]]],
    before: list[Callable[[Any], object] | None] | None = None,
) -> list[list[float]]:
    """Seconds of each statement, per table: statements[i] are table i's, run alternately
    with the other tables'; before[i], if given, runs untimed on table i before each."""
    times: list[list[float]] = [[] for _ in tables]
    for turn in zip(*statements, strict=True):
        for i, (table, statement) in enumerate(zip(tables, turn, strict=True)):
            prepare = before[i] if before else None
            if prepare is not None:
                prepare(table)
            start = time.perf_counter()
            statement(table)
            times[i].append(time.perf_counter() - start)
    return times


def _delete(ids: pa.Table, table: Any) -> None:
    table.delete_batch(Context.background(), _reader(ids), None)


def _insert(row: pa.Table, table: Any) -> None:
    table.insert(Context.background(), _reader(row), None)


def _reader(table: pa.Table, batch_rows: int | None = None) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(
        table.schema, table.to_batches(max_chunksize=batch_rows)
    )


def scan_bench(client: AirportClient, location: str, n: int, repeats: int) -> None:
    """DoGet of an n-row memory table against reading the same rows from a local Arrow IPC file."""
    import tempfile

    import pyarrow.flight as flight

    client.action("bench_reset", f"target:{n}".encode())
    flight_client = flight.connect(location)
    ticket = flight.Ticket(b'{"schema":"bench","table":"target"}')
    holder: dict[str, pa.Table] = {}

    def do_get() -> None:
        holder["table"] = flight_client.do_get(ticket).read_all()

    do_get()  # warm-up
    over_flight = best_of(repeats, do_get)
    table = holder["table"]
    megabytes = table.nbytes / 1e6
    with tempfile.NamedTemporaryFile(suffix=".arrows") as file:
        with pa.ipc.new_stream(file.name, table.schema) as writer:
            writer.write_table(table, max_chunksize=65_536)
        local = best_of(repeats, lambda: pa.ipc.open_stream(pa.OSFile(file.name)).read_all())
    flight_client.close()
    print(f"SCAN (DoGet) of a {n:,}-row memory table ({megabytes:,.0f} MB)")
    print(
        f"  pyarrow reading the same rows from a local IPC file (baseline)  {megabytes / local:7.0f} MB/s"
    )
    print(
        f"  DoGet over Flight                                                 {megabytes / over_flight:7.0f} MB/s"
    )
    print(
        f"  ratio Flight/local                                                {local / over_flight:7.2f}"
    )


if __name__ == "__main__":
    main()
