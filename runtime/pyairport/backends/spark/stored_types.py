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
| an extension type (arrow.uuid, …)      | its storage type, as above (bool8: BOOLEAN)      |
| an extension pyarrow does not know     | its storage type (geoarrow.wkb: BINARY)          |

Which columns are stored so is the table property `pyairport.served_types`: a JSON object of
column name → the served field as an Arrow IPC schema (base64), kept by CREATE TABLE, ADD,
RENAME and DROP COLUMN. A nested field of such a type is refused (ddl.spark_type).
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
    return None


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
    return stored_type(field.type) is not None or _EXTENSION_NAME in (field.metadata or {})


def for_schema(schema: pa.Schema) -> dict[str, str]:
    """The served_types entries of a table created with schema."""
    return {f.name: encode(f) for f in schema if recorded(f)}


def served(stored: pa.Field, types: Mapping[str, str]) -> pa.Field:
    """A stored column as served: the type it came as, where the table recorded one."""
    text = types.get(stored.name)
    if text is None:
        return stored
    try:
        field = decode(text)
    except (ValueError, OSError, pa.ArrowInvalid):
        return stored
    return pa.field(stored.name, field.type, stored.nullable, field.metadata)
