"""The Arrow types a Delta column cannot hold, stored as one that holds the same values, and
given back as they came: what DuckDB sends (unsigned integers, TIME, INTERVAL, TIMESTAMP_NS,
its lossless extension types: UUID, BOOLEAN as bool8, HUGEINT, BIGNUM, BIT, TIMETZ, …) is
served as DuckDB sent it, and a Spark user reads a column of a Spark type:

| served (Arrow)                         | stored (Delta)                                   |
|----------------------------------------|--------------------------------------------------|
| uint8, uint16, uint32 / uint64         | SMALLINT, INT, BIGINT / DECIMAL(20, 0)            |
| timestamp[ns] (any zone)               | BIGINT: nanoseconds since the epoch              |
| timestamp[s], timestamp[ms]            | TIMESTAMP (microseconds; the unit given back)    |
| time32, time64                         | BIGINT: the time in the type's unit              |
| month_day_nano interval                | STRUCT<months INT, days INT, nanoseconds BIGINT> |
| float16                                | FLOAT                                            |
| fixed-size binary                      | BINARY                                           |
| fixed-size list (DuckDB's ARRAY)       | ARRAY (of its own size only where it is a column) |
| an extension type (arrow.uuid, …)      | its storage type, as above (bool8: BOOLEAN)      |
| an extension pyarrow does not know     | its storage type (geoarrow.wkb: BINARY)          |
| decimal32                              | DECIMAL (Arrow's decimal128)                     |

Which columns are stored so is the table property `pyairport.served_types`: a JSON object of
column name → the served field as an Arrow IPC schema (base64), kept by CREATE TABLE, ADD,
RENAME and DROP COLUMN. A nested field of such a type is refused (ddl.spark_type).

Every other column is served as Delta stores it, but for one rule (served_type): a DECIMAL of
at most 18 digits, which Delta reads as Arrow's 16-byte decimal128, is served as the 8-byte
decimal64 that holds its values, whatever wrote the table. That is DuckDB's own DECIMAL(p ≤ 18)
(and Parquet's): DuckDB reads a decimal64 column several times as fast as a decimal128 one,
which it narrows value by value, and half the bytes cross the wire (docs/benchmarks.md). Such
a column is not `retyped`: its values, their order and its statistics are Delta's, so filters
are pushed down on it in its stored type (planning.pushable).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping

import pyarrow as pa

from ..arrow_convert import INTERVAL_PARTS

SERVED_TYPES = "pyairport.served_types"


def stored_type(served: pa.DataType) -> pa.DataType | None:
    """The type a Delta column stores served as, or None when Delta holds served itself."""
    if isinstance(served, pa.BaseExtensionType):
        if served.extension_name == "arrow.bool8":
            return pa.bool_()
        storage = served.storage_type
        return stored_type(storage) or storage
    if pa.types.is_unsigned_integer(served):
        wider = {8: pa.int16(), 16: pa.int32(), 32: pa.int64()}
        return wider.get(served.bit_width, pa.decimal128(20, 0))
    if pa.types.is_timestamp(served):
        if served.unit == "ns":
            return pa.int64()
        return pa.timestamp("us", served.tz) if served.unit in ("s", "ms") else None
    if pa.types.is_time(served):
        return pa.int64()
    if pa.types.is_interval(served):
        return INTERVAL_PARTS
    if pa.types.is_float16(served):
        return pa.float32()
    if pa.types.is_fixed_size_binary(served):
        return pa.binary()
    if pa.types.is_fixed_size_list(served):
        return pa.list_(served.value_field)
    if pa.types.is_decimal32(served) or pa.types.is_decimal64(served):
        return pa.decimal128(served.precision, served.scale)
    return None


NARROW_DECIMAL_DIGITS = 18
"""The most digits a decimal64 holds: Delta's DECIMALs up to this many are served as one."""


def served_type(stored: pa.DataType) -> pa.DataType:
    """The type a column Delta stores as stored is served as where the table recorded none
    (the module's doc): a DECIMAL of at most 18 digits as decimal64, any other as stored."""
    if pa.types.is_decimal128(stored) and stored.precision <= NARROW_DECIMAL_DIGITS:
        return pa.decimal64(stored.precision, stored.scale)
    return stored


def kept_as_another(served: pa.DataType) -> bool:
    """Whether a column served as this type is stored as another that is not served back
    as it by default: its type must be recorded (decimal64 needs no record: served_type
    gives it back; decimal32 does)."""
    stored = stored_type(served)
    return stored is not None and not served_type(stored).equals(served)


def stored_field(served: pa.Field) -> pa.Field:
    stored = stored_type(served.type)
    return served if stored is None else pa.field(served.name, stored, served.nullable)


def encode(field: pa.Field) -> str:
    return base64.b64encode(pa.schema([field]).serialize().to_pybytes()).decode()


def decode(text: str) -> pa.Field:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text))).field(0)


def served_types(properties: Mapping[str, str]) -> dict[str, str]:
    """The table's column name → encoded served field."""
    text = properties.get(SERVED_TYPES)
    if not text:
        return {}
    try:
        found = json.loads(text)
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def property_value(types: Mapping[str, str]) -> str:
    return json.dumps(dict(sorted(types.items())), separators=(",", ":"))


_EXTENSION_NAME = b"ARROW:extension:name"


def recorded(field: pa.Field) -> bool:
    """Whether a column's served field must be kept in the table property: its type is
    stored as another, or it is an extension type pyarrow does not know (DuckDB's
    geoarrow.wkb GEOMETRY, its CRS in the extension's metadata), which Delta stores as its
    storage type and would otherwise give back without its name."""
    return kept_as_another(field.type) or _EXTENSION_NAME in (field.metadata or {})


def for_schema(schema: pa.Schema) -> dict[str, str]:
    """The served_types entries of a table created with schema."""
    return {f.name: encode(f) for f in schema if recorded(f)}


def served(stored: pa.Field, types: Mapping[str, str]) -> pa.Field:
    """A stored column as served: the type it came as, where the table recorded one, else
    served_type's."""
    text = types.get(stored.name)
    if text is None:
        return by_default(stored)
    try:
        field = decode(text)
    except (ValueError, OSError, pa.ArrowInvalid):
        return by_default(stored)
    return pa.field(stored.name, field.type, stored.nullable, field.metadata)


def by_default(stored: pa.Field) -> pa.Field:
    """A stored column as served where the table recorded no type for it."""
    served_as = served_type(stored.type)
    return stored if served_as.equals(stored.type) else stored.with_type(served_as)
