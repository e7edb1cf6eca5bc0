"""Arrow IPC framing for Flight: FlightData messages ↔ pyarrow schemas and batches.

A FlightData carries one IPC message split in two: data_header (the flatbuffer Message) and
data_body. pyarrow reads a message from its encapsulated form (continuation marker, length,
metadata padded to 8 bytes, body), so incoming messages are re-framed that way and outgoing
ones are cut out of pyarrow's serialization. pyarrow parses every flatbuffer.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pyarrow as pa

from airport_contracts import flight_pb2

from .ipc_body import MAX_MESSAGE_BYTES, check_decompressed

_CONTINUATION = b"\xff\xff\xff\xff"


class StreamError(Exception):
    """The client's IPC stream is not what Flight promises (message order or content)."""


def read_message(data: flight_pb2.FlightData) -> pa.ipc.Message:
    header = data.data_header
    padding = -len(header) % 8
    framed = b"".join(
        (
            _CONTINUATION,
            struct.pack("<i", len(header) + padding),
            header,
            b"\0" * padding,
            data.data_body,
        )
    )
    return pa.ipc.read_message(pa.py_buffer(framed))


def _split(serialized: pa.Buffer) -> tuple[bytes, bytes]:
    """(metadata, body) of one encapsulated IPC message as pyarrow serializes it."""
    header, body = _message_parts(serialized)
    return bytes(header), bytes(body)


def schema_message(schema: pa.Schema) -> flight_pb2.FlightData:
    header, _ = _split(schema.serialize())
    return flight_pb2.FlightData(data_header=header)


def batch_message(batch: pa.RecordBatch, app_metadata: bytes = b"") -> flight_pb2.FlightData:
    header, body = _split(batch.serialize())
    return flight_pb2.FlightData(data_header=header, data_body=body, app_metadata=app_metadata)


# What the server sends, as FlightData wire bytes built straight from pyarrow's buffer: going
# through a FlightData object copies a batch's body three more times (slicing it out,
# into the message, and SerializeToString): with pyarrow's serialize, about half of a
# DoGet's time in the server.
# The bytes are the ones protobuf writes: fields in number order, empty ones left out.
_DATA_HEADER, _APP_METADATA, _DATA_BODY = b"\x12", b"\x1a", b"\xc2\x3e"  # fields 2, 3, 1000


def encode_schema(schema: pa.Schema, app_metadata: bytes = b"") -> bytes:
    return _flight_data(_message_parts(schema.serialize())[0], app_metadata=app_metadata)


def encode_batch(batch: pa.RecordBatch, app_metadata: bytes = b"") -> bytes:
    return frame_message(batch.serialize(), app_metadata)


def frame_message(serialized: pa.Buffer, app_metadata: bytes = b"") -> bytes:
    """One encapsulated IPC message (as Arrow writes it) as FlightData bytes."""
    return _flight_data(*_message_parts(serialized), app_metadata=app_metadata)


def frame_messages(stream: pa.Buffer | bytes, app_metadata: bytes = b"") -> list[bytes]:
    """The messages of a stream fragment as Arrow's stream writer writes them (a record batch
    and the dictionaries it brings before it; a schema first is left out) as FlightData
    bytes, app_metadata on the last, the batch."""
    reader = pa.ipc.MessageReader.open_stream(pa.py_buffer(stream))
    messages = []
    while True:
        try:
            message = reader.read_next_message()
        except StopIteration:
            break
        if message.type != "schema":
            messages.append(message)
    return [
        _flight_data(
            memoryview(message.metadata),
            memoryview(message.body) if message.body is not None else b"",
            app_metadata if i == len(messages) - 1 else b"",
        )
        for i, message in enumerate(messages)
    ]


def encode_app_metadata(app_metadata: bytes) -> bytes:
    return _flight_data(b"", app_metadata=app_metadata)


def _message_parts(serialized: pa.Buffer | bytes) -> tuple[memoryview, memoryview]:
    """(metadata, body) of one encapsulated IPC message, as views (no copy)."""
    view = memoryview(serialized)
    offset = 8 if bytes(view[:4]) == _CONTINUATION else 4
    length = struct.unpack_from("<i", view, offset - 4)[0]
    return view[offset : offset + length], view[offset + length :]


def _flight_data(
    header: bytes | memoryview, body: bytes | memoryview = b"", app_metadata: bytes = b""
) -> bytes:
    parts: list[bytes | memoryview] = []
    for tag, value in ((_DATA_HEADER, header), (_APP_METADATA, app_metadata), (_DATA_BODY, body)):
        if len(value):
            parts += (tag, _varint(len(value)), value)
    return b"".join(parts)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class FlightDataInput:
    """The client side of DoExchange/DoPut as an ExchangeInput: descriptor, schema, batches.

    Messages without a data_header (a descriptor-only first message, app_metadata-only
    messages) carry no data and are skipped; the app_metadata of those before the schema is
    kept in leading_metadata (an in-out function call's arguments travel so). A dictionary
    batch or a second schema is a StreamError: Airport never sends them. A compressed batch
    that would decompress to more than max_batch_bytes is InputBatchTooLarge.
    """

    def __init__(
        self, messages: Iterator[flight_pb2.FlightData], max_batch_bytes: int = MAX_MESSAGE_BYTES
    ) -> None:
        self._messages = messages
        self.max_batch_bytes = max_batch_bytes  # the most a compressed batch may decompress to
        self._schema: pa.Schema | None = None
        self._schema_read = False
        self.descriptor: flight_pb2.FlightDescriptor | None = None
        self.leading_metadata: list[bytes] = []
        self._pending: flight_pb2.FlightData | None = None
        self.body_bytes = 0  # the Arrow bytes of the batches read so far (the server's metrics)

    def _next_message(self) -> pa.ipc.Message | None:
        if self._pending is not None:
            data, self._pending = self._pending, None
            return read_message(data)
        for data in self._messages:
            if self.descriptor is None and data.HasField("flight_descriptor"):
                self.descriptor = data.flight_descriptor
            if data.data_header:
                return read_message(data)
            if data.app_metadata and self._schema is None:
                self.leading_metadata.append(data.app_metadata)
        return None

    def read_descriptor(self) -> flight_pb2.FlightDescriptor | None:
        """The descriptor of the first message (DoPut), reading at most one message."""
        if self.descriptor is None and not self._schema_read:
            first = next(self._messages, None)
            if first is None:
                self._schema_read = True
                return None
            if first.HasField("flight_descriptor"):
                self.descriptor = first.flight_descriptor
            if first.data_header:
                self._pending = first  # decoded by read_schema, where decoding errors are reported
            elif first.app_metadata:
                self.leading_metadata.append(first.app_metadata)
        return self.descriptor

    def read_schema(self) -> pa.Schema | None:
        if self._schema_read:
            return self._schema
        self._schema_read = True
        message = self._next_message()
        if message is None:
            return None
        if message.type != "schema":
            raise StreamError(f"expected a schema message first, got {message.type}")
        self._schema = pa.ipc.read_schema(message)
        return self._schema

    def batches(self) -> Iterator[pa.RecordBatch]:
        schema = self.read_schema()
        if schema is None:
            return
        while (message := self._next_message()) is not None:
            if message.type != "record batch":
                raise StreamError(f"unexpected {message.type} message in the input stream")
            self.body_bytes += message.body.size
            check_decompressed(message.metadata, message.body, self.max_batch_bytes)
            yield pa.ipc.read_record_batch(message, schema)
