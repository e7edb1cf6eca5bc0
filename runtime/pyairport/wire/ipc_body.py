"""How many bytes a client's compressed record batch becomes, read before Arrow
decompresses it.

An IPC record batch may carry its buffers LZ4- or ZSTD-compressed, each prefixed by the
length it decompresses to; Arrow's reader allocates and fills that much. A megabyte of
compressed zeros is tens of gigabytes decompressed, so a client could make one batch of a
statement exhaust the server's memory. The lengths are read here from the message's
flatbuffer (Arrow's Message.fbs: a Message whose header is a RecordBatch with its buffers'
places in the body and, when compressed, a BodyCompression) and the body's prefixes.
pyarrow has verified the flatbuffer by the time a message gets here (pa.ipc.read_message).
"""

from __future__ import annotations

import struct

from airport_contracts import InputBatchTooLarge

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The largest message a server takes by default (ServerConfig.max_message_bytes), and so the
most a compressed batch may decompress to."""

_DICTIONARY_BATCH, _RECORD_BATCH = 2, 3  # MessageHeader's
_MESSAGE_HEADER_TYPE, _MESSAGE_HEADER = 1, 2  # Message's fields
_DICTIONARY_DATA = 1  # DictionaryBatch's field: its RecordBatch
_BATCH_BUFFERS, _BATCH_COMPRESSION = 2, 3  # RecordBatch's fields
_BUFFER_STRUCT = struct.Struct("<qq")  # Buffer: offset and length in the body
_UNCOMPRESSED = -1  # a compressed body's buffer stored as it is


class _Table:
    """One flatbuffer table: where each of its fields is, from its vtable."""

    def __init__(self, data: memoryview, position: int) -> None:
        self.data = data
        self.position = position
        vtable = position - struct.unpack_from("<i", data, position)[0]
        size = struct.unpack_from("<H", data, vtable)[0]
        count = (size - 4) // 2
        self.fields = struct.unpack_from(f"<{count}H", data, vtable + 4)

    def where(self, field: int) -> int | None:
        offset = self.fields[field] if field < len(self.fields) else 0
        return self.position + offset if offset else None

    def byte(self, field: int) -> int:
        at = self.where(field)
        return 0 if at is None else self.data[at]

    def table(self, field: int) -> _Table | None:
        at = self.where(field)
        return None if at is None else _Table(self.data, _follow(self.data, at))

    def structs(self, field: int, layout: struct.Struct) -> list[tuple[int, ...]]:
        at = self.where(field)
        if at is None:
            return []
        vector = _follow(self.data, at)
        count = struct.unpack_from("<I", self.data, vector)[0]
        return [layout.unpack_from(self.data, vector + 4 + i * layout.size) for i in range(count)]


def _follow(data: memoryview, at: int) -> int:
    return at + int(struct.unpack_from("<I", data, at)[0])


def check_decompressed(
    metadata: bytes | memoryview, body: bytes | memoryview | None, limit: int
) -> None:
    """InputBatchTooLarge when the message is a compressed record batch whose buffers would
    decompress to more than limit bytes (deviation decompressed_input_bounded)."""
    size = decompressed_size(metadata, body or b"")
    if size is not None and size > limit:
        raise InputBatchTooLarge(size=size, limit=limit)


def decompressed_size(metadata: bytes | memoryview, body: bytes | memoryview) -> int | None:
    """The bytes a record batch's (or a dictionary batch's) buffers take once decompressed, or
    None when its body is not compressed (it is then its own size) or the message holds no
    batch."""
    data = memoryview(metadata)
    message = _Table(data, struct.unpack_from("<I", data, 0)[0])
    header = message.byte(_MESSAGE_HEADER_TYPE)
    if header not in (_DICTIONARY_BATCH, _RECORD_BATCH):
        return None
    batch = message.table(_MESSAGE_HEADER)
    if batch is not None and header == _DICTIONARY_BATCH:
        batch = batch.table(_DICTIONARY_DATA)
    if batch is None or batch.where(_BATCH_COMPRESSION) is None:
        return None
    body_view = memoryview(body)
    total = 0
    for offset, length in batch.structs(_BATCH_BUFFERS, _BUFFER_STRUCT):
        # an empty buffer has no prefix; one outside the body Arrow's reader refuses itself
        # (the flatbuffer's verifier does not know the body)
        if length < 8 or not 0 <= offset <= len(body_view) - 8:
            continue
        declared = struct.unpack_from("<q", body_view, offset)[0]
        total += length - 8 if declared == _UNCOMPRESSED else max(declared, 0)
    return total
