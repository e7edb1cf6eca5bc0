"""The floor of any Flight data plane on this machine, beside DuckDB's own Delta reader.

One column of N doubles (`amount`, the shape of bench/duckdb_lake.py's `sum(amount)`) is
written as a plain Delta table by delta-rs. DuckDB 1.4.4 sums it three ways, best of
--repeats, in one run:

- `delta_scan` of the folder (DuckDB's own reader: the baseline, 1.00);
- `airport_take_flight` from a bare Arrow C++ Flight server (pyarrow's FlightServerBase)
  serving the column from memory, already read and in 65,536-row batches, over TCP loopback
  and over a Unix socket: nothing of pyairport, no reading, no Python per batch — the cost
  of moving the column through Flight into DuckDB and summing it;
- the same streams read by a pyarrow.flight client (`read_all`), for the transport alone.

A server that must stay within 2x of `delta_scan` cannot be slower than that: where the floor
itself is above 2x, the transport bounds it, whatever the data plane does.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as flight

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from airport_support.compressed import pack_endpoints  # noqa: E402
from bench.duckdb_lake import best_of  # noqa: E402
from tests.duckdb import extension as airport_extension  # noqa: E402

BATCH_ROWS = 65_536
FILES = 5


class ColumnServer(flight.FlightServerBase):  # type: ignore[misc]
    """Serves one in-memory table at the descriptor path ["amount"]."""

    def __init__(self, location: str, table: pa.Table) -> None:
        super().__init__(location)
        self.table = table
        self.where = location

    def get_flight_info(self, context: Any, descriptor: flight.FlightDescriptor) -> Any:
        endpoint = flight.FlightEndpoint(b"amount", [self.where])
        return flight.FlightInfo(
            self.table.schema, descriptor, [endpoint], self.table.num_rows, self.table.nbytes
        )

    def do_get(self, context: Any, ticket: flight.Ticket) -> flight.RecordBatchStream:
        return flight.RecordBatchStream(self.table)

    def do_action(self, context: Any, action: flight.Action) -> list[bytes]:
        """DuckDB's Airport asks for a scan's endpoints (protocol §2.7): one, here."""
        if action.type != "endpoints":
            raise NotImplementedError(action.type)
        endpoint = flight.FlightEndpoint(b"amount", [self.where])
        return [pack_endpoints([endpoint.serialize()], bin_type=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    from deltalake import write_deltalake

    values = (np.arange(args.rows, dtype=np.int64) % 1000).astype(np.float64) / 10
    table = pa.table({"amount": values})
    served = pa.Table.from_batches(table.to_batches(max_chunksize=BATCH_ROWS))
    expected = round(float(values.sum()), 2)
    with tempfile.TemporaryDirectory(prefix="pyairport-floor-") as scratch:
        folder = Path(scratch) / "amount"
        per_file = args.rows // FILES
        for part in range(FILES):
            write_deltalake(str(folder), table.slice(part * per_file, per_file), mode="append")
        socket = Path(scratch) / "flight.sock"
        servers = {
            "TCP loopback": ColumnServer("grpc://127.0.0.1:0", served),
            "Unix socket": ColumnServer(f"grpc+unix://{socket}", served),
        }
        for server in servers.values():
            if server.where.endswith(":0"):
                server.where = f"grpc://127.0.0.1:{server.port}"
            threading.Thread(target=server.serve, daemon=True).start()
        db = airport_extension.connect(airport_extension.locate())
        db.execute("LOAD delta")
        version = db.execute("SELECT version()").fetchone()[0]
        ways: dict[str, Callable[[], Any]] = {
            "DuckDB delta_scan": lambda: db.execute(
                f"SELECT round(sum(amount), 2) FROM delta_scan('{folder}')"
            ).fetchone()[0]
        }
        for name, server in servers.items():
            sql = (
                "SELECT round(sum(amount), 2) FROM"
                f" airport_take_flight('{server.where}', ['amount'])"
            )
            ways[f"DuckDB over Flight, {name}"] = lambda sql=sql: db.execute(sql).fetchone()[0]
        for name, server in servers.items():
            client = flight.connect(server.where)
            ways[f"pyarrow client, {name}"] = lambda client=client: round(
                float(pc.sum(client.do_get(flight.Ticket(b"amount")).read_all()[0]).as_py()),
                2,
            )
        print(
            f"sum of {args.rows:,} doubles ({table.nbytes / 1e6:.0f} MB of Arrow), DuckDB"
            f" {version}, best of {args.repeats}; ratios to delta_scan"
        )
        base = None
        for name, run in ways.items():
            seconds, answer = best_of(args.repeats, run)
            if answer != expected:
                print(f"  {name:<36} WRONG: {answer} (expected {expected})")
                continue
            base = base or seconds
            print(f"  {name:<36}{seconds * 1000:>9.1f} ms ({seconds / base:>5.2f})")
        db.close()
        for server in servers.values():
            server.shutdown()


if __name__ == "__main__":
    main()
