"""A bare grpcio Flight server, in its own process: DoExchange reads the client's messages and
answers with a schema message and the final metadata, as a DML statement does, but with no
dispatcher and no table. What it costs per statement is the floor for any server built on
grpcio's Python server, pyairport's included. Prints its grpc:// location; stops when stdin
closes."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from concurrent import futures

import grpc
import pyarrow as pa

from airport_contracts import FinalMetadata, flight_pb2, flight_pb2_grpc
from pyairport.wire.ipc import schema_message


class BareExchange(flight_pb2_grpc.FlightServiceServicer):
    def DoExchange(
        self, request_iterator: Iterator[flight_pb2.FlightData], context: grpc.ServicerContext
    ) -> Iterator[flight_pb2.FlightData]:
        messages = sum(1 for _ in request_iterator)
        yield schema_message(pa.schema([]))
        yield flight_pb2.FlightData(app_metadata=FinalMetadata(total_changed=messages).to_msgpack())


def main() -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
    flight_pb2_grpc.add_FlightServiceServicer_to_server(BareExchange(), server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"grpc://127.0.0.1:{port}", flush=True)
    sys.stdin.read()
    server.stop(0)


if __name__ == "__main__":
    main()
