"""A bare grpcio DoExchange loop, in its own process: the floor a DuckDB-shaped statement has
on this transport. It decodes every batch the client sends (and with RETURNING re-encodes it
and answers it at once, as a lock-step client waits for), then sends the final metadata; no
dispatcher, no table. It answers with FlightData wire bytes, as pyairport's server does.
Prints its grpc:// location; stops when stdin closes."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from concurrent import futures

import grpc
import pyarrow as pa

from airport_contracts import FinalMetadata, flight_pb2
from pyairport.wire.ipc import encode_app_metadata, encode_batch, encode_schema, read_message


def exchange(
    requests: Iterator[flight_pb2.FlightData], context: grpc.ServicerContext
) -> Iterator[bytes]:
    returning = dict(context.invocation_metadata()).get("return-chunks") == "1"
    schema: pa.Schema | None = None
    rows = 0
    for data in requests:
        if not data.data_header:
            continue
        message = read_message(data)
        if schema is None:
            schema = pa.ipc.read_schema(message)
            yield encode_schema(schema)
            continue
        batch = pa.ipc.read_record_batch(message, schema)
        rows += batch.num_rows
        if returning:
            yield encode_batch(batch)
    yield encode_app_metadata(FinalMetadata(total_changed=rows).to_msgpack())


def main() -> None:
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=32),
        options=[("grpc.max_receive_message_length", 256 * 1024 * 1024)],
    )
    handler = grpc.stream_stream_rpc_method_handler(
        exchange, request_deserializer=flight_pb2.FlightData.FromString, response_serializer=bytes
    )
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "arrow.flight.protocol.FlightService", {"DoExchange": handler}
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"grpc://127.0.0.1:{port}", flush=True)
    sys.stdin.read()
    server.stop(0)


if __name__ == "__main__":
    main()
