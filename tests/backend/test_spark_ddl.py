"""DDL on Delta (protocol §5) over the wire: what a DuckDB user's CREATE, ALTER and DROP do to
a warehouse folder, read back by plain Spark and served like any other table."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pyarrow as pa
import pytest

from airport_contracts.vocabulary import Action
from pyairport.client import AirportClient, RemoteError
from pyairport.server import AirportServer, ServerConfig
from pyairport.transactions import MemoryTransactionManager

from ..protocol.conftest import refusal

pytestmark = pytest.mark.spark

S = "sales"
ORDERS = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("item", pa.string()),
        pa.field("qty", pa.int32()),
        pa.field("detail", pa.struct([("color", pa.string())])),
    ]
)


@contextlib.contextmanager
def _serving(spark: Any, lake: Path, remote: str | None = None) -> Iterator[AirportClient]:
    from pyairport.backends.spark import SparkBackend

    backend = SparkBackend(spark, lake, remote)
    server = AirportServer(backend.catalog, MemoryTransactionManager(), ServerConfig(port=0))
    server.start()
    client = AirportClient(server.location)
    try:
        yield client
    finally:
        client.close()
        server.stop(0)
        backend.close()


@pytest.fixture
def delta(spark_backend: Any, tmp_path: Path) -> Iterator[tuple[AirportClient, Any, Path]]:
    lake = tmp_path / "lake"
    lake.mkdir()
    with _serving(spark_backend.spark, lake) as client:
        yield client, spark_backend.spark, lake


def _spark_rows(spark: Any, path: Path, columns: str = "*") -> list[dict[str, Any]]:
    rows = spark.sql(f"SELECT {columns} FROM delta.`{path}` ORDER BY id").collect()
    return [r.asDict(recursive=True) for r in rows]


@pytest.fixture(params=["classic", "connect"])
def delta_either(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[AirportClient, Any, Path]]:
    """delta's lake on embedded Spark, and on Spark reached by Spark Connect."""
    connect = request.param == "connect"
    backend = request.getfixturevalue("spark_connect_backend" if connect else "spark_backend")
    lake = tmp_path / "lake"
    lake.mkdir()
    remote = "sc://127.0.0.1" if connect else None  # the test's Connect server is this machine's
    with _serving(backend.spark, lake, remote) as client:
        yield client, backend.spark, lake


