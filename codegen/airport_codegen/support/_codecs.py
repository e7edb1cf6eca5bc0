"""The checks and byte layouts the payload codecs share (payloads.py renders one class per
payload of the contract and calls these).

Decoding validates: a missing required field, a field of the wrong type or malformed
JSON/msgpack raises the contract's error for a bad payload (InvalidPayload, given to
PayloadCodecs) with a message naming the payload and the field. Encoding matches the Go
server's bytes: JSON keys in struct order without spaces; msgpack maps in struct order with
vmihailenco/msgpack's fixed widths (int64 → d3 + 8 bytes, uint64 → cf + 8 bytes).
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from collections.abc import Callable, Mapping
from typing import Any

import msgpack

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UINT64_MAX = 2**64 - 1

# The first byte of a msgpack map (fixmap, map16, map32) or nil.
_MSGPACK_MAP_OR_NIL = frozenset((*range(0x80, 0x90), 0xDE, 0xDF, 0xC0))


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


class PayloadCodecs:
    """Field decoders and encoders that raise `error(payload=..., problem=...)`."""

    NIL = b"\xc0"

    def __init__(self, error: Callable[..., Exception]) -> None:
        self.error = error

    def wrong(self, payload: str, key: str, expected: str, value: Any) -> Exception:
        return self.error(
            payload=payload, problem=f"field '{key}' must be {expected}, got {_describe(value)}"
        )

    def required(self, payload: str, obj: Mapping[str, Any], key: str) -> Any:
        if key not in obj:
            raise self.error(payload=payload, problem=f"missing field '{key}'")
        return obj[key]

    def as_str(self, payload: str, key: str, value: Any) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, bytes):  # msgpack bin where Go decodes into a string
            try:
                return value.decode()
            except UnicodeDecodeError:
                raise self.error(
                    payload=payload, problem=f"field '{key}' is not valid UTF-8"
                ) from None
        raise self.wrong(payload, key, "a string", value)

    def as_bool(self, payload: str, key: str, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        raise self.wrong(payload, key, "a boolean", value)

    def as_int64(self, payload: str, key: str, value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            if _INT64_MIN <= value <= _INT64_MAX:
                return value
            raise self.error(payload=payload, problem=f"field '{key}' is out of int64 range")
        raise self.wrong(payload, key, "an integer", value)

    def as_uint64(self, payload: str, key: str, value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            if 0 <= value <= _UINT64_MAX:
                return value
            raise self.error(payload=payload, problem=f"field '{key}' is out of uint64 range")
        raise self.wrong(payload, key, "an unsigned integer", value)

    def as_int64_list(self, payload: str, key: str, value: Any) -> list[int]:
        if not isinstance(value, list):
            raise self.wrong(payload, key, "a list of integers", value)
        for index, item in enumerate(value):
            if type(item) is not int:
                raise self.wrong(payload, f"{key}[{index}]", "an integer", item)
            if not _INT64_MIN <= item <= _INT64_MAX:
                raise self.error(
                    payload=payload, problem=f"field '{key}[{index}]' is out of int64 range"
                )
        return value

    def as_bytes(self, payload: str, key: str, value: Any) -> bytes:
        if isinstance(value, bytes):
            return value
        if isinstance(value, str):  # msgpack str where Go decodes into []byte
            return value.encode()
        raise self.wrong(payload, key, "bytes", value)

    def as_base64(self, payload: str, key: str, value: Any) -> bytes:
        if not isinstance(value, str):
            raise self.wrong(payload, key, "a base64 string", value)
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error:
            raise self.error(
                payload=payload, problem=f"field '{key}' is not valid base64"
            ) from None

    def json_object(self, payload: str, data: bytes | str) -> Mapping[str, Any]:
        try:
            obj = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise self.error(payload=payload, problem=f"not valid JSON: {exc}") from None
        except RecursionError:
            raise self.error(payload=payload, problem="not valid JSON: nested too deeply") from None
        if not isinstance(obj, dict):
            raise self.error(
                payload=payload, problem=f"expected a JSON object, got {_describe(obj)}"
            )
        return obj

    def msgpack_object(self, payload: str, data: bytes) -> Mapping[str, Any]:
        if data and data[0] not in _MSGPACK_MAP_OR_NIL:
            # Go decodes these payloads into structs with vmihailenco/msgpack; a body that does
            # not start with a map fails there with this exact text, which reaches the client
            # inside "failed to decode MessagePack: ...", so pyairport words it the same.
            raise self.error(
                payload=payload, problem=f"msgpack: unexpected code={data[0]:x} decoding map length"
            )
        try:
            obj = msgpack.unpackb(data, raw=False, strict_map_key=False)
        # TypeError: a map key msgpack cannot hash (e.g. a list); ValueError covers truncation.
        except (
            ValueError,
            TypeError,
            msgpack.ExtraData,
            msgpack.FormatError,
            msgpack.StackError,
        ) as exc:
            raise self.error(payload=payload, problem=f"not valid msgpack: {exc}") from None
        if not isinstance(obj, dict):
            raise self.error(
                payload=payload, problem=f"expected a msgpack map, got {_describe(obj)}"
            )
        return {k.decode() if isinstance(k, bytes) else k: v for k, v in obj.items()}

    @staticmethod
    def to_json(obj: dict[str, Any]) -> bytes:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()

    @staticmethod
    def map_header(size: int) -> bytes:
        if size < 16:
            return bytes([0x80 | size])
        return b"\xde" + struct.pack(">H", size)

    @staticmethod
    def pack_str(value: str) -> bytes:
        packed: bytes = msgpack.packb(value)
        return packed

    @staticmethod
    def pack_bool(value: bool) -> bytes:
        return b"\xc3" if value else b"\xc2"

    @staticmethod
    def pack_int64(value: int) -> bytes:
        return b"\xd3" + struct.pack(">q", value)

    @staticmethod
    def pack_uint64(value: int) -> bytes:
        return b"\xcf" + struct.pack(">Q", value)

    @staticmethod
    def pack_bin(value: bytes) -> bytes:
        packed: bytes = msgpack.packb(value, use_bin_type=True)
        return packed
