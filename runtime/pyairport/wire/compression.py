"""Compressed DoGet streams: each batch's buffers compressed with LZ4 (frame) or ZSTD, as
Arrow's IPC format allows; Flight clients built on Arrow C++ (DuckDB's Airport extension,
pyarrow, arrow-go) decompress them as they read, unasked.

Compression costs the server CPU (ZSTD at Arrow's default level: about 0.5 GB/s a core)
and saves the bytes: worth it across a network, not on the machine itself, where the
bytes cost less than the compressing. So `auto`, the default, compresses with ZSTD for a
peer on another host and not for one on this host, and a count's stream (its values null,
its buffers zeros) with LZ4 for any peer.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import pyarrow as pa

from .dictionaries import has_dictionaries
from .ipc import encode_batch, frame_messages

SETTINGS = ("auto", "none", "lz4", "zstd")
_ACROSS_A_NETWORK = "zstd"
_ALL_NULL = "lz4"


def codec_for(setting: str, peer: str, all_null: bool = False) -> str | None:
    """The codec a stream to peer (gRPC's `ipv4:10.0.0.7:51234`, `ipv6:[::1]:51234`,
    `unix:…`) is compressed with, or None. all_null: a count's stream, whose values are
    null and so its buffers zeros (the column DuckDB names in a count keeps its type, 8
    bytes a row for a BIGINT): compressed on this host too, since compressing zeros costs
    less than sending them (DuckDB 1.4.4's count(*) of SF 1's `lineitem`, 48 MB of them:
    19–24 ms compressed, 41–55 ms not; LZ4 and ZSTD alike)."""
    if setting == "auto":
        if all_null:
            return _ALL_NULL
        return None if on_this_host(peer) else _ACROSS_A_NETWORK
    return None if setting == "none" else setting


def on_this_host(peer: str) -> bool:
    """Whether gRPC's peer string names a client on this host (loopback or a Unix socket)."""
    kind, _, address = peer.partition(":")
    if kind.startswith("unix"):
        return True
    host = address.rsplit(":", 1)[0].strip("[]")
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name or a form gRPC did not use before: count it as remote


class BatchEncoder:
    """A stream's batches as FlightData messages, compressed with codec (None: as they are):
    one message a batch, after one for each dictionary the batch brings (its dictionary
    columns' values, whenever they change: wire/dictionaries.py). pyarrow's serialize
    neither compresses nor writes dictionaries, so then Arrow's stream writer writes the
    batch and its messages are cut out of what it wrote."""

    def __init__(self, schema: pa.Schema, codec: str | None) -> None:
        self._sink: _Collected | None = None
        self._writer: Any = None
        if codec is not None or has_dictionaries(schema):
            self._sink = _Collected()
            options = pa.ipc.IpcWriteOptions(compression=codec)
            self._writer = pa.ipc.new_stream(self._sink, schema, options=options)

    def encode(self, batch: pa.RecordBatch, app_metadata: bytes = b"") -> list[bytes]:
        if self._sink is None:
            return [encode_batch(batch, app_metadata)]
        self._writer.write_batch(batch)
        return frame_messages(self._sink.take(), app_metadata)


class _Collected:
    """A file-like sink that keeps what Arrow's writer writes until taken."""

    closed = False

    def __init__(self) -> None:
        self._parts: list[Any] = []  # bytes, and pyarrow Buffers (a body: kept, not copied)

    def write(self, data: Any) -> int:
        self._parts.append(data)
        return len(data)

    def flush(self) -> None:
        """Nothing is buffered: each write is kept as it comes."""

    def take(self) -> bytes:
        taken, self._parts = b"".join(self._parts), []
        return taken