def test_a_ddl_session_on_delta(delta_either: tuple[AirportClient, Any, Path]) -> None:
    client, spark, lake = delta_either
    version = client.catalog_version()
    client.create_schema(S)
    created = client.create_table(S, "orders", ORDERS, not_null=[0], checks=["id > 0"])
    assert created is not None and created.rowid_column == "rowid"
    path = lake / S / "orders"
    assert (path / "_delta_log").is_dir()
    rows = pa.table(
        {
            "id": [1, 2, 3],
            "item": ["pen", "ink", "pad"],
            "qty": pa.array([2, 5, 1], pa.int32()),
            "detail": [{"color": "red"}, None, {"color": "blue"}],
        },
        schema=ORDERS,
    )
    assert client.insert(S, "orders", rows).total_changed == 3
    # row tracking is on: UPDATE and DELETE by the rowids a scan found
    found = client.scan(S, "orders", ["rowid", "id"]).read_all()
    rowid = dict(zip(found["id"].to_pylist(), found["rowid"].to_pylist(), strict=True))
    client.update(S, "orders", pa.table({"qty": pa.array([6], pa.int32()), "rowid": [rowid[2]]}))
    client.delete(S, "orders", [rowid[3]])
    properties = dict(spark.sql(f"SHOW TBLPROPERTIES delta.`{path}`").collect())
    assert properties["delta.enableDeletionVectors"] == "true"
    assert properties["delta.enableRowTracking"] == "true"
    # constraints refuse rows and change nothing
    with pytest.raises(RemoteError, match="INSERT refused"):
        client.insert(S, "orders", pa.table({"id": [0], "qty": pa.array([1], pa.int32())}))
    with pytest.raises(RemoteError, match="does not accept nulls|INSERT refused"):
        client.insert(S, "orders", pa.table({"id": pa.array([None], pa.int64())}))
    assert [r["id"] for r in _spark_rows(spark, path)] == [1, 2]

    client.add_column(S, "orders", pa.field("price", pa.float64()))
    client.rename_column(S, "orders", "item", "product")
    client.change_column_type(S, "orders", pa.field("qty", pa.int64()))
    client.set_default(S, "orders", "product", "'unknown'")
    client.drop_not_null(S, "orders", "id")
    client.set_not_null(S, "orders", "qty")  # a CHECK constraint on Delta
    with pytest.raises(RemoteError, match="INSERT refused"):
        client.insert(S, "orders", pa.table({"id": [7], "qty": pa.array([None], pa.int64())}))
    client.drop_not_null(S, "orders", "qty")
    client.add_field(S, "orders", pa.field("detail", pa.struct([("size", pa.string())])))
    client.rename_field(S, "orders", ["detail", "color"], "colour")
    client.remove_field(S, "orders", ["detail", "size"])
    client.remove_column(S, "orders", "price")
    (table,) = client.list_tables(S)
    assert table.arrow_schema.names == ["id", "product", "qty", "detail", "rowid"]
    assert table.arrow_schema.field("qty").type == pa.int64()
    assert table.arrow_schema.field("detail").type == pa.struct([("colour", pa.string())])
    # plain Spark reads what the server wrote, and the server serves what Spark sees
    assert _spark_rows(spark, path, "id, product, qty, detail") == [
        {"id": 1, "product": "pen", "qty": 2, "detail": {"colour": "red"}},
        {"id": 2, "product": "ink", "qty": 6, "detail": None},
    ]
    served = client.scan(S, "orders", ["id", "product", "qty"]).read_all().to_pylist()
    assert sorted(served, key=lambda r: r["id"]) == [
        {"id": 1, "product": "pen", "qty": 2},
        {"id": 2, "product": "ink", "qty": 6},
    ]
    client.insert(S, "orders", pa.table({"id": [4], "qty": pa.array([3], pa.int64())}))
    assert _spark_rows(spark, path, "id, product")[-1] == {"id": 4, "product": "unknown"}

    renamed = client.rename_table(S, "orders", "purchases")
    assert renamed is not None and renamed.name == "purchases"
    assert (lake / S / "purchases" / "_delta_log").is_dir() and not path.exists()
    assert client.scan(S, "purchases", ["id"]).read_all().num_rows == 3
    with pytest.raises(RemoteError, match='schema "sales" contains tables'):
        client.drop_schema(S)
    client.drop_table(S, "purchases")
    client.drop_schema(S)
    assert not (lake / S).exists()
    assert client.catalog_version() > version


def test_delta_refusals_are_one_line(delta: tuple[AirportClient, Any, Path]) -> None:
    client, _, _ = delta
    client.create_schema(S)
    client.create_table(S, "t", pa.schema([pa.field("id", pa.int64()), pa.field("s", pa.string())]))
    with pytest.raises(RemoteError) as narrowing:
        client.change_column_type(S, "t", pa.field("id", pa.int32()))
    assert narrowing.value.message.startswith("failed to change column type: ")
    assert "\n" not in narrowing.value.message and "at org." not in narrowing.value.message
    with pytest.raises(RemoteError, match="failed to create table: Delta does not enforce UNIQUE"):
        client.create_table(S, "u", pa.schema([pa.field("id", pa.int64())]), unique=[0])
    with pytest.raises(RemoteError, match='column "nope" not found'):
        client.rename_column(S, "t", "nope", "x")
    (table,) = client.list_tables(S)
    assert table.arrow_schema.names == ["id", "s", "rowid"]  # rowid_served_last


MDN = pa.MonthDayNano
KEPT_AS_SENT = [
    (pa.uint8(), [0, 255], "smallint"),
    (pa.uint16(), [0, 65535], "int"),
    (pa.uint32(), [0, 4294967295], "bigint"),
    (pa.uint64(), [0, 18446744073709551615], "decimal(20,0)"),
    (pa.timestamp("ns"), [0, 1_700_000_000_123_456_789], "bigint"),
    (pa.timestamp("s", "UTC"), [0, 1_700_000_000], "timestamp"),
    (pa.time64("us"), [0, 86_399_999_999], "bigint"),
    (pa.month_day_nano_interval(), [MDN([1, 2, 3]), MDN([-1, 0, 5])], "struct<"),
    (pa.uuid(), [b"0123456789abcdef", b"fedcba9876543210"], "binary"),
    (pa.bool8(), [0, 1], "boolean"),
    (pa.binary(3), [b"abc", b"xyz"], "binary"),
    (pa.list_(pa.field("", pa.float32()), 3), [[1.5, 2, 3], [0, 0, 1]], "array<float>"),
]


