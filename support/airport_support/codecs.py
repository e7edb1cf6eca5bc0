"""The payload codec: one implementation, driven by the field table each generated payload
class carries (`FIELDS`), so a payload of the contract is a dataclass and its table, nothing
more.

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
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import msgpack

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UINT64_MAX = 2**64 - 1

# The first byte of a msgpack array (fixarray, array16, array32).
_MSGPACK_ARRAY = frozenset((*range(0x90, 0xA0), 0xDC, 0xDD))
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

    def as_float64(self, payload: str, key: str, value: Any) -> float:
        if isinstance(value, float | int) and not isinstance(value, bool):
            return float(value)
        raise self.wrong(payload, key, "a number", value)

    def as_str_list(self, payload: str, key: str, value: Any) -> list[str]:
        if not isinstance(value, list):
            raise self.wrong(payload, key, "a list of strings", value)
        return [self.as_str(payload, f"{key}[{index}]", item) for index, item in enumerate(value)]

    def as_str_map(self, payload: str, key: str, value: Any) -> dict[str, str]:
        if not isinstance(value, dict):
            raise self.wrong(payload, key, "a map of strings", value)
        return {
            self.as_str(payload, f"{key} key", k): self.as_str(payload, f"{key}[{k!r}]", v)
            for k, v in value.items()
        }

    def as_uint64_list(self, payload: str, key: str, value: Any) -> list[int]:
        if not isinstance(value, list):
            raise self.wrong(payload, key, "a list of unsigned integers", value)
        return [
            self.as_uint64(payload, f"{key}[{index}]", item) for index, item in enumerate(value)
        ]

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

    def msgpack_object(
        self, payload: str, data: bytes, field_count: int | None = None
    ) -> Mapping[str, Any]:
        """data as a msgpack map. Go decodes these payloads into structs with
        vmihailenco/msgpack; a body that is not a map fails there with the texts below, which
        reach the client (inside "failed to decode MessagePack: ..."), so pyairport words them
        the same. field_count: the struct's, for an array body (Go reads an array of exactly
        that many items as the fields in order; pyairport refuses it)."""
        if data and data[0] in _MSGPACK_ARRAY and field_count is not None:
            raise self.error(
                payload=payload,
                problem="msgpack: number of fields in array-encoded struct has changed",
            )
        if data and data[0] not in _MSGPACK_MAP_OR_NIL:
            raise self.error(
                payload=payload, problem=f"msgpack: unexpected code={data[0]:x} decoding map length"
            )
        try:
            # raw: a Go []byte travels as msgpack str as often as bin (DuckDB sends an Arrow
            # schema so); the field's kind decides what the bytes are (as_str decodes UTF-8).
            obj = msgpack.unpackb(data, raw=True, strict_map_key=False)
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
        return {
            k.decode(errors="replace") if isinstance(k, bytes) else k: v for k, v in obj.items()
        }

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
    def pack_float64(value: float) -> bytes:
        return b"\xcb" + struct.pack(">d", value)

    @staticmethod
    def pack_bin(value: bytes) -> bytes:
        packed: bytes = msgpack.packb(value, use_bin_type=True)
        return packed


@dataclass(frozen=True)
class FieldSpec:
    """One row of a payload's field table: how a field travels.

    kind is the wire form the loader mapped the contract's type to (contracts.yaml's type and
    json_bytes give it): str, bool, int64, uint64, float64, bytes, base64 (bytes as a base64 JSON
    string), list[int64], list[uint64], list[str], map[str, str], or payload:<Name> (a nested
    payload).
    """

    name: str
    wire: str
    kind: str
    required: bool = False
    optional: bool = False  # None is a value (nil on the wire)
    default: Any = None
    omitempty: bool = False
    const: str | None = None


_DECODERS: dict[str, Callable[[PayloadCodecs, str, str, Any], Any]] = {
    "str": PayloadCodecs.as_str,
    "bool": PayloadCodecs.as_bool,
    "int64": PayloadCodecs.as_int64,
    "uint64": PayloadCodecs.as_uint64,
    "float64": PayloadCodecs.as_float64,
    "bytes": PayloadCodecs.as_bytes,
    "base64": PayloadCodecs.as_base64,
    "list[int64]": PayloadCodecs.as_int64_list,
    "list[uint64]": PayloadCodecs.as_uint64_list,
    "list[str]": PayloadCodecs.as_str_list,
    "map[str, str]": PayloadCodecs.as_str_map,
}
_PACKERS: dict[str, Callable[[Any], bytes]] = {
    "str": PayloadCodecs.pack_str,
    "bool": PayloadCodecs.pack_bool,
    "int64": PayloadCodecs.pack_int64,
    "uint64": PayloadCodecs.pack_uint64,
    "float64": PayloadCodecs.pack_float64,
    "bytes": PayloadCodecs.pack_bin,
}
KINDS = frozenset(_DECODERS)
"""The wire kinds a field may have besides payload:<Name>."""


class Payload:
    """A wire payload: subclasses are frozen dataclasses with a FIELDS table (generated).

    Decoding validates: a missing required field, a field of the wrong type, a wrong constant
    or malformed JSON/msgpack raises the payload's `invalid` error (the contract's
    InvalidPayload) naming the payload and the field. Unknown keys are ignored, as Go's
    decoders do. Encoding matches the Go server's bytes, omitempty fields left out when empty.
    """

    NAME: ClassVar[str] = ""
    ENCODING: ClassVar[str] = ""  # json | msgpack
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = ()
    NESTED: ClassVar[Mapping[str, type[Payload]]] = {}
    """The payload classes payload:<Name> fields name (set by the generated module)."""
    codecs: ClassVar[PayloadCodecs]

    @classmethod
    def from_mapping(cls, obj: Mapping[str, Any]) -> Self:
        """Validate a decoded JSON or msgpack object and build the payload."""
        values: dict[str, Any] = {}
        for spec in cls.FIELDS:
            if spec.required:
                raw = cls.codecs.required(cls.NAME, obj, spec.wire)
            else:
                raw = obj.get(spec.wire)
            if raw is None and (spec.optional or not spec.required):
                values[spec.name] = None if spec.optional else spec.default
                continue
            value = cls._decode_field(spec, raw)
            if spec.const is not None and value != spec.const:
                raise cls.codecs.error(
                    payload=cls.NAME,
                    problem=f"field '{spec.wire}' must be {json.dumps(spec.const)},"
                    f" got {json.dumps(value)}",
                )
            values[spec.name] = value
        return cls(**values)

    @classmethod
    def _decode_field(cls, spec: FieldSpec, raw: Any) -> Any:
        if spec.kind.startswith("payload:"):
            nested = cls.NESTED[spec.kind.removeprefix("payload:")]
            if not isinstance(raw, Mapping):
                raise cls.codecs.wrong(cls.NAME, spec.wire, "a map", raw)
            keys = {k.decode() if isinstance(k, bytes) else k: v for k, v in raw.items()}
            return nested.from_mapping(keys)
        return _DECODERS[spec.kind](cls.codecs, cls.NAME, spec.wire, raw)

    @classmethod
    def from_json(cls, data: bytes | str) -> Self:
        """Decode and validate the JSON form."""
        return cls.from_mapping(cls.codecs.json_object(cls.NAME, data))

    @classmethod
    def from_msgpack(cls, data: bytes) -> Self:
        """Decode and validate the msgpack form."""
        return cls.from_mapping(cls.codecs.msgpack_object(cls.NAME, data, len(cls.FIELDS)))

    @classmethod
    def decode(cls, data: bytes) -> Self:
        """data in the payload's own encoding."""
        return cls.from_json(data) if cls.ENCODING == "json" else cls.from_msgpack(data)

    def encode(self) -> bytes:
        """The payload in its own encoding."""
        return self.to_json() if self.ENCODING == "json" else self.to_msgpack()

    def to_json_object(self) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for spec in self.FIELDS:
            value = getattr(self, spec.name)
            if spec.omitempty and not value:
                continue
            if value is not None and spec.kind == "base64":
                value = base64.b64encode(value).decode()
            elif value is not None and spec.kind.startswith("payload:"):
                value = value.to_json_object()
            obj[spec.wire] = value
        return obj

    def to_json(self) -> bytes:
        """The JSON form, keys in Go struct order, no spaces."""
        return PayloadCodecs.to_json(self.to_json_object())

    def to_msgpack(self) -> bytes:
        """The msgpack form with the Go server's byte layout (fixed-width integers)."""
        parts: list[bytes] = []
        for spec in self.FIELDS:
            value = getattr(self, spec.name)
            if spec.omitempty and not value:
                continue
            key = PayloadCodecs.pack_str(spec.wire)
            if value is None:
                parts.append(key + PayloadCodecs.NIL)
            elif spec.kind.startswith("payload:"):
                parts.append(key + value.to_msgpack())
            elif spec.kind in _PACKERS:
                parts.append(key + _PACKERS[spec.kind](value))
            else:  # lists: msgpack's own widths, as Go's encoder picks for slices
                packed: bytes = msgpack.packb(value, use_bin_type=True)
                parts.append(key + packed)
        return PayloadCodecs.map_header(len(parts)) + b"".join(parts)
