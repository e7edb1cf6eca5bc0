"""column_statistics on the wire (protocol §2.9): every error row, the answer DuckDB reads
(its columns and types, what unknown looks like), can_produce_statistics only where DuckDB
reads every column type, and a memory table's statistics following its rows."""

from __future__ import annotations

import dataclasses
import decimal
from collections.abc import Callable
from datetime import date, datetime
from typing import Any

import msgpack
import pyarrow as pa
import pytest

from airport_contracts import ColumnStats, Context, flight_pb2
from airport_contracts.contract import ERROR_TABLE
from pyairport.backends.memory import memory_table
from pyairport.catalog import CatalogSchema, MutableCatalog
from pyairport.client import RemoteError
from pyairport.dispatch.statistics import answer

from .conftest import Running, assert_error_row, serving

TYPED = pa.schema(
    [
        ("i8", pa.int8()),
        ("u64", pa.uint64()),
        ("f", pa.float64()),
        ("d", pa.decimal128(10, 2)),
        ("day", pa.date32()),
        ("ns", pa.timestamp("ns")),
        ("tz", pa.timestamp("us", tz="UTC")),
        ("s", pa.string()),
        ("b", pa.binary()),
        ("ok", pa.bool_()),
        ("l", pa.list_(pa.int64())),
    ]
)
TYPED_ROWS = pa.table(
    {
        "i8": pa.array([-3, 7, None], pa.int8()),
        "u64": pa.array([2**64 - 1, 0, 5], pa.uint64()),
        "f": pa.array([1.5, float("nan"), -2.0]),
        "d": pa.array(
            [decimal.Decimal("1.25"), decimal.Decimal("-9.99"), None], pa.decimal128(10, 2)
        ),
        "day": pa.array([date(2024, 1, 2), date(1999, 12, 31), None], pa.date32()),
        "ns": pa.array([1_700_000_000_000_000_001, 5, None], pa.timestamp("ns")),
        "tz": pa.array([datetime(2024, 1, 1), None, None], pa.timestamp("us", tz="UTC")),
        "s": pa.array(["b", "é", "a"]),
        "b": pa.array([b"\x00", b"zz", None]),
        "ok": pa.array([True, None, True]),
        "l": pa.array([[1], None, [2, 3]], pa.list_(pa.int64())),
    }
)


def _descriptor(schema: str, table: str) -> bytes:
    return flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=[schema, table]
    ).SerializeToString()


def _body(schema: str = "s", table: str = "t", column: str = "i8", type_: str = "TINYINT") -> bytes:
    """A column_statistics body as DuckDB's extension sends it."""
    request = {
        "flight_descriptor": _descriptor(schema, table),
        "column_name": column,
        "type": type_,
    }
    return bytes(msgpack.packb(request))


def _stats(running: Running, column: str, type_: str = "X", table: str = "t") -> dict[str, Any]:
    (body,) = running.client.action("column_statistics", _body("s", table, column, type_))
    answer = pa.ipc.open_stream(body).read_all()
    assert answer.num_rows == 1
    return {
        "schema": answer.schema,
        **{name: _value(answer.column(name)[0]) for name in answer.schema.names},
    }


def _value(scalar: pa.Scalar) -> Any:
    """A scalar as Python, a nanosecond timestamp as its scalar (.value): without pandas
    (make test-python) as_py() refuses to round it to datetime's microseconds."""
    if pa.types.is_timestamp(scalar.type) and scalar.type.unit == "ns":
        return scalar
    return scalar.as_py()


def _error(call: Callable[[], object]) -> RemoteError:
    with pytest.raises(RemoteError) as err:
        call()
    return err.value


class _Described:
    """A StatisticsTable that knows nothing of its columns (every field None), or raises."""

    def __init__(self, raises: BaseException | None = None) -> None:
        self.inner = memory_table("t", TYPED)
        self.raises = raises

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def column_statistics(self, ctx: Context, column_name: str, column_type: str) -> ColumnStats:
        if self.raises is not None:
            raise self.raises
        return ColumnStats()


class _Plain:
    """A table that is no StatisticsTable."""

    def __init__(self) -> None:
        self.inner = memory_table("t", TYPED)

    def name(self) -> str:
        return "t"

    def comment(self) -> str:
        return ""

    def arrow_schema(self, columns: Any = None) -> pa.Schema:
        return self.inner.arrow_schema(columns)

    def scan(self, ctx: Context, opts: Any = None) -> pa.RecordBatchReader:
        return self.inner.scan(ctx, opts)


class _BrokenSchema(CatalogSchema):
    def table(self, ctx: Context, name: str) -> Any:
        raise OSError("table store offline")


class _BrokenCatalog(MutableCatalog):
    def schema(self, ctx: Context, name: str) -> Any:
        raise OSError("metastore offline")


