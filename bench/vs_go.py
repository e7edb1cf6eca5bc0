"""pyairport against airport-go, side by side: the same DML workloads, the same client, the
same demo catalog (dml_schema.users: legacy UPDATE/DELETE; batch_schema.users: batch), each
server in its own process, started fresh for every measurement.

- INSERT of 10M rows (id, name, email) in 64k-row batches
- UPDATE (SET email) and DELETE of 100k random rowids in a 1M-row table, plain in 64k-row
  batches and with RETURNING in DuckDB's 2048-row lock-step, each after the same statement
  on 100k other rowids (so both servers are measured warm)

Prints rows/s for both and the ratio pyairport/airport-go (goal >= 1.0). airport-go's
server is tests/interop/go/cmd/airport-go-server (built with the Go toolchain, cached).
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
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


def compare(label: str, rows: int, runs: dict[str, Callable[[], float]], repeats: int) -> None:
    """Best of `repeats`, the two servers interleaved so drift falls on both alike."""
    best = {name: float("inf") for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            best[name] = min(best[name], run())
    go, py = best["airport-go"], best["pyairport"]
    print(
        f"  {label:46} airport-go {rows / go / 1e6:6.2f} M rows/s   "
        f"pyairport {rows / py / 1e6:6.2f} M rows/s   ratio {go / py:5.2f}"
    )


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

    table_rows, k = 1_000_000, 100_000
    seed = generated_users(table_rows)
    # two disjoint sets of k rowids: one warms the server up, the other is measured
    chosen = np.random.default_rng(42).choice(np.arange(1, table_rows + 1), 2 * k, replace=False)
    warm_ids, rowids = (pa.array(np.sort(part), pa.int64()) for part in (chosen[:k], chosen[k:]))
    print(f"UPDATE / DELETE of {k:,} random rowids in a {table_rows:,}-row table")
    for schema in ("dml_schema", "batch_schema"):
        for op in ("update", "delete"):
            for batch_rows, returning in ((65_536, False), (2048, True)):
                change = Change(schema, op, batch_rows, returning)

                def prepare(client: AirportClient, change: Change = change) -> None:
                    client.insert(change.schema, "users", seed, batch_rows=65_536)  # rowids 1..n
                    # steady state: the same statement on other rows first, so neither server
                    # is timed on first-call costs (lazy imports, fresh memory pages, indexes)
                    change.send(client, warm_ids)

                compare(
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


if __name__ == "__main__":
    main()
