"""Spec 000 §1-3 "Contract Tests", run through the generated dispatchers."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airport_contracts import (
    Context,
    DeleteMissingRowid,
    StatementCanceled,
    UpdateMissingRowid,
    find_rowid_column,
    rowid_field,
)

from .dispatch_helpers import batch, dispatcher_for, exchange
from .tables import make_table, seed

# --- §1 UpdatableBatchTable ---------------------------------------------------------------


def test_updatable_batch_table_update_basic() -> None:
    table = make_table("UpdatableBatchTable", rows=seed(3))
    _, _, total = exchange(
        dispatcher_for(table), "update", [batch({"name": ["a", "b"], "rowid": [1, 2]})]
    )
    assert total == 2
    assert table.calls == ["update_batch"]
    assert [table.rows[i]["name"] for i in (1, 2, 3)] == ["a", "b", "user3"]


def test_updatable_batch_table_update_returning() -> None:
    table = make_table("UpdatableBatchTable", rows=seed(3))
    schema, out, _ = exchange(
        dispatcher_for(table),
        "update",
        [batch({"name": ["a", "b"], "rowid": [1, 2]})],
        returning=True,
    )
    assert schema is not None and schema.names == [
        "name",
        "rowid",
    ]  # UPDATE echoes the input schema
    assert len(out) == 1 and out[0].column("name").to_pylist() == ["a", "b"]
    assert table.options[0].returning and table.options[0].returning_columns == [
        "id",
        "name",
        "email",
    ]


def test_updatable_batch_table_update_no_rowid_column() -> None:
    table = make_table("UpdatableBatchTable", rows=seed(3))
    with pytest.raises(UpdateMissingRowid) as err:
        exchange(dispatcher_for(table), "update", [batch({"name": ["a"]})])
    assert str(err.value) == "UPDATE requires rowid column in input schema"
    assert table.calls == [] and table.rows[1]["name"] == "user1"


def test_updatable_batch_table_update_empty_reader() -> None:
    table = make_table("UpdatableBatchTable", rows=seed(3))
    schema = pa.schema([pa.field("name", pa.string()), rowid_field()])
    _, out, total = exchange(dispatcher_for(table), "update", [], schema=schema)
    assert total == 0 and out == []


def test_updatable_batch_table_update_context_cancellation() -> None:
    table = make_table("UpdatableBatchTable", rows=seed(3))
    ctx, cancel = Context.background().with_cancel()
    cancel()
    with pytest.raises(StatementCanceled) as err:
        exchange(dispatcher_for(table), "update", [batch({"name": ["a"], "rowid": [1]})], ctx=ctx)
    assert str(err.value) == "UPDATE failed: context canceled"
    assert table.rows[1]["name"] == "user1"


# --- §2 DeletableBatchTable ---------------------------------------------------------------


def test_deletable_batch_table_delete_basic() -> None:
    table = make_table("DeletableBatchTable", rows=seed(5))
    _, _, total = exchange(dispatcher_for(table), "delete", [batch({"rowid": [1, 3, 5]})])
    assert total == 3 and sorted(table.rows) == [2, 4]
    assert table.calls == ["delete_batch"]


def test_deletable_batch_table_delete_returning() -> None:
    table = make_table("DeletableBatchTable", rows=seed(5))
    schema, out, _ = exchange(
        dispatcher_for(table), "delete", [batch({"rowid": [2, 4]})], returning=True
    )
    assert schema is not None and schema.names == ["id", "name", "email"]  # projected, no rowid
    assert out[0].column("name").to_pylist() == ["user2", "user4"]  # rows as they were


def test_deletable_batch_table_delete_no_rowid_column() -> None:
    table = make_table("DeletableBatchTable", rows=seed(5))
    with pytest.raises(DeleteMissingRowid) as err:
        exchange(dispatcher_for(table), "delete", [batch({"id": [1]})])
    assert str(err.value) == "DELETE requires rowid column"
    assert len(table.rows) == 5


def test_deletable_batch_table_delete_empty_reader() -> None:
    table = make_table("DeletableBatchTable", rows=seed(5))
    _, out, total = exchange(dispatcher_for(table), "delete", [], schema=pa.schema([rowid_field()]))
    assert total == 0 and out == [] and len(table.rows) == 5


def test_deletable_batch_table_delete_context_cancellation() -> None:
    table = make_table("DeletableBatchTable", rows=seed(5))
    ctx, cancel = Context.background().with_cancel()
    cancel()
    with pytest.raises(StatementCanceled):
        exchange(dispatcher_for(table), "delete", [batch({"rowid": [1]})], ctx=ctx)
    assert len(table.rows) == 5


# --- §3 FindRowIDColumn (plus protocol §4.4 #35) -----------------------------------------

MARKED = {"is_rowid": "true"}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ([pa.field("a", pa.int64()), pa.field("rowid", pa.int64())], 1),  # by name; rowid last
        (
            [pa.field("rid", pa.int64(), metadata=MARKED), pa.field("a", pa.int64())],
            0,
        ),  # by metadata
        (
            [pa.field("rowid", pa.int64()), pa.field("rid", pa.int64(), metadata=MARKED)],
            0,
        ),  # name first
        (
            [pa.field("rid", pa.int64(), metadata=MARKED), pa.field("rowid", pa.int64())],
            0,
        ),  # first match wins
        ([pa.field("a", pa.int64()), pa.field("b", pa.string())], -1),  # not found
        ([], -1),  # empty schema
        ([pa.field("rid", pa.int64(), metadata={"is_rowid": ""})], -1),  # empty metadata value
        ([pa.field("ROWID", pa.int64())], -1),  # case-sensitive
    ],
)
def test_find_rowid_column(fields: list[pa.Field], expected: int) -> None:
    assert find_rowid_column(pa.schema(fields)) == expected


def test_find_rowid_column_nil_schema() -> None:
    assert find_rowid_column(None) == -1