def _serving_one(table: Any, run: Callable[[Running], RemoteError]) -> RemoteError:
    with serving(MutableCatalog("", [CatalogSchema("s", tables=[table])])) as running:
        return run(running)


def _action(body: bytes) -> Callable[[Running], RemoteError]:
    return lambda running: _error(lambda: running.client.action("column_statistics", body))


def _with(catalog: MutableCatalog, body: bytes) -> RemoteError:
    with serving(catalog) as running:
        return _action(body)(running)


TRIGGERS: dict[str, tuple[Callable[[], RemoteError], dict[str, Any]]] = {
    "statistics_payload_invalid": (
        lambda: _serving_one(_Described(), _action(b"\xc1")),
        {"error": None},
    ),
    "statistics_column_required": (
        lambda: _serving_one(_Described(), _action(_body(column=""))),
        {},
    ),
    "statistics_type_required": (
        lambda: _serving_one(_Described(), _action(_body(type_=""))),
        {},
    ),
    "statistics_descriptor_required": (
        lambda: _serving_one(
            _Described(), _action(msgpack.packb({"column_name": "i8", "type": "TINYINT"}))
        ),
        {},
    ),
    "statistics_descriptor_invalid": (
        lambda: _serving_one(
            _Described(),
            _action(
                msgpack.packb(
                    {"flight_descriptor": b"\xff\xff", "column_name": "i8", "type": "TINYINT"}
                )
            ),
        ),
        {"error": None},
    ),
    "statistics_descriptor_not_path": (
        lambda: _serving_one(
            _Described(),
            _action(
                msgpack.packb(
                    {
                        "flight_descriptor": flight_pb2.FlightDescriptor(
                            type=flight_pb2.FlightDescriptor.CMD, cmd=b"x"
                        ).SerializeToString(),
                        "column_name": "i8",
                        "type": "TINYINT",
                    }
                )
            ),
        ),
        {},
    ),
    "statistics_schema_lookup_failed": (
        lambda: _with(_BrokenCatalog("", [CatalogSchema("s", tables=[])]), _body()),
        {"error": "metastore offline"},
    ),
    "statistics_schema_not_found": (
        lambda: _serving_one(_Described(), _action(_body(schema="nope"))),
        {"schema": '"nope"'},
    ),
    "statistics_table_lookup_failed": (
        lambda: _with(MutableCatalog("", [_BrokenSchema("s", tables=[])]), _body()),
        {"error": "table store offline"},
    ),
    "statistics_table_not_found": (
        lambda: _serving_one(_Described(), _action(_body(table="nope"))),
        {"table": '"nope"'},
    ),
    "statistics_unsupported": (lambda: _serving_one(_Plain(), _action(_body())), {}),
    "statistics_column_not_found": (
        lambda: _serving_one(_Described(), _action(_body(column="nope"))),
        {"column": '"nope"'},
    ),
    "statistics_failed": (
        lambda: _serving_one(_Described(OSError("stats store offline")), _action(_body())),
        {"error": "stats store offline"},
    ),
}

STATISTICS_ROWS = {r.id for r in ERROR_TABLE if r.id.startswith("statistics_")}


def test_every_statistics_row_is_triggered() -> None:
    assert set(TRIGGERS) == STATISTICS_ROWS


@pytest.mark.parametrize("row_id", sorted(TRIGGERS))
def test_statistics_error_on_the_wire(row_id: str) -> None:
    trigger, params = TRIGGERS[row_id]
    error = trigger()
    assert_error_row(row_id, params, error.code, error.message)


def test_a_memory_tables_statistics_are_its_rows_in_the_columns_own_types() -> None:
    with serving(
        MutableCatalog("", [CatalogSchema("s", tables=[memory_table("t", TYPED, rows=TYPED_ROWS)])])
    ) as running:
        fields = {name: _stats(running, name) for name in TYPED.names}
    for name, stats in fields.items():
        schema = stats.pop("schema")
        assert schema.field("min").type == TYPED.field(name).type, name
        assert schema.field("max").type == TYPED.field(name).type, name
        assert stats["has_not_null"] is True
    assert (fields["i8"]["min"], fields["i8"]["max"], fields["i8"]["has_null"]) == (-3, 7, True)
    assert (fields["u64"]["min"], fields["u64"]["max"]) == (0, 2**64 - 1)
    # NaN is above every number to DuckDB, and Arrow's bounds skip it: no float bounds
    assert (fields["f"]["min"], fields["f"]["max"]) == (None, None)
    assert fields["d"]["min"] == decimal.Decimal("-9.99")
    assert (fields["day"]["min"], fields["day"]["max"]) == (date(1999, 12, 31), date(2024, 1, 2))
    assert fields["ns"]["max"].value == 1_700_000_000_000_000_001  # to the nanosecond
    assert fields["s"] == {
        "has_not_null": True,
        "has_null": False,
        "distinct_count": 3,
        "min": "a",
        "max": "é",
        "max_string_length": 2,
        "contains_unicode": True,
    }
    assert (fields["b"]["min"], fields["b"]["max"], fields["b"]["max_string_length"]) == (
        b"\x00",
        b"zz",
        2,
    )
    # a list has no order DuckDB keeps bounds in: unknown
    assert (fields["l"]["min"], fields["l"]["max"], fields["l"]["distinct_count"]) == (
        None,
        None,
        0,
    )