@pytest.mark.parametrize(("served", "values", "spark_sees"), KEPT_AS_SENT, ids=str)
def test_a_type_delta_has_not_is_stored_losslessly_and_served_as_sent(
    delta: tuple[AirportClient, Any, Path], served: pa.DataType, values: list[Any], spark_sees: str
) -> None:
    """Stored as a Spark type that holds the same values (stored_types.py), read back exactly
    and in the type it came as, through UPDATE too; plain Spark reads the stored type."""
    client, spark, lake = delta
    client.create_schema(S)
    if isinstance(served, pa.BaseExtensionType):
        column = pa.ExtensionArray.from_storage(served, pa.array(values, served.storage_type))
    else:
        column = pa.array(values, served)
    client.create_table(S, "t", pa.schema([pa.field("id", pa.int64()), pa.field("v", served)]))
    (table,) = client.list_tables(S)
    assert table.arrow_schema.field("v").type == served
    client.insert(S, "t", pa.table({"id": pa.array([1, 2], pa.int64()), "v": column}))
    read = client.scan(S, "t", ["id", "v"]).read_all().sort_by("id")
    assert read.column("v").type == served and read.column("v").to_pylist() == column.to_pylist()
    rowid = client.scan(S, "t", ["rowid", "id"]).read_all().sort_by("id").column("rowid")[0]
    swapped = pa.table({"v": column.take([1]), "rowid": pa.array([rowid.as_py()], pa.int64())})
    client.update(S, "t", swapped)
    read = client.scan(S, "t", ["id", "v"]).read_all().sort_by("id")
    assert read.column("v").to_pylist() == column.take([1, 1]).to_pylist()
    described = dict(
        spark.sql(f"DESCRIBE delta.`{lake / S / 't'}`").select("col_name", "data_type").collect()
    )
    assert described["v"].startswith(spark_sees)
    client.rename_column(S, "t", "v", "w")
    assert client.list_tables(S)[0].arrow_schema.field("w").type == served


def test_a_nested_type_delta_cannot_hold_is_refused_in_one_line(
    delta: tuple[AirportClient, Any, Path],
) -> None:
    """Never stored as something else, never Spark's error text: one line naming the type
    and what to use; nothing is created."""
    client, _, lake = delta
    client.create_schema(S)
    column = pa.field("v", pa.struct([("u", pa.uint32())]))
    with pytest.raises(RemoteError) as refused:
        client.create_table(S, "t", pa.schema([pa.field("id", pa.int64()), column]))
    assert refused.value.message.startswith("failed to create table: Delta has no unsigned")
    assert "\n" not in refused.value.message and "UNSUPPORTED" not in refused.value.message
    # DuckDB's UNION, which Spark could not even convert (UNSUPPORTED_DATA_TYPE_FOR_ARROW…)
    union = pa.sparse_union([pa.field("n", pa.int32()), pa.field("s", pa.string())])
    for data_type in (union, pa.list_(union)):
        with pytest.raises(RemoteError) as refused:
            client.create_table(S, "t", pa.schema([pa.field("id", pa.int64()), ("v", data_type)]))
        assert refused.value.message == (
            "failed to create table: Delta has no UNION column type: use a STRUCT with a field"
            " for each member"
        )
    assert client.list_tables(S) == [] and not (lake / S / "t").exists()


