"""Should the catalog's RPCs move to Arrow C++'s Flight server, as the scans' data plane did?
The same pyarrow.flight client (Arrow C++, as DuckDB's) against pyairport's catalog server
(grpcio; bench_server.py's memory table), a bare grpcio DoExchange loop
(decode_loop_server.py), the same loop on grpcio's asyncio server (grpc.aio) and a bare Arrow
C++ one (arrow_exchange_server.py), each in its own process, taking turns: the p50 of 1-row
INSERTs (one connection per server, as DuckDB keeps one), and DuckDB-shaped INSERTs of N
rows in 2048-row batches, plain and with RETURNING in lock-step (best of R). Last, what a
gRPC client receives when each server refuses a statement with the contract's
INVALID_ARGUMENT: the deciding fact beside the times.

    .venv/bin/python bench/catalog_plane.py [--samples 500] [--rows 1000000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import grpc
import numpy as np
import pyarrow as pa
import pyarrow.flight as flight

sys.path.insert(0, str(Path(__file__).parent))
from bench_server import rows  # noqa: E402
from duckdb_shaped import BATCH_ROWS, PATH, statement  # noqa: E402
from run import start_server  # noqa: E402
from vs_go import flight_statement  # noqa: E402

from airport_contracts import flight_pb2, flight_pb2_grpc  # noqa: E402
from pyairport.wire.ipc import encode_batch, encode_schema  # noqa: E402

SERVERS = {
    "pyairport (grpcio)": ("bench_server.py",),
    "bare grpcio loop": ("decode_loop_server.py",),
    "bare grpc.aio loop": ("decode_loop_server.py", "--aio"),
    "bare Arrow C++ loop": ("arrow_exchange_server.py",),
}


def one_row(client: flight.FlightClient, data: pa.Table) -> float:
    """Seconds of one 1-row INSERT on client's connection."""
    start = time.perf_counter()
    flight_statement(client, "insert", PATH, data)
    return time.perf_counter() - start


def refusal(location: str, headers: list[tuple[str, str]], data: pa.Table) -> str:
    """The status and details a gRPC client receives for a refused DoExchange statement."""
    with grpc.insecure_channel(location.removeprefix("grpc://")) as channel:
        stub = flight_pb2_grpc.FlightServiceStub(channel)
        descriptor = flight_pb2.FlightDescriptor(type=1, path=PATH.split("/"))
        messages = [encode_schema(data.schema), *(encode_batch(b) for b in data.to_batches())]
        first = flight_pb2.FlightData.FromString(messages[0])
        first.flight_descriptor.CopyFrom(descriptor)
        sent = [first, *(flight_pb2.FlightData.FromString(m) for m in messages[1:])]
        try:
            list(stub.DoExchange(iter(sent), metadata=headers, timeout=10))
        except grpc.RpcError as exc:
            assert isinstance(exc, grpc.Call)
            return f"{exc.code().name} {exc.details()!r}"
    return "not refused"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    started = {name: start_server(*command) for name, command in SERVERS.items()}
    locations = {name: location for name, (_, location) in started.items()}
    try:
        clients = {name: flight.connect(at) for name, at in locations.items()}
        one = rows(1)
        times: dict[str, list[float]] = {name: [] for name in SERVERS}
        warm = args.samples // 5
        for n in range(warm + args.samples):
            for name, client in clients.items():  # in turns: the machine's drift hits all
                seconds = one_row(client, one)
                if n >= warm:
                    times[name].append(seconds)
        print(f"1-row INSERT (DoExchange), p50 of {args.samples}, through pyarrow.flight")
        for name, samples in times.items():
            print(f"  {name:<28}{np.median(samples) * 1000:8.3f} ms")
        data = rows(args.rows)
        print(
            f"DuckDB-shaped INSERT, {args.rows:,} rows in {BATCH_ROWS}-row batches,"
            f" best of {args.repeats} (rows/s)"
        )
        for returning in (False, True):
            best = {name: float("inf") for name in SERVERS}
            for _ in range(args.repeats):
                for name, at in locations.items():
                    start = time.perf_counter()
                    counted = statement(at, "insert", PATH, data, returning)
                    best[name] = min(best[name], time.perf_counter() - start)
                    assert counted == args.rows, (name, counted)
            label = "RETURNING lock-step" if returning else "plain"
            figures = "   ".join(f"{name} {args.rows / s:>12,.0f}" for name, s in best.items())
            print(f"  {label:<20}{figures}")
        null_rowid = pa.table({"rowid": pa.array([None], pa.int64())})
        print("A DELETE of a null rowid refused (the contract: INVALID_ARGUMENT, its message)")
        delete = [("airport-operation", "delete"), ("airport-flight-path", PATH)]
        print(
            f"  pyairport (grpcio)    {refusal(locations['pyairport (grpcio)'], delete, null_rowid)}"
        )
        arrow = refusal(locations["bare Arrow C++ loop"], [*delete, ("fail", "1")], null_rowid)
        print(f"  Arrow C++ server      {arrow[:160]}{'…' if len(arrow) > 160 else ''}")
        for client in clients.values():
            client.close()
    finally:
        for process, _ in started.values():
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
