"""A bare grpcio DoExchange loop, in its own process: the floor a DuckDB-shaped statement has
on this transport. It decodes every batch the client sends (and with RETURNING re-encodes it
and answers it at once, as a lock-step client waits for), then sends the final metadata; no
dispatcher, no table. It answers with FlightData wire bytes, as pyairport's server does.
With --aio the same loop runs on grpcio's asyncio server (grpc.aio) instead of its thread-pool
one. Prints its grpc:// location; stops when stdin closes."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
import pyarrow as pa

from airport_contracts import FinalMetadata, flight_pb2
from pyairport.wire.ipc import encode_app_metadata, encode_batch, encode_schema, read_message


class Loop:
    """One statement's work: each client message decoded, what goes back for it, and the
    final metadata."""

    def __init__(self, headers: Any) -> None:
        self.returning = dict(headers or ()).get("return-chunks") == "1"
        self.schema: pa.Schema | None = None
        self.rows = 0

    def answers(self, data: flight_pb2.FlightData) -> list[bytes]:
        if not data.data_header:
            return []
        message = read_message(data)
        if self.schema is None:
            self.schema = pa.ipc.read_schema(message)
            return [encode_schema(self.schema)]
        batch = pa.ipc.read_record_batch(message, self.schema)
        self.rows += batch.num_rows
        return [encode_batch(batch)] if self.returning else []

    def final(self) -> bytes:
        return encode_app_metadata(FinalMetadata(total_changed=self.rows).to_msgpack())


def exchange(
    requests: Iterator[flight_pb2.FlightData], context: grpc.ServicerContext
) -> Iterator[bytes]:
    loop = Loop(context.invocation_metadata())
    for data in requests:
        yield from loop.answers(data)
    yield loop.final()


async def exchange_aio(
    requests: AsyncIterator[flight_pb2.FlightData],
    context: grpc.aio.ServicerContext[flight_pb2.FlightData, bytes],
) -> AsyncIterator[bytes]:
    """exchange() as grpc.aio calls it: the same work, the messages awaited."""
    loop = Loop(context.invocation_metadata())
    async for data in requests:
        for answer in loop.answers(data):
            yield answer
    yield loop.final()


OPTIONS = [("grpc.max_receive_message_length", 256 * 1024 * 1024)]


def _handlers(fn: Callable[..., Any]) -> tuple[grpc.GenericRpcHandler[Any, Any], ...]:
    handler = grpc.stream_stream_rpc_method_handler(
        fn, request_deserializer=flight_pb2.FlightData.FromString, response_serializer=bytes
    )
    service = "arrow.flight.protocol.FlightService"
    return (grpc.method_handlers_generic_handler(service, {"DoExchange": handler}),)


async def serve_aio() -> None:
    server = grpc.aio.server(options=OPTIONS)
    server.add_generic_rpc_handlers(_handlers(exchange_aio))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"grpc://127.0.0.1:{port}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await server.stop(0)


def main() -> None:
    if "--aio" in sys.argv[1:]:
        asyncio.run(serve_aio())
        return
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=32), options=OPTIONS)
    server.add_generic_rpc_handlers(_handlers(exchange))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"grpc://127.0.0.1:{port}", flush=True)
    sys.stdin.read()
    server.stop(0)


if __name__ == "__main__":
    main()