def test_a_type_nested_deeper_than_delta_readers_go_is_refused_before_anything_is_made(
    delta: tuple[AirportClient, Any, Path],
) -> None:
    """Spark makes a table of 42 nested structs, which delta-rs then cannot read (Spark
    Connect's client: 36): such a CREATE TABLE failed INTERNAL with delta-rs's backtrace in
    its message (the C library's source paths), after Spark had made the table. A column's
    type nests at most MAX_NESTING deep; one deeper is refused in one line, nothing made."""
    from pyairport.backends.spark.ddl import MAX_NESTING

    def nested(depth: int) -> pa.DataType:
        leaf: pa.DataType = pa.int64()
        for level in range(depth):
            leaf = pa.list_(leaf) if level % 3 == 2 else pa.struct([("f", leaf)])
        return leaf

    client, _, lake = delta
    client.create_schema(S)
    deepest = nested(MAX_NESTING)
    client.create_table(S, "t", pa.schema([pa.field("id", pa.int64()), pa.field("v", deepest)]))
    value: Any = 7
    for level in range(MAX_NESTING):
        value = [value] if level % 3 == 2 else {"f": value}
    client.insert(S, "t", pa.table({"id": [1], "v": pa.array([value], deepest)}))
    assert client.scan(S, "t", ["v"]).read_all().column("v").to_pylist() == [value]
    refusal = f"a column's type here nests structs, lists and maps at most {MAX_NESTING} deep"
    too_deep = pa.field("w", nested(MAX_NESTING + 1))
    with pytest.raises(RemoteError) as refused:
        client.create_table(S, "u", pa.schema([pa.field("id", pa.int64()), too_deep]))
    assert refused.value.message == f"failed to create table: {refusal}"
    assert not (lake / S / "u").exists()
    with pytest.raises(RemoteError) as refused:
        client.add_column(S, "t", too_deep)
    assert refused.value.message.endswith(refusal) and "\n" not in refused.value.message
    assert client.list_tables(S)[0].arrow_schema.names == ["id", "v", "rowid"]


def test_create_table_if_not_exists_and_or_replace(delta: tuple[AirportClient, Any, Path]) -> None:
    client, spark, lake = delta
    client.create_schema(S)
    first = pa.schema([pa.field("id", pa.int64())])
    client.create_table(S, "t", first)
    client.insert(S, "t", pa.table({"id": [1]}))
    client.create_table(S, "t", pa.schema([pa.field("x", pa.int8())]), on_conflict="ignore")
    assert client.scan(S, "t", ["id"]).read_all().num_rows == 1
    replaced = client.create_table(S, "t", pa.schema([pa.field("x", pa.int8())]), "replace")
    assert replaced is not None and replaced.arrow_schema.names == ["x", "rowid"]
    assert spark.sql(f"SELECT * FROM delta.`{lake / S / 't'}`").count() == 0
    assert Action.CREATE_TABLE == "create_table"


def test_struct_fields_with_characters_spark_types_leave_bare(
    delta: tuple[AirportClient, Any, Path],
) -> None:
    """CREATE TABLE and ADD COLUMN spell nested field names quoted: `x:y` or `a-b` inside a
    STRUCT (names Delta accepts without column mapping) would not parse bare."""
    client, _, _ = delta
    client.create_schema(S)
    odd = pa.struct([("a-b", pa.int32()), ("x:y", pa.list_(pa.struct([("c.d", pa.string())])))])
    client.create_table(S, "t", pa.schema([pa.field("id", pa.int64()), pa.field("odd", odd)]))
    client.add_column(S, "t", pa.field("more", odd))
    rows = pa.table(
        {
            "id": [1],
            "odd": pa.array([{"a-b": 2, "x:y": [{"c.d": "e"}]}], odd),
            "more": pa.array([None], odd),
        }
    )
    client.insert(S, "t", rows)
    assert (
        client.scan(S, "t", ["id", "odd", "more"])
        .read_all()
        .select(["id", "odd", "more"])
        .to_pylist()
        == rows.to_pylist()
    )


