"""What a Flight client observes from a server, recorded in a form two servers' answers can
be compared in: every DoExchange message in order (schema fields with metadata, batch rows,
final-metadata bytes), status codes and messages, action results, and table contents read
back through the DuckDB scan path (endpoints + DoGet).

Calls are raw gRPC (the generated stubs), sending all input and then reading all output, so
a server that answers a RETURNING batch with nothing (Go) cannot stall the recording.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import grpc
import msgpack
import pyarrow as pa

from airport_contracts import flight_pb2, flight_pb2_grpc
from pyairport.wire.ipc import batch_message, read_message, schema_message

ROWID_COLUMN_ID = 2**64 - 1  # DuckDB's column id for the rowid pseudo-column


def fields(schema: pa.Schema) -> list[tuple[Any, ...]]:
    return [(f.name, str(f.type), f.nullable, sorted((f.metadata or {}).items())) for f in schema]


def status(error: grpc.RpcError) -> tuple[str, str]:
    return (error.code().name, error.details() or "")


class Wire:
    """A raw gRPC Flight connection to one server; headers go with every call (a token, the
    airport-catalog header)."""

    def __init__(self, location: str, headers: dict[str, str] | None = None) -> None:
        parsed = urlparse(location)
        self.location = location
        self.headers = dict(headers or {})
        # the Go server sends a scan as one batch: allow large messages like DuckDB does
        self.channel = grpc.insecure_channel(
            f"{parsed.hostname}:{parsed.port}",
            options=[("grpc.max_receive_message_length", 256 << 20)],
        )
        self.stub = flight_pb2_grpc.FlightServiceStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    def metadata(self) -> list[tuple[str, str]]:
        return sorted(self.headers.items())

    # --- DoExchange --------------------------------------------------------------------------

    def exchange(
        self,
        headers: dict[str, str],
        schema: pa.Schema | None,
        batches: list[pa.RecordBatch] = (),  # type: ignore[assignment]
    ) -> dict[str, Any]:
        """One DoExchange: {"messages": [...], "status": (code, message)}."""
        requests = []
        if schema is not None:
            first = schema_message(schema)
            path = headers.get("airport-flight-path", "").split("/")
            first.flight_descriptor.CopyFrom(
                flight_pb2.FlightDescriptor(type=flight_pb2.FlightDescriptor.PATH, path=path)
            )
            requests = [first, *(batch_message(b) for b in batches)]
        messages: list[tuple[Any, ...]] = []
        out_schema = None
        try:
            metadata = sorted({**self.headers, **headers}.items())
            for data in self.stub.DoExchange(iter(requests), metadata=metadata):
                if not data.data_header:
                    messages.append(("metadata", data.app_metadata.hex()))
                    continue
                message = read_message(data)
                if message.type == "schema":
                    out_schema = pa.ipc.read_schema(message)
                    messages.append(("schema", fields(out_schema), data.app_metadata.hex()))
                else:
                    batch = pa.ipc.read_record_batch(message, out_schema)
                    messages.append(("batch", batch.to_pylist(), data.app_metadata.hex()))
            return {"messages": messages, "status": ("OK", "")}
        except grpc.RpcError as error:
            return {"messages": messages, "status": status(error)}

    def dml(
        self,
        operation: str,
        path: str,
        data: pa.Table | None,
        *,
        returning: bool = False,
        batch_rows: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """A DoExchange DML call with DuckDB's headers."""
        call = {"airport-operation": operation, "airport-flight-path": path}
        if returning:
            call["return-chunks"] = "1"
        call.update(headers or {})
        if data is None:
            return self.exchange(call, None)
        return self.exchange(call, data.schema, data.to_batches(max_chunksize=batch_rows))

    # --- DoAction / read side ----------------------------------------------------------------

    def action(self, action_type: str, body: bytes = b"") -> dict[str, Any]:
        try:
            results = self.stub.DoAction(
                flight_pb2.Action(type=action_type, body=body), metadata=self.metadata()
            )
            return {"results": [r.body for r in results], "status": ("OK", "")}
        except grpc.RpcError as error:
            return {"results": [], "status": status(error)}

    def msgpack_action(self, action_type: str, request: dict[str, Any]) -> dict[str, Any]:
        answer = self.action(action_type, msgpack.packb(request))
        answer["results"] = [msgpack.unpackb(r) for r in answer["results"]]
        return answer

    def endpoint(self, schema: str, table: str, column_ids: list[int]) -> flight_pb2.FlightEndpoint:
        descriptor = flight_pb2.FlightDescriptor(
            type=flight_pb2.FlightDescriptor.PATH, path=[schema, table]
        ).SerializeToString()
        request = {
            "descriptor": descriptor,
            "parameters": {"column_ids": column_ids, "json_filters": ""},
        }
        answer = self.action("endpoints", msgpack.packb(request))
        (body,) = answer["results"]
        endpoint = flight_pb2.FlightEndpoint()
        endpoint.ParseFromString(msgpack.unpackb(body, raw=True)[0])
        return endpoint

    def do_get(self, ticket: bytes) -> pa.Table:
        schema, batches = None, []
        for data in self.stub.DoGet(flight_pb2.Ticket(ticket=ticket), metadata=self.metadata()):
            message = read_message(data)
            if message.type == "schema":
                schema = pa.ipc.read_schema(message)
            else:
                batches.append(pa.ipc.read_record_batch(message, schema))
        return pa.Table.from_batches(batches, schema=schema)

    def rows(self, schema: str, table: str = "users") -> list[dict[str, Any]]:
        """SELECT rowid, id, name, email the way DuckDB scans before UPDATE/DELETE, by rowid."""
        endpoint = self.endpoint(schema, table, [ROWID_COLUMN_ID, 0, 1, 2])
        scanned = self.do_get(endpoint.ticket.ticket)
        return sorted(scanned.to_pylist(), key=lambda r: r["rowid"])
