"""The Airport catalog's compressed msgpack (protocol §2.6): Go's pair
[uint32 uncompressed length, zstd bytes] around msgpack, as list_schemas answers its tree and
each schema's serialized tables; and the msgpack list of serialized FlightEndpoints that
endpoints answers. The server writes them and the client reads them with these."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgpack
import zstandard


def pack_compressed(value: Any, bin_type: bool = False) -> bytes:
    """value as msgpack (bytes as msgpack bin when bin_type, else as str, as Go writes the
    tree), zstd-compressed in Go's pair."""
    data: bytes = msgpack.packb(value, use_bin_type=bin_type)
    packed: bytes = msgpack.packb(
        [len(data), zstandard.ZstdCompressor(level=3).compress(data)], use_bin_type=False
    )
    return packed


def unpack_compressed(body: bytes) -> Any:
    """What pack_compressed packed (msgpack str and bin both as bytes)."""
    length, data = msgpack.unpackb(body, raw=True)
    plain = zstandard.ZstdDecompressor().decompress(data, max_output_size=length)
    return msgpack.unpackb(plain, raw=True)


def pack_endpoints(serialized: Iterable[bytes], bin_type: bool = False) -> bytes:
    """A msgpack list of serialized FlightEndpoints: the endpoints answer (as msgpack str, as
    Go's server writes it), or the databases listing's (bin_type: as msgpack bin)."""
    packed: bytes = msgpack.packb(list(serialized), use_bin_type=bin_type)
    return packed


def unpack_endpoints(body: bytes) -> list[bytes]:
    listed: list[bytes] = msgpack.unpackb(body, raw=True)
    return listed
