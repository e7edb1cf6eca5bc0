"""DoAction column_statistics (protocol §2.9): one column's statistics for DuckDB's optimizer,
answered as an Arrow IPC stream of one row.

DuckDB plans by what it is told: a bound that does not hold for some row makes it drop that
row (a filter pruned, a join emptied). So what a table leaves unknown is sent as a bound that
holds for any data (deviation statistics_unknown_is_safe), min and max come in the column's
own type (statistics_typed_as_column), and a table says it has statistics only when DuckDB
can read them for each of its column types (statistics_only_where_duckdb_reads_them).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import pyarrow as pa

from airport_contracts import (
    AirportError,
    ColumnStats,
    Context,
    NotFound,
    StatisticsColumnNotFound,
    StatisticsColumnRequired,
    StatisticsDescriptorInvalid,
    StatisticsDescriptorNotPath,
    StatisticsDescriptorRequired,
    StatisticsFailed,
    StatisticsSchemaLookupFailed,
    StatisticsSchemaNotFound,
    StatisticsTable,
    StatisticsTableLookupFailed,
    StatisticsTableNotFound,
    StatisticsTypeRequired,
    StatisticsUnsupported,
    Table,
    flight_pb2,
    implements,
)

from ..wire.go_text import go_quote
from .payloads import ipc_stream_bytes
from .tables import LookupErrors, Tables

CAN_PRODUCE_STATISTICS = b"can_produce_statistics"
"""The FlightInfo schema metadata key that tells DuckDB to ask for statistics."""

# Bounds that hold for any value (DuckDB keeps the first 8 bytes of a string bound): the
# largest code point twice is the largest 8-byte prefix valid UTF-8 can start with.
_WIDEST = {"string": ("", "\U0010ffff" * 2), "binary": (b"", b"\xff" * 8)}


def _string_kind(type_: pa.DataType) -> str | None:
    if (
        pa.types.is_string(type_)
        or pa.types.is_large_string(type_)
        or pa.types.is_string_view(type_)
    ):
        return "string"
    if (
        pa.types.is_binary(type_)
        or pa.types.is_large_binary(type_)
        or pa.types.is_binary_view(type_)
    ):
        return "binary"
    return None


_EXTENSION_NAME = b"ARROW:extension:name"


def _readable_by_duckdb(field: pa.Field) -> bool:
    """Whether DuckDB's reader of statistics (the extension's airport_flight_statistics.cpp)
    takes a column of this Arrow field: the numbers, times, decimals, booleans and strings it
    keeps bounds for, and the nested types it reads as unknown. It throws for the others
    (INTERVAL, ENUM, BIT, extension types it maps to types of its own: DuckDB 1.5 reads a
    geoarrow.wkb column, which pyarrow sees as plain binary, as GEOMETRY), failing the
    query."""
    type_ = field.type
    if isinstance(type_, pa.BaseExtensionType) or _EXTENSION_NAME in (field.metadata or {}):
        return False
    t = pa.types
    if (
        t.is_integer(type_)
        or t.is_floating(type_)
        or t.is_boolean(type_)
        or t.is_date(type_)
        or t.is_time(type_)
        or t.is_timestamp(type_)
        or t.is_decimal32(type_)
        or t.is_decimal64(type_)
        or t.is_decimal128(type_)
        or _string_kind(type_) is not None
    ):
        return not t.is_float16(type_)
    return bool(
        t.is_list(type_)
        or t.is_large_list(type_)
        or t.is_fixed_size_list(type_)
        or t.is_struct(type_)
        or t.is_map(type_)
    )


def produces_statistics(table: Table, served: pa.Schema) -> bool:
    """Whether the table's FlightInfo, whose schema is served, may say can_produce_statistics.
    A dictionary column (wire/dictionaries.py) is not readable: the extension takes its
    type for its indices' and fails the query on the bounds of its strings."""
    return implements(table, "StatisticsTable") and all(
        _readable_by_duckdb(field) for field in served
    )


def with_statistics_flag(schema: pa.Schema) -> pa.Schema:
    return schema.with_metadata({**(schema.metadata or {}), CAN_PRODUCE_STATISTICS: b"true"})


def _value(value: Any, type_: pa.DataType) -> pa.Array:
    """A bound as a one-value array of the column's type (a pyarrow scalar keeps its exact
    value, nanoseconds included; a cast that would change it fails)."""
    if isinstance(value, pa.Scalar):
        array = pa.repeat(value, 1)
        return array if array.type == type_ else array.cast(type_)
    return pa.array([value], type_)