def test_every_refusal_of_delta_is_its_row(delta: tuple[AirportClient, Any, Path]) -> None:
    """What a Delta schema or table refuses (a name taken or missing) is the action's error
    row, code and message, as on memory; nothing changes."""
    from airport_contracts.contract import ERROR_TABLE

    client, _, lake = delta
    client.create_schema(S)
    client.create_table(S, "t", ORDERS)
    struct = pa.struct([("color", pa.string())])
    cases = [
        ("schema_already_exists", {"schema": '"sales"'}, lambda: client.create_schema(S)),
        ("table_already_exists", {"table": '"t"'}, lambda: client.create_table(S, "t", ORDERS)),
        ("table_already_exists", {"table": '"t"'}, lambda: client.rename_table(S, "t", "t")),
        ("ddl_table_not_found", {"table": '"u"'}, lambda: client.drop_table(S, "u")),
        ("ddl_table_not_found", {"table": '"u"'}, lambda: client.rename_table(S, "u", "v")),
        ("schema_not_empty", {"schema": '"sales"'}, lambda: client.drop_schema(S)),
        (
            "column_already_exists",
            {"column": '"id"'},
            lambda: client.add_column(S, "t", ORDERS.field("id")),
        ),
        (
            "column_already_exists",
            {"column": '"qty"'},
            lambda: client.rename_column(S, "t", "id", "qty"),
        ),
        ("ddl_column_not_found", {"column": '"x"'}, lambda: client.remove_column(S, "t", "x")),
        ("ddl_column_not_found", {"column": '"x"'}, lambda: client.set_not_null(S, "t", "x")),
        ("ddl_column_not_found", {"column": '"x"'}, lambda: client.drop_not_null(S, "t", "x")),
        ("ddl_column_not_found", {"column": '"x"'}, lambda: client.set_default(S, "t", "x", "1")),
        (
            "ddl_column_not_found_unnamed",
            {},
            lambda: client.change_column_type(S, "t", pa.field("x", pa.int8())),
        ),
        ("ddl_column_path_not_found", {}, lambda: client.add_field(S, "t", pa.field("x", struct))),
        ("field_already_exists", {}, lambda: client.add_field(S, "t", pa.field("detail", struct))),
        ("ddl_field_path_not_found", {}, lambda: client.rename_field(S, "t", ["detail", "x"], "y")),
        ("ddl_field_path_not_found", {}, lambda: client.remove_field(S, "t", ["detail", "x"])),
    ]
    for row_id, params, call in cases:
        with pytest.raises(RemoteError) as refused:
            call()
        row = next(r for r in ERROR_TABLE if r.id == row_id)
        assert (refused.value.code.name, refused.value.message) == (
            row.code,
            row.message.format(**params),
        ), row_id
    (table,) = client.list_tables(S)
    assert table.arrow_schema.names == [*ORDERS.names, "rowid"]
    assert sorted(p.name for p in (lake / S).iterdir()) == ["t"]


def test_a_failed_create_leaves_the_schema_as_it_was(
    delta: tuple[AirportClient, Any, Path],
) -> None:
    """A CHECK Delta refuses: no table, no folder; under REPLACE the old table and its rows
    stay."""
    client, _, lake = delta
    client.create_schema(S)
    columns = pa.schema([pa.field("id", pa.int64())])
    with pytest.raises(RemoteError, match="failed to create table: "):
        client.create_table(S, "t", columns, checks=["no_such_column > 0"])
    assert client.list_tables(S) == [] and list((lake / S).iterdir()) == []
    client.create_table(S, "t", columns)
    client.insert(S, "t", pa.table({"id": [1, 2]}))
    with pytest.raises(RemoteError, match="failed to create table: "):
        client.create_table(S, "t", columns, "replace", checks=["no_such_column > 0"])
    assert client.scan(S, "t", ["id"]).read_all().num_rows == 2
    assert sorted(p.name for p in (lake / S).iterdir()) == ["t"]


def test_a_refused_column_leaves_the_table_as_it_was(
    delta: tuple[AirportClient, Any, Path],
) -> None:
    """A new column whose name needs Delta's column mapping and whose type Delta has no column
    for (an unsigned integer nested in a struct): refused before column mapping is turned on (an upgrade of the table's protocol that
    cannot be taken back), so the table's files are as they were."""
    client, _, lake = delta
    client.create_schema(S)
    client.create_table(S, "t", pa.schema([pa.field("id", pa.int64())]))
    before = sorted(str(p) for p in lake.rglob("*"))
    refused = refusal(
        lambda: client.add_column(S, "t", pa.field("a b", pa.struct([("u", pa.uint64())])))
    )
    assert refused.code == grpc.StatusCode.INTERNAL
    assert refused.message.startswith("failed to add column: Delta has no unsigned integer type")
    assert sorted(str(p) for p in lake.rglob("*")) == before


