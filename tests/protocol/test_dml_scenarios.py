"""protocol.md §4.1-4.2: the DML scenarios airport-go's integration tests assert, replayed over
gRPC with the calls DuckDB makes (2048-row batches, lock-step RETURNING, rowid last).
AirportClient pipelines RETURNING by default; the multi-batch scenarios run both ways."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pyairport.demo import generated_users

from .conftest import Running, users

DUCKDB_BATCH = 2048


@pytest.fixture
def srv(any_srv: Running) -> Running:
    """Every scenario runs against the memory and the Spark backend."""
    return any_srv


BOTH = pytest.mark.parametrize("schema", ["dml_schema", "batch_schema"])


def _update(
    srv: Running, schema: str, rowids: list[int], returning: bool = False, **values: list[object]
) -> object:
    """UPDATE ... SET <values> WHERE rowid IN rowids, as DuckDB sends it: SET columns, rowid last."""
    data = pa.table({**values, "rowid": pa.array(rowids, pa.int64())})
    return srv.client.update(
        schema, "users", data, returning=returning, batch_rows=DUCKDB_BATCH, lock_step=True
    )


def _seed(srv: Running, schema: str, n: int) -> None:
    srv.client.insert(
        schema, "users", users(list(range(1, n + 1)), [f"name{i}" for i in range(1, n + 1)])
    )


# --- §4.1 INSERT ------------------------------------------------------------------------------


@BOTH
def test_01_insert_one_row(srv: Running, schema: str) -> None:
    answer = srv.client.insert(schema, "users", users([1], ["Alice"], ["alice@example.com"]))
    assert answer.total_changed == 1
    assert srv.rows(schema) == [
        {"rowid": 1, "id": 1, "name": "Alice", "email": "alice@example.com"}
    ]


@BOTH
def test_02_insert_three_rows_in_one_values_list(srv: Running, schema: str) -> None:
    srv.client.insert(schema, "users", users([1, 2, 3]))
    assert len(srv.rows(schema)) == 3


def test_03_insert_ten_million_rows(srv: Running) -> None:
    answer = srv.client.insert(
        "dml_schema", "users", generated_users(10_000_000), batch_rows=DUCKDB_BATCH
    )
    assert answer.total_changed == 10_000_000
    assert srv.table("dml_schema").num_rows == 10_000_000  # checked server-side, as in Go


@BOTH
def test_04_insert_returning_id(srv: Running, schema: str) -> None:
    answer = srv.client.insert(schema, "users", users([42], ["Alice"]), returning=True)
    assert answer.returning is not None and answer.returning.column("id").to_pylist() == [42]


@BOTH
@pytest.mark.parametrize("n", [10, 100_000])
@pytest.mark.parametrize("lock_step", [True, False], ids=["lock_step", "pipelined"])
def test_05_06_insert_generated_rows_returning(
    srv: Running, schema: str, n: int, lock_step: bool
) -> None:
    answer = srv.client.insert(
        schema,
        "users",
        generated_users(n),
        returning=True,
        batch_rows=DUCKDB_BATCH,
        lock_step=lock_step,
    )
    assert answer.returning is not None and answer.returning.num_rows == n
    assert answer.returning.column("id").to_pylist() == list(range(1, n + 1))
    assert answer.total_changed == n


def test_07_insert_without_id_returning_server_ids(srv: Running) -> None:
    seen = srv.record_options("dml_schema")
    data = pa.table(
        {"id": pa.nulls(3, pa.int64()), "name": ["a", "b", "c"], "email": ["a@x", "b@x", "c@x"]}
    )
    answer = srv.client.insert("dml_schema", "users", data, returning=True)
    assert answer.returning is not None and answer.returning.column("id").to_pylist() == [1, 2, 3]
    assert (
        seen[-1][1] is not None
        and seen[-1][1].returning
        and seen[-1][1].returning_columns == ["id", "name", "email"]
    )


def test_08_insert_returning_star(srv: Running) -> None:
    seen = srv.record_options("dml_schema")
    answer = srv.client.insert(
        "dml_schema", "users", users([None], ["alice"], ["alice@example.com"]), returning=True
    )
    assert (
        answer.schema is not None
        and len(answer.schema) >= 3
        and answer.returning is not None
        and answer.returning.num_rows >= 1
    )
    assert seen[-1][1] is not None and seen[-1][1].returning


def test_09_insert_without_returning_sees_returning_false(srv: Running) -> None:
    seen = srv.record_options("dml_schema")
    srv.client.insert("dml_schema", "users", users([None], ["Bob"], ["bob@example.com"]))
    assert (
        seen[-1][1] is not None
        and not seen[-1][1].returning
        and seen[-1][1].returning_columns == []
    )


# --- §4.1 UPDATE ------------------------------------------------------------------------------


@BOTH
def test_10_update_returning_id(srv: Running, schema: str) -> None:
    _seed(srv, schema, 2)
    seen = srv.record_options(schema)
    answer = _update(srv, schema, [1, 2], returning=True, name=["Updated", "Updated"])
    assert answer.returning is not None and answer.returning.num_rows == 2
    assert answer.schema is not None and answer.schema.names == [
        "name",
        "rowid",
    ]  # input schema echoed
    assert seen[-1][1] is not None and seen[-1][1].returning_columns == ["id", "name", "email"]


def test_11_update_returning_star(srv: Running) -> None:
    _seed(srv, "dml_schema", 1)
    answer = _update(
        srv, "dml_schema", [1], returning=True, name=["Alice Updated"], id=[1], email=["a@x"]
    )
    assert (
        answer.returning is not None
        and len(answer.returning.schema) >= 3
        and answer.returning.num_rows == 1
    )


def test_12_update_without_returning(srv: Running) -> None:
    _seed(srv, "dml_schema", 1)
    seen = srv.record_options("dml_schema")
    _update(srv, "dml_schema", [1], name=["Alice Updated"])
    assert (
        seen[-1][1] is not None
        and not seen[-1][1].returning
        and seen[-1][1].returning_columns == []
    )


@BOTH
def test_16_update_one_name(srv: Running, schema: str) -> None:
    _seed(srv, schema, 2)
    _update(srv, schema, srv.rowids_where(schema, id=1), name=["Alice Updated"])
    assert [r["name"] for r in srv.rows(schema) if r["id"] == 1] == ["Alice Updated"]


@BOTH
def test_17_update_email_of_two(srv: Running, schema: str) -> None:
    _seed(srv, schema, 3)
    _update(srv, schema, [1, 2], email=["updated@example.com"] * 2)
    assert sum(r["email"] == "updated@example.com" for r in srv.rows(schema)) == 2


@BOTH
def test_18_update_100k_rows(srv: Running, schema: str) -> None:
    srv.client.insert(schema, "users", generated_users(100_000), batch_rows=DUCKDB_BATCH)
    assert srv.table(schema).num_rows == 100_000
    rows = srv.table(schema).to_table()
    emails = [f"user_{i}@updated.com" for i in rows.column("id").to_pylist()]
    answer = _update(srv, schema, rows.column("rowid").to_pylist(), email=emails)
    assert answer.total_changed == 100_000
    assert sum(r["email"].endswith("@updated.com") for r in srv.rows(schema)) == 100_000


# --- §4.1 DELETE ------------------------------------------------------------------------------


@BOTH
def test_13_delete_returning_id(srv: Running, schema: str) -> None:
    _seed(srv, schema, 3)
    seen = srv.record_options(schema)
    answer = srv.client.delete(schema, "users", [1, 2], returning=True)
    assert answer.schema is not None and answer.schema.names == ["id", "name", "email"]
    assert answer.returning is not None and answer.returning.column("id").to_pylist() == [1, 2]
    assert seen[-1][1] is not None and seen[-1][1].returning_columns == ["id", "name", "email"]


def test_14_delete_returning_star(srv: Running) -> None:
    _seed(srv, "dml_schema", 1)
    answer = srv.client.delete("dml_schema", "users", [1], returning=True)
    assert (
        answer.returning is not None
        and answer.returning.num_rows == 1
        and len(answer.returning.schema) >= 3
    )


def test_15_delete_without_returning(srv: Running) -> None:
    _seed(srv, "dml_schema", 1)
    seen = srv.record_options("dml_schema")
    srv.client.delete("dml_schema", "users", [1])
    assert seen[-1][1] is not None and not seen[-1][1].returning


@BOTH
@pytest.mark.parametrize(("where", "left"), [([2], 2), ([1, 3], 1), ([1, 2, 3], 0)])
def test_19_20_21_delete(srv: Running, schema: str, where: list[int], left: int) -> None:
    _seed(srv, schema, 3)
    answer = srv.client.delete(schema, "users", where)
    assert answer.total_changed == len(where) and len(srv.rows(schema)) == left


@BOTH
def test_22_delete_100k_rows(srv: Running, schema: str) -> None:
    srv.client.insert(schema, "users", generated_users(100_000), batch_rows=DUCKDB_BATCH)
    srv.client.delete(
        schema, "users", srv.table(schema).to_table().column("rowid"), batch_rows=DUCKDB_BATCH
    )
    assert srv.table(schema).num_rows == 0


@BOTH
def test_23_32_full_crud_cycle(srv: Running, schema: str) -> None:
    srv.client.insert(schema, "users", users([1, 2], ["Alice", "Bob"]))
    assert len(srv.rows(schema)) == 2
    _update(
        srv,
        schema,
        srv.rowids_where(schema, id=1),
        name=["Alice Updated"],
        email=["alice.updated@example.com"],
    )
    assert [r["email"] for r in srv.rows(schema) if r["id"] == 1] == ["alice.updated@example.com"]
    srv.client.delete(schema, "users", srv.rowids_where(schema, id=2))
    assert [r["name"] for r in srv.rows(schema)] == ["Alice Updated"]


# --- §4.2: which interface served it ------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "update_method", "delete_method"),
    [
        ("dml_schema", "update_by_row_ids", "delete_by_row_ids"),
        ("batch_schema", "update_batch", "delete_batch"),
    ],
)
def test_26_to_31_interface_used(
    srv: Running, schema: str, update_method: str, delete_method: str
) -> None:
    _seed(srv, schema, 3)
    seen = srv.record_options(schema)
    answer = _update(srv, schema, [1, 2], returning=True, name=["Updated"] * 2)
    assert answer.returning is not None and answer.returning.num_rows == 2
    answer = srv.client.delete(schema, "users", [1, 2], returning=True)
    assert answer.returning is not None and answer.returning.num_rows == 2
    assert [name for name, _ in seen] == [update_method, delete_method]