def answer(field: pa.Field, stats: ColumnStats) -> bytes:
    """The one-row IPC stream DuckDB reads: has_not_null, has_null, distinct_count, min,
    max (the column's type), max_string_length (only when known: DuckDB takes its absence as
    unknown, and a null would fail the query) and contains_unicode.

    DuckDB 1.4.4 asks for each column of a query two or three times, keeping no answer, and
    building one costs ~0.07 ms (a string column's; a kept one ~1 µs): equal statistics of
    the same field get the answer already built. Values that compare equal give the same
    answer in the field's type (1 and 1.0, Decimal("1.0") and Decimal("1.00"); -0.0 and 0.0
    are the same bound to DuckDB); a value that cannot be a key (a custom table's) is answered
    afresh each time."""
    try:
        hash(stats)
    except TypeError:
        return _answer(field, stats)
    return _remembered_answer(field, stats)


@lru_cache(maxsize=4096)
def _remembered_answer(field: pa.Field, stats: ColumnStats) -> bytes:
    return _answer(field, stats)


def _answer(field: pa.Field, stats: ColumnStats) -> bytes:
    kind = _string_kind(field.type)
    low, high = stats.min, stats.max
    if kind is not None:
        widest_low, widest_high = _WIDEST[kind]
        low = widest_low if low is None else low
        high = widest_high if high is None else high
    columns: dict[str, pa.Array] = {
        "has_not_null": pa.array([True if stats.has_not_null is None else stats.has_not_null]),
        "has_null": pa.array([True if stats.has_null is None else stats.has_null]),
        "distinct_count": pa.array([stats.distinct_count or 0], pa.uint64()),
        "min": pa.nulls(1, field.type) if low is None else _value(low, field.type),
        "max": pa.nulls(1, field.type) if high is None else _value(high, field.type),
    }
    if stats.max_string_length is not None:
        columns["max_string_length"] = pa.array([stats.max_string_length], pa.uint64())
    unicode = True if stats.contains_unicode is None else stats.contains_unicode
    columns["contains_unicode"] = pa.array([unicode])
    batch = pa.RecordBatch.from_pydict(columns)
    return ipc_stream_bytes(batch.schema, [batch])


STATISTICS_LOOKUP = LookupErrors(
    schema_failed=StatisticsSchemaLookupFailed,
    schema_missing=lambda schema: StatisticsSchemaNotFound(schema=go_quote(schema)),
    table_failed=StatisticsTableLookupFailed,
    table_missing=lambda schema, table: StatisticsTableNotFound(table=go_quote(table)),
)
"""column_statistics' lookup errors (Go quotes the names)."""


class Statistics:
    """column_statistics over one catalog."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    def column_statistics(self, ctx: Context, request: Any) -> bytes:
        if not request.column_name:
            raise StatisticsColumnRequired()
        if not request.type:
            raise StatisticsTypeRequired()
        if not request.flight_descriptor:
            raise StatisticsDescriptorRequired()
        descriptor = flight_pb2.FlightDescriptor()
        try:
            descriptor.ParseFromString(request.flight_descriptor)
        except Exception as exc:
            raise StatisticsDescriptorInvalid(error=exc) from None
        if descriptor.type != flight_pb2.FlightDescriptor.PATH or len(descriptor.path) < 2:
            raise StatisticsDescriptorNotPath()
        table = self._table(ctx, descriptor.path[0], descriptor.path[1])
        if not implements(table, "StatisticsTable"):
            raise StatisticsUnsupported()
        described: StatisticsTable = table  # type: ignore[assignment]
        # By name, not by the served order: DuckDB asks for every column of a query twice, so a
        # lookup costing the table's width makes a wide table's SELECT * quadratic.
        schema = table.arrow_schema(None)
        quoted = go_quote(request.column_name)
        index = schema.get_field_index(request.column_name)
        if index < 0:
            raise StatisticsColumnNotFound(column=quoted)
        try:
            stats = described.column_statistics(ctx, request.column_name, request.type)
        except NotFound:
            raise StatisticsColumnNotFound(column=quoted) from None
        except AirportError:
            raise
        except Exception as exc:
            raise StatisticsFailed(error=exc) from exc
        return answer(schema.field(index), stats)

    def _table(self, ctx: Context, schema_name: str, table_name: str) -> Table:
        return self.tables.table(ctx, schema_name, table_name, STATISTICS_LOOKUP)
