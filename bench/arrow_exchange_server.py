"""A bare Arrow C++ Flight server (pyarrow's FlightServerBase), in its own process: the same
DoExchange as decode_loop_server.py and grpc_floor_server.py (read every batch the client
sends, with RETURNING send each back at once, then the final metadata), with no dispatcher
and no table: the floor of the catalog's RPCs were they served by Arrow C++ instead of
grpcio. A call whose `fail` header is set is refused as a contract error would be, to show
what a client receives. Prints its grpc:// location; stops when stdin closes."""

from __future__ import annotations

import sys
from typing import Any

import pyarrow as pa
import pyarrow.flight as flight

from airport_contracts import FinalMetadata


class ArrowExchange(flight.FlightServerBase):  # type: ignore[misc]
    def do_exchange(self, context: Any, descriptor: Any, reader: Any, writer: Any) -> None:
        headers = context.get_middleware("headers")
        if headers is not None and headers.fail:
            # The nearest Arrow's server has to the contract's INVALID_ARGUMENT.
            raise pa.ArrowInvalid("invalid rowid: null")
        returning = headers is not None and headers.returning
        rows = 0
        begun = False
        for chunk in reader:
            if chunk.data is None:
                continue
            rows += chunk.data.num_rows
            if returning:
                if not begun:
                    writer.begin(chunk.data.schema)
                    begun = True
                writer.write_batch(chunk.data)
        if not begun:
            writer.begin(pa.schema([]))
        writer.write_metadata(pa.py_buffer(FinalMetadata(total_changed=rows).to_msgpack()))


class _Headers(flight.ServerMiddlewareFactory):  # type: ignore[misc]
    def start_call(self, info: Any, headers: dict[str, list[Any]]) -> _CallHeaders:
        return _CallHeaders(headers)


class _CallHeaders(flight.ServerMiddleware):  # type: ignore[misc]
    def __init__(self, headers: dict[str, list[Any]]) -> None:
        self.returning = headers.get("return-chunks") == ["1"]
        self.fail = bool(headers.get("fail"))


def main() -> None:
    server = ArrowExchange("grpc://127.0.0.1:0", middleware={"headers": _Headers()})
    print(f"grpc://127.0.0.1:{server.port}", flush=True)
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
