"""pyairport against airport-go, side by side: the same DML workloads, the same client, the
same demo catalog (dml_schema.users: legacy UPDATE/DELETE; batch_schema.users: batch), each
server in its own process, started fresh for every measurement.

- INSERT of 10M rows (id, name, email) in 64k-row batches
- UPDATE (SET email) and DELETE of 100k random rowids in a 1M-row table, in 64k-row and in
  DuckDB's 2048-row batches, plain and with RETURNING in DuckDB's lock-step, each after the
  same statement on 100k other rowids (so both servers are measured warm)

Prints rows/s for both and the ratio pyairport/airport-go (goal >= 1.0), then each server's
own RETURNING on/off ratio (what RETURNING costs in the contract's reference).

- 1-row statements (DuckDB's single-row INSERT/UPDATE/DELETE): p50 latency through
  pyarrow.flight's C++ client (DuckDB's is C++ too), beside a bare grpcio server that only
  reads the input and answers (bench/grpc_floor_server.py): the floor under any server built
  on grpcio's Python server.

airport-go's server is tests/interop/go/cmd/airport-go-server (built with the Go toolchain,
cached).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as flight

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from run import start_server  # noqa: E402  (bench/, this script's folder)

from pyairport.client import AirportClient  # noqa: E402
from pyairport.demo import generated_users  # noqa: E402
from tests.interop.gobuild import go_server  # noqa: E402

MAX_MESSAGE = 256 << 20
Server = Callable[[], AbstractContextManager[str]]


@contextmanager
def pyairport_server() -> Iterator[str]:
    """`pyairport serve --backend memory` in its own process, like the Go server."""
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "pyairport"),
            "serve",
            "--backend",
            "memory",
            "--port",
            "0",
            "--max-message-mb",
            "256",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=dict(os.environ, GRPC_VERBOSITY="NONE"),
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        yield line.split(" serving on ")[1].split()[0]
    finally:
        process.terminate()
        process.wait(timeout=30)


def airport_go_server() -> AbstractContextManager[str]:
    return go_server("-max-message-mb", "256")


@contextmanager
def grpc_floor_server() -> Iterator[str]:
    """bench/grpc_floor_server.py in its own process."""
    process, location = start_server("grpc_floor_server.py")
    try:
        yield location
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


def timed(
    server: Server, prepare: Callable[[AirportClient], None], run: Callable[[AirportClient], object]
) -> float:
    """Seconds `run` takes on a fresh server after `prepare` (not timed)."""
    with server() as location:
        client = AirportClient(location, max_message_bytes=MAX_MESSAGE)
        try:
            prepare(client)
            start = time.perf_counter()
            run(client)
            return time.perf_counter() - start
        finally:
            client.close()


def compare(
    label: str, rows: int, runs: dict[str, Callable[[], float]], repeats: int
) -> dict[str, float]:
    """Best of `repeats` (seconds per server), the two servers interleaved so drift falls on
    both alike."""
    best = {name: float("inf") for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            best[name] = min(best[name], run())
    go, py = best["airport-go"], best["pyairport"]
    print(
        f"  {label:52} airport-go {rows / go / 1e6:6.2f} M rows/s   "
        f"pyairport {rows / py / 1e6:6.2f} M rows/s   ratio {go / py:5.2f}"
    )
    return best


@dataclass(frozen=True)
class Change:
    """One UPDATE or DELETE workload: which table, which statement, in which shape."""

    schema: str
    op: str  # "update" or "delete"
    batch_rows: int
    returning: bool

    def send(self, client: AirportClient, rowids: pa.Array) -> object:
        """The statement on these rowids (UPDATE sets email to '<rowid>@updated.com')."""
        shape = {"batch_rows": self.batch_rows, "returning": self.returning, "lock_step": True}
        if self.op == "delete":
            return client.delete(self.schema, "users", rowids, **shape)
        text = pc.cast(rowids, pa.string())
        values = pa.table(
            {"email": pc.binary_join_element_wise(text, "@updated.com", ""), "rowid": rowids}
        )
        return client.update(self.schema, "users", values, **shape)

    @property
    def label(self) -> str:
        interface = "legacy" if self.schema == "dml_schema" else "batch"
        shape = f"{self.batch_rows}-row batches" + (
            ", RETURNING lock-step" if self.returning else ""
        )
        return f"{self.op.upper()} {interface:6} {shape}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--table-rows", type=int, default=1_000_000)
    parser.add_argument("--changed", type=int, default=100_000, help="rowids per UPDATE/DELETE")
    parser.add_argument("--latency-samples", type=int, default=300)
    args = parser.parse_args()
    servers: dict[str, Server] = {"airport-go": airport_go_server, "pyairport": pyairport_server}

    data = generated_users(args.rows)
    print(
        f"INSERT {args.rows:,} rows (id, name, email; {data.nbytes / 1e6:,.0f} MB) in 64k-row batches"
    )
    for schema in ("dml_schema", "batch_schema"):
        compare(
            f"{schema}.users",
            args.rows,
            {
                name: lambda s=server, t=schema: timed(
                    s,
                    lambda c: c.insert(t, "users", generated_users(1)),  # warm the channel
                    lambda c: c.insert(t, "users", data, batch_rows=65_536),
                )
                for name, server in servers.items()
            },
            args.repeats,
        )

    table_rows, k = args.table_rows, args.changed
    seed = generated_users(table_rows)
    # two disjoint sets of k rowids: one warms the server up, the other is measured
    chosen = np.random.default_rng(42).choice(np.arange(1, table_rows + 1), 2 * k, replace=False)
    warm_ids, rowids = (pa.array(np.sort(part), pa.int64()) for part in (chosen[:k], chosen[k:]))
    print(f"UPDATE / DELETE of {k:,} random rowids in a {table_rows:,}-row table")
    seconds: dict[Change, dict[str, float]] = {}
    for schema in ("dml_schema", "batch_schema"):
        for op in ("update", "delete"):
            for batch_rows in (65_536, 2048):
                for returning in (False, True):
                    change = Change(schema, op, batch_rows, returning)

                    def prepare(client: AirportClient, change: Change = change) -> None:
                        client.insert(change.schema, "users", seed, batch_rows=65_536)  # 1..n
                        # steady state: the same statement on other rows first, so neither
                        # server is timed on first-call costs (lazy imports, fresh pages)
                        change.send(client, warm_ids)

                    seconds[change] = compare(
                        change.label,
                        k,
                        {
                            name: lambda s=server, p=prepare, c=change: timed(
                                s, p, lambda client: c.send(client, rowids)
                            )
                            for name, server in servers.items()
                        },
                        args.repeats,
                    )
    print("RETURNING on/off (lock-step) on each server (the issue's target for pyairport: <= 1.2)")
    for change, on in seconds.items():
        if change.returning:
            plain = Change(change.schema, change.op, change.batch_rows, returning=False)
            off = seconds[plain]
            print(
                f"  {plain.label:52} airport-go {on['airport-go'] / off['airport-go']:5.2f}"
                f"   pyairport {on['pyairport'] / off['pyairport']:5.2f}"
            )
    one_row_latency({**servers, "bare grpcio": grpc_floor_server}, args.latency_samples)


def flight_statement(
    client: flight.FlightClient, op: str, table: str, data: pa.Table, returning: bool = False
) -> None:
    """One DML statement as DuckDB sends it, through pyarrow.flight's DoExchange; a server
    error raises."""
    headers = [(b"airport-operation", op.encode()), (b"airport-flight-path", table.encode())]
    if returning:
        headers.append((b"return-chunks", b"1"))
    writer, reader = client.do_exchange(
        flight.FlightDescriptor.for_path(*table.split("/")),
        flight.FlightCallOptions(headers=headers),
    )
    writer.begin(data.schema)
    writer.write_table(data)
    writer.done_writing()
    while True:
        try:
            reader.read_chunk()
        except StopIteration:
            break
    writer.close()


def one_row_latency(servers: dict[str, Server], samples: int) -> None:
    """p50 of each 1-row statement on a fresh server: the first fifth of the runs warms up;
    UPDATE and DELETE name rows that exist (DELETE a different one each time)."""
    table = "batch_schema/users"
    warm = samples // 5
    statements: dict[str, Callable[[int], tuple[str, pa.Table, bool]]] = {
        "INSERT": lambda n: ("insert", generated_users(1), False),
        "UPDATE": lambda n: ("update", _set_email(n + 1), False),
        "UPDATE, RETURNING": lambda n: ("update", _set_email(n + 1), True),
        "DELETE": lambda n: ("delete", pa.table({"rowid": pa.array([2 * samples + n + 1])}), False),
    }
    p50: dict[str, dict[str, float]] = {label: {} for label in statements}
    for name, server in servers.items():
        with server() as location:
            seeder = AirportClient(location)
            seeder.insert(*table.split("/"), generated_users(4 * samples))  # rowids 1..4s
            seeder.close()
            client = flight.connect(location)
            for label, statement in statements.items():
                times = []
                for n in range(warm + samples):
                    op, data, returning = statement(n)
                    start = time.perf_counter()
                    flight_statement(client, op, table, data, returning)
                    times.append(time.perf_counter() - start)
                p50[label][name] = float(np.median(times[warm:]))
            client.close()
    print(f"1-row statements: p50 of {samples}, through pyarrow.flight's C++ client")
    for label, by_server in p50.items():
        go, py = by_server["airport-go"], by_server["pyairport"]
        print(
            f"  {label:52} airport-go {go * 1000:6.2f} ms        pyairport {py * 1000:6.2f} ms"
            f"        ratio {go / py:5.2f}"
        )
    floor = float(np.median([by_server["bare grpcio"] for by_server in p50.values()]))
    print(
        f"  the same exchange on a bare grpcio server (reads the input, answers; no table):"
        f" {floor * 1000:5.2f} ms"
    )


def _set_email(rowid: int) -> pa.Table:
    return pa.table({"email": [f"{rowid}@updated.com"], "rowid": pa.array([rowid], pa.int64())})


if __name__ == "__main__":
    main()