def test_what_a_table_does_not_know_reaches_duckdb_as_bounds_that_hold() -> None:
    """ColumnStats() for every column (deviation statistics_unknown_is_safe): no numeric
    bound, the widest string and byte bounds, nulls and non-nulls possible, distinct count
    unknown (0), unicode possible, max_string_length left out."""
    with serving(MutableCatalog("", [CatalogSchema("s", tables=[_Described()])])) as running:
        number = _stats(running, "i8", "TINYINT")
        text = _stats(running, "s", "VARCHAR")
        data = _stats(running, "b", "BLOB")
    for stats in (number, text, data):
        assert "max_string_length" not in stats["schema"].names
        assert (stats["has_null"], stats["has_not_null"], stats["distinct_count"]) == (
            True,
            True,
            0,
        )
        assert stats["contains_unicode"] is True
    assert (number["min"], number["max"]) == (None, None)
    assert (text["min"], text["max"]) == ("", "\U0010ffff" * 2)
    assert (data["min"], data["max"]) == (b"", b"\xff" * 8)


def test_statistics_follow_the_rows_of_a_memory_table() -> None:
    table = memory_table("t", pa.schema([("id", pa.int64())]))
    with serving(MutableCatalog("", [CatalogSchema("s", tables=[table])])) as running:
        empty = _stats(running, "id")
        assert (empty["has_not_null"], empty["min"], empty["max"]) == (False, None, None)
        running.client.insert("s", "t", pa.table({"id": pa.array([5, 1, 9], pa.int64())}))
        assert (_stats(running, "id")["min"], _stats(running, "id")["max"]) == (1, 9)
        ids = {r["id"]: r["rowid"] for r in table.to_table().to_pylist()}
        running.client.delete("s", "t", [ids[1], ids[9]])
        after = _stats(running, "id")
        assert (after["min"], after["max"], after["distinct_count"]) == (5, 5, 1)


def test_an_answer_is_built_once_for_equal_statistics_of_the_same_field() -> None:
    """DuckDB asks for a column's statistics several times a query: the answer is kept, but
    only for the same field (another type is another answer) and only where the values can
    be a key (a list bound from a custom table is answered afresh, and rightly)."""
    known = ColumnStats(has_not_null=True, has_null=False, min="a", max="z", distinct_count=3)
    text = pa.field("s", pa.string())
    first = answer(text, known)
    assert answer(text, dataclasses.replace(known)) is first
    large = answer(pa.field("s", pa.large_string()), known)
    assert pa.ipc.open_stream(large).schema.field("min").type == pa.large_string()
    assert pa.ipc.open_stream(first).schema.field("min").type == pa.string()
    listed = ColumnStats(min=[1], max=[2, 3])
    field = pa.field("l", pa.list_(pa.int64()))
    built = pa.ipc.open_stream(answer(field, listed)).read_all()
    assert (built["min"].to_pylist(), built["max"].to_pylist()) == ([[1]], [[2, 3]])


def _flag(running: Running, table: str) -> bool:
    (body,) = running.client.action(
        "flight_info",
        msgpack.packb({"descriptor": _descriptor("s", table), "at_unit": "", "at_value": ""}),
    )
    info = flight_pb2.FlightInfo()
    info.ParseFromString(body)
    schema = pa.ipc.read_schema(pa.py_buffer(info.schema))
    return (schema.metadata or {}).get(b"can_produce_statistics") == b"true"


def test_can_produce_statistics_only_where_duckdb_reads_every_column_type() -> None:
    """DuckDB fails every query over a column whose statistics it cannot read (deviation
    statistics_only_where_duckdb_reads_them): a table with an INTERVAL or an extension-typed
    column does not say it has statistics; nor does a table that is no StatisticsTable."""
    interval = memory_table("with_interval", pa.schema([("span", pa.month_day_nano_interval())]))
    uuid = memory_table("with_uuid", pa.schema([("u", pa.uuid())]))
    catalog = MutableCatalog(
        "", [CatalogSchema("s", tables=[memory_table("t", TYPED), interval, uuid])]
    )
    with serving(catalog) as running:
        assert _flag(running, "t") is True
        assert _flag(running, "with_interval") is False
        assert _flag(running, "with_uuid") is False
    with serving(MutableCatalog("", [CatalogSchema("s", tables=[_Plain()])])) as running:
        assert _flag(running, "t") is False