def test_a_type_change_delta_cannot_make_leaves_the_table_as_it_was(
    delta: tuple[AirportClient, Any, Path],
) -> None:
    """Delta changes a column's type only by widening it (its type-widening feature): a change
    that is none is refused, naming both types, before the feature is turned on, so the
    table's files are as they were; a widening is made and the values kept."""
    client, spark, lake = delta
    client.create_schema(S)
    columns = [("id", pa.int64()), ("i", pa.int32()), ("d", pa.decimal128(10, 2))]
    client.create_table(S, "t", pa.schema(columns))
    client.insert(S, "t", pa.table({"id": [1], "i": pa.array([7], pa.int32())}))
    before = sorted(str(p) for p in lake.rglob("*"))
    refused = {
        ("id", pa.string()): "bigint to string",
        ("id", pa.int32()): "bigint to int",
        ("d", pa.decimal128(5, 2)): "decimal(10,2) to decimal(5,2)",
    }
    for (name, wanted), types in refused.items():
        error = refusal(lambda: client.change_column_type(S, "t", pa.field(name, wanted)))  # noqa: B023
        assert error.code == grpc.StatusCode.INTERNAL
        assert error.message == (
            "failed to change column type: Delta changes a column's type only by widening it:"
            f" {types} is not a widening"
        )
        assert sorted(str(p) for p in lake.rglob("*")) == before
    client.change_column_type(S, "t", pa.field("i", pa.int64()))
    client.change_column_type(S, "t", pa.field("d", pa.decimal128(12, 3)))
    table = client.scan(S, "t", ["id", "i"]).read_all()
    assert table.schema.field("i").type == pa.int64() and table.column("i").to_pylist() == [7]


def test_a_refused_column_change_leaves_the_table_and_its_types_as_they_were(
    delta: tuple[AirportClient, Any, Path],
) -> None:
    """What Delta would refuse after the server turned column mapping on, or after it moved a
    column's served type (UBIGINT is stored as DECIMAL(20, 0)), is refused first: a name taken
    but for its case (Spark's names are case-insensitive), the last column, a struct's last
    field, a DEFAULT on a column stored as another type. Nothing changes on disk, and a new
    server serves the column as before."""
    client, spark, lake = delta
    client.create_schema(S)
    one = pa.struct([("x", pa.int64())])
    two = pa.struct([("a", pa.int64()), ("b", pa.int64())])
    columns = [("u", pa.uint64()), ("v", pa.int64()), ("s", two), ("o", one)]
    client.create_table(S, "t", pa.schema(columns))
    client.create_table(S, "single", pa.schema([pa.field("u", pa.uint64()), ("v", pa.int64())]))
    client.remove_column(S, "single", "v")
    before = sorted(str(p) for p in lake.rglob("*"))
    refused = [
        (
            lambda: client.rename_column(S, "t", "u", "U"),
            grpc.StatusCode.ALREADY_EXISTS,
            'column "U" already exists',
        ),
        (
            lambda: client.add_column(S, "t", pa.field("U", pa.int64())),
            grpc.StatusCode.ALREADY_EXISTS,
            'column "U" already exists',
        ),
        (
            lambda: client.set_default(S, "t", "u", "1"),
            grpc.StatusCode.INTERNAL,
            "failed to set default: Delta stores 'u' as another type (stored_types), whose"
            " DEFAULT is not set",
        ),
        (
            lambda: client.rename_field(S, "t", ["s", "a"], "B"),
            grpc.StatusCode.INTERNAL,
            "failed to rename field: field 'B' already exists",
        ),
        (
            lambda: client.remove_field(S, "t", ["o", "x"]),
            grpc.StatusCode.INTERNAL,
            "failed to remove field: a Delta struct keeps at least one field: 'x' is its last",
        ),
        (
            lambda: client.remove_column(S, "single", "u"),
            grpc.StatusCode.INTERNAL,
            "failed to remove column: a Delta table keeps at least one column: 'u' is its last",
        ),
    ]
    for call, code, message in refused:
        error = refusal(call)
        assert (error.code, error.message) == (code, message)
        assert sorted(str(p) for p in lake.rglob("*")) == before
    with _serving(spark, lake) as fresh:
        for table in fresh.list_tables(S):
            assert table.arrow_schema.field("u").type == pa.uint64()


def test_a_column_named_with_quotes_keeps_its_served_type(
    delta: tuple[AirportClient, Any, Path],
) -> None:
    """The served-types property is JSON keyed by column name: a name with a double quote is
    escaped there, and the escape reaches Delta as written (Spark unescapes a string literal),
    so a new server serves the column as it came."""
    client, spark, lake = delta
    client.create_schema(S)
    name = 'say "hi"'
    client.create_table(S, "t", pa.schema([pa.field(name, pa.uint64())]))
    client.insert(S, "t", pa.table({name: pa.array([2**64 - 1], pa.uint64())}))
    with _serving(spark, lake) as fresh:
        (table,) = fresh.list_tables(S)
        assert table.arrow_schema.field(name).type == pa.uint64()
        assert fresh.scan(S, "t", [name]).read_all().column(name).to_pylist() == [2**64 - 1]
