"""What Query.Farm's test server puts in every database it creates, rebuilt on pyairport's
public API: the schema utils (the functions airport.test calls) and static_data (two tables
it reads). The functions answer as the test server's do (its database_impl.py)."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pyairport.catalog import CatalogSchema, MutableCatalog
from pyairport.functions import (
    Parameter,
    scalar_function,
    table_function,
    table_function_in_out,
)

WIDE = pa.schema([pa.field(f"result_{i}", pa.int32()) for i in range(20)])


@scalar_function(params=[Parameter(pa.string(), "a")], returns=pa.string())
def test_uppercase(text: pa.Array) -> pa.Array:
    return pc.utf8_upper(text)


@scalar_function(params=[Parameter(pa.string(), "a", any_type=True)], returns=pa.string())
def test_any_type(value: pa.Array) -> pa.Array:
    return pc.cast(value, pa.string())


@scalar_function(
    params=[Parameter(pa.int64(), "a"), Parameter(pa.int64(), "b")], returns=pa.int64()
)
def test_add(a: pa.Array, b: pa.Array) -> pa.Array:
    return pc.add(a, b)


@table_function(
    params=[Parameter(pa.string(), "input")], schema=pa.schema([("result", pa.string())])
)
def test_echo(text: str) -> pa.RecordBatch:
    return pa.record_batch([pa.array([text], pa.string())], names=["result"])


@table_function(
    params=[Parameter(pa.string(), "input"), Parameter(pa.int32(), "count")],
    schema=pa.schema([("result", pa.string())]),
)
def test_repeat(text: str, count: int) -> Iterator[pa.RecordBatch]:
    for _ in range(count):
        yield pa.record_batch([pa.array([text], pa.string())], names=["result"])


@table_function(params=[Parameter(pa.int32(), "count")], schema=WIDE)
def test_wide(count: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(
        [{f"result_{i}": i for i in range(20)} for _ in range(count)], schema=WIDE
    )


def _echo_values(names: list[str]) -> Callable[..., pa.Schema]:
    """The schema of a row echoing the arguments, typed as the values are."""

    def schema(*values: Any) -> pa.Schema:
        return pa.schema(
            [pa.field(n, pa.array([v]).type) for n, v in zip(names, values, strict=True)]
        )

    return schema


def _echo(names: list[str]) -> Callable[..., pa.RecordBatch]:
    def rows(*values: Any) -> pa.RecordBatch:
        schema = _echo_values(names)(*values)
        return pa.record_batch(
            [pa.array([v], f.type) for v, f in zip(values, schema, strict=True)], schema=schema
        )

    return rows


test_dynamic_schema = table_function(
    name="test_dynamic_schema",
    params=[Parameter(pa.string(), "input", any_type=True)],
    schema=_echo_values(["input"]),
)(_echo(["input"]))

test_dynamic_schema_named_parameters = table_function(
    name="test_dynamic_schema_named_parameters",
    params=[
        Parameter(pa.string(), "name"),
        Parameter(pa.string(), "location", named=True),
        Parameter(pa.string(), "input", any_type=True),
        Parameter(pa.string(), "city"),
    ],
    schema=_echo_values(["name", "location", "input", "city"]),
)(_echo(["name", "location", "input", "city"]))


def _tagged(parameter: str, rows: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field("input", pa.string()), rows.field(0)])


@table_function_in_out(params=[Parameter(pa.string(), "input")], schema=_tagged)
def test_table_in_out(value: str, rows: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    schema: pa.Schema | None = None
    for batch in rows:
        schema = _tagged(value, batch.schema)
        yield pa.record_batch([pa.array([value] * batch.num_rows), batch.column(0)], schema=schema)
    if schema is not None:
        yield pa.record_batch([pa.array(["last"]), pa.array(["row"])], schema=schema)


@table_function_in_out(params=[], schema=lambda rows: pa.schema([rows.field(0)]))
def test_table_in_out_long(rows: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in rows:
        for _ in range(10):
            yield batch.select([0])


HUGE = pa.schema([("multiplier", pa.int64()), ("value", pa.int64())])


def _huge(marker: int) -> pa.RecordBatch:
    return pa.record_batch(
        [pa.array(range(5000), pa.int64()), pa.array([marker] * 5000, pa.int64())], schema=HUGE
    )


@table_function_in_out(params=[], schema=HUGE)
def test_table_in_out_huge(rows: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for _batch in rows:
        for index in range(10):
            yield _huge(index)
    for footer in (-1, -2, -3):  # big chunks as the last results
        yield _huge(footer)


@table_function_in_out(params=[Parameter(pa.string(), "input")], schema=WIDE)
def test_table_in_out_wide(value: str, rows: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in rows:
        yield pa.record_batch(
            [pa.array([i] * batch.num_rows, pa.int32()) for i in range(20)], schema=WIDE
        )


@table_function_in_out(params=[], schema=lambda rows: rows)
def test_table_in_out_echo(rows: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield from rows


UTILS = (
    test_uppercase,
    test_any_type,
    test_add,
    test_echo,
    test_repeat,
    test_wide,
    test_dynamic_schema,
    test_dynamic_schema_named_parameters,
    test_table_in_out,
    test_table_in_out_long,
    test_table_in_out_huge,
    test_table_in_out_wide,
    test_table_in_out_echo,
)

BIG_CHUNK = pa.table({"id": pa.array(range(100_000), pa.int64())})

EMPLOYEES = pa.table(
    [
        ["Emily", "Amy"],
        pa.array([30, 32], pa.int32()),
        pa.array(
            [datetime.datetime(2023, 10, 1), datetime.datetime(2024, 10, 2)], pa.timestamp("ms")
        ),
        pa.array(["{}", "[1,2,3]"], pa.json_(pa.string())),
        pa.array(
            [
                uuid.UUID("b975e4187a6d4afdb1a41f7174ce1805").bytes,
                uuid.UUID("7ef19ab7c7af4f0188c386fae862fd60").bytes,
            ],
            pa.uuid(),
        ),
        pa.array([datetime.date(2023, 10, 1), datetime.date(2024, 10, 2)], pa.date32()),
        [True, False],
        ["Ann", None],
        [1234.123, 5678.123],
        pa.array([Decimal("12345.678790"), Decimal("67890.123456")], pa.decimal128(12, 6)),
    ],
    names=[
        "name",
        "age",
        "start_date",
        "json_data",
        "id",
        "birthdate",
        "is_active",
        "nickname",
        "salary",
        "balance",
    ],
)

TableMaker = Callable[[str, str, pa.Table], Any]
"""make_table(schema, name, rows) -> a Table of the backend holding rows."""


def add_test_server_fixtures(
    catalog: MutableCatalog, schema_class: Callable[[str], CatalogSchema], make_table: TableMaker
) -> None:
    """utils and static_data, as the test server's create_database makes them."""
    utils = catalog.add_schema(schema_class("utils"))
    for function in UTILS:
        utils.add_function(function)
    static = catalog.add_schema(schema_class("static_data"))
    for name, rows in (("big_chunk", BIG_CHUNK), ("employees", EMPLOYEES)):
        static.add(make_table("static_data", name, rows))
