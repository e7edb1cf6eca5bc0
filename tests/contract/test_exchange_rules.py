"""DoExchange rules of protocol §1 and the deliberate differences, through the dispatcher."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from airport_contracts import (
    Context,
    DeleteAction,
    DeleteActionResult,
    DMLOptions,
    DMLResponse,
    DMLResult,
    InsertNotSupported,
    InvalidRowidType,
    NullRowid,
    OperationFailed,
    ReturningTypeMismatch,
    SchemaNotFound,
    TableNotFound,
)
from pyairport.dispatch import ExchangeRequest, StaticInput
from pyairport.dispatch.statement import adapt
from pyairport.statement_scope import statement_from_context

from .dispatch_helpers import batch, dispatcher_for, exchange
from .tables import BaseTable, make_table, seed


def test_insert_assigns_rowids_and_counts_affected_rows() -> None:
    table = make_table("InsertableTable")
    schema, out, total = exchange(
        dispatcher_for(table),
        "insert",
        [batch({"id": [None, 7], "name": ["a", "b"], "email": ["x", "y"]})],
    )
    assert total == 2 and out == []
    assert schema is not None and schema.names == [
        "rowid",
        "id",
        "name",
        "email",
    ]  # full table schema
    assert table.rows == {
        1: {"id": 1, "name": "a", "email": "x"},
        2: {"id": 7, "name": "b", "email": "y"},
    }
    assert table.options[0] == DMLOptions(returning=False, returning_columns=[])


def test_insert_returning_answers_each_batch_and_counts_input_rows() -> None:
    table = make_table("InsertableTable")
    batches = [
        batch({"id": [1], "name": ["a"], "email": ["x"]}),
        batch({"id": [2, 3], "name": ["b", "c"], "email": ["y", "z"]}),
    ]
    schema, out, total = exchange(dispatcher_for(table), "insert", batches, returning=True)
    assert schema is not None and schema.names == ["id", "name", "email"]
    assert [b.num_rows for b in out] == [1, 2] and total == 3
    assert table.calls == ["insert", "insert"]  # one call per input batch, for lock-step


def test_empty_stream_sends_only_final_metadata() -> None:
    table = make_table("InsertableTable")
    request = ExchangeRequest("insert", "s", "users", False, "")
    events = list(dispatcher_for(table).exchange(Context.background(), request, StaticInput(None)))
    assert len(events) == 1 and events[0].app_metadata == b"\x81\xadtotal_changed\xcf" + bytes(8)


def test_lookup_errors() -> None:
    dispatcher = dispatcher_for(make_table("InsertableTable"))
    with pytest.raises(SchemaNotFound, match=r"^schema 'nope' not found$"):
        list(
            dispatcher.exchange(
                Context.background(),
                ExchangeRequest("insert", "nope", "users", False, ""),
                StaticInput(None),
            )
        )
    with pytest.raises(TableNotFound, match=r"^table 's.nope' not found$"):
        list(
            dispatcher.exchange(
                Context.background(),
                ExchangeRequest("insert", "s", "nope", False, ""),
                StaticInput(None),
            )
        )


def test_insert_capability_is_checked_before_reading() -> None:
    table = make_table("UpdatableTable")
    request = ExchangeRequest("insert", "s", "users", False, "")
    with pytest.raises(
        InsertNotSupported, match=r"^table 'users' does not support INSERT operations$"
    ):
        list(dispatcher_for(table).exchange(Context.background(), request, StaticInput(None)))


@pytest.mark.parametrize("interface", ["UpdatableTable", "UpdatableBatchTable"])
def test_null_rowid_is_invalid_argument_on_both_paths(interface: str) -> None:
    table = make_table(interface, rows=seed(3))
    with pytest.raises(NullRowid, match=r"^null rowid value not allowed$"):
        exchange(dispatcher_for(table), "update", [batch({"name": ["a", "b"], "rowid": [1, None]})])
    assert table.rows[1]["name"] == "user1"


@pytest.mark.parametrize("interface", ["DeletableTable", "DeletableBatchTable"])
def test_wrong_rowid_type_is_invalid_argument(interface: str) -> None:
    table = make_table(interface, rows=seed(3))
    with pytest.raises(InvalidRowidType, match=r"^rowid column must be Int64, Int32, or Uint64$"):
        exchange(dispatcher_for(table), "delete", [batch({"rowid": ["1"]}, {"rowid": pa.string()})])


@pytest.mark.parametrize("rowid_type", [pa.int32(), pa.uint64()])
def test_legacy_path_widens_rowids_and_strips_the_column(rowid_type: pa.DataType) -> None:
    table = make_table("UpdatableTable", rows=seed(3))
    exchange(
        dispatcher_for(table),
        "update",
        [batch({"rowid": [2], "name": ["z"]}, {"rowid": rowid_type})],
    )
    assert table.rows[2] == {"id": 2, "name": "z", "email": "user2@example.com"}


def test_update_returning_fills_missing_columns_with_nulls() -> None:
    table = make_table("UpdatableTable", rows=seed(2))
    schema, out, _ = exchange(
        dispatcher_for(table), "update", [batch({"name": ["a"], "rowid": [1]})], returning=True
    )
    assert out[0].schema.equals(schema) and out[0].column("rowid").to_pylist() == [None]


def test_every_batch_gets_an_answer_even_when_nothing_matched() -> None:
    table = make_table("DeletableBatchTable", rows=seed(2))
    batches = [batch({"rowid": [99]}), batch({"rowid": [1]})]
    _, out, total = exchange(dispatcher_for(table), "delete", batches, returning=True)
    assert [b.num_rows for b in out] == [0, 1] and total == 2


class _WrongTypeReturning(BaseTable):
    def delete_batch(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        bad = pa.RecordBatch.from_pydict({"id": pa.array(["not-an-int"])})
        return DMLResult(
            affected_rows=1, returning_data=pa.RecordBatchReader.from_batches(bad.schema, [bad])
        )


def test_returning_type_mismatch_fails_the_statement() -> None:
    with pytest.raises(ReturningTypeMismatch) as err:
        exchange(
            dispatcher_for(_WrongTypeReturning()), "delete", [batch({"rowid": [1]})], returning=True
        )
    assert (
        str(err.value)
        == "DELETE failed: column type mismatch and transformation not implemented: string -> int64"
    )


def test_returning_fits_not_null_nested_fields_to_a_client_whose_fields_are_nullable() -> None:
    """A Spark table's struct may declare a field NOT NULL; DuckDB's fields are always
    nullable: the returned values fit its schema as they are. The other way round is a
    change of type (a null would not fit): refused as any other mismatch."""
    strict = pa.struct([pa.field("a", pa.int32(), nullable=False), pa.field("b", pa.string())])
    loose = pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.string())])
    stored = pa.array([{"a": 1, "b": "x"}, None], strict)
    returned = pa.RecordBatch.from_arrays([stored], names=["st"])
    fitted = adapt(returned, pa.schema([pa.field("st", loose)]), "UPDATE")
    assert fitted.schema.field("st").type == loose
    assert fitted.column(0).to_pylist() == [{"a": 1, "b": "x"}, None]
    sent = pa.RecordBatch.from_arrays([stored.cast(loose)], names=["st"])
    with pytest.raises(ReturningTypeMismatch):
        adapt(sent, pa.schema([pa.field("st", strict)]), "UPDATE")


class _Staging(BaseTable):
    """Applies deletes only when the statement commits: the all-or-nothing pattern."""

    def __init__(self, fail_on: int | None = None) -> None:
        super().__init__(rows=seed(5))
        self.fail_on = fail_on

    def delete_batch(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        statement = statement_from_context(ctx)
        assert statement is not None
        pending: set[int] = statement.staged(self, set)
        if not pending:
            statement.on_commit(lambda: [self.rows.pop(r, None) for r in pending])
        for b in rows:
            ids = b.column(0).to_pylist()
            if self.fail_on in ids:
                raise RuntimeError(f"disk full at row {self.fail_on}")
            pending.update(ids)
        return DMLResult(affected_rows=0, returning_data=None)


def test_failure_mid_statement_commits_nothing_and_is_internal() -> None:
    table = _Staging(fail_on=4)
    with pytest.raises(OperationFailed) as err:
        exchange(
            dispatcher_for(table),
            "delete",
            [batch({"rowid": [1, 2]}), batch({"rowid": [4]})],
            returning=True,
        )
    assert (
        err.value.code.name == "INTERNAL" and str(err.value) == "DELETE failed: disk full at row 4"
    )
    assert sorted(table.rows) == [1, 2, 3, 4, 5]


def test_disconnect_mid_statement_commits_nothing() -> None:
    table = _Staging()
    request = ExchangeRequest("delete", "s", "users", True, "")
    events = dispatcher_for(table).exchange(
        Context.background(),
        request,
        StaticInput(batch({"rowid": [1]}).schema, [batch({"rowid": [1]}), batch({"rowid": [2]})]),
    )
    next(events), next(events)  # schema and the first answer, then the client goes away
    events.close()
    assert sorted(table.rows) == [1, 2, 3, 4, 5]


def test_success_commits_once() -> None:
    table = _Staging()
    exchange(
        dispatcher_for(table),
        "delete",
        [batch({"rowid": [1, 2]}), batch({"rowid": [4]})],
        returning=True,
    )
    assert sorted(table.rows) == [3, 5]


class _Raises(BaseTable):
    def insert(self, ctx: Context, rows: pa.RecordBatchReader, opts: Any) -> DMLResult:
        raise KeyError("column 'x'")


def test_unexpected_table_error_becomes_operation_failed() -> None:
    with pytest.raises(OperationFailed) as err:
        exchange(dispatcher_for(_Raises()), "insert", [batch({"id": [1]})])
    assert str(err.value) == "INSERT failed: \"column 'x'\""


def test_tables_are_called_from_many_threads() -> None:
    table = make_table("InsertableTable")
    lock = threading.Lock()
    original = table.insert

    def locked(ctx: Context, rows: pa.RecordBatchReader, opts: Any) -> DMLResult:
        with lock:
            return original(ctx, rows, opts)

    table.insert = locked
    dispatcher = dispatcher_for(table)
    threads = [
        threading.Thread(
            target=exchange,
            args=(dispatcher, "insert", [batch({"id": [i], "name": ["n"], "email": ["e"]})]),
        )
        for i in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(table.rows) == 8


class _CountsAtCommit(BaseTable):
    """Stages INSERT rows and DELETE rowids, and learns how many rows changed only when it
    applies them (as the Spark backend does): its calls report an estimate, its commit hook
    the count."""

    def __init__(self) -> None:
        super().__init__(rows=seed(3))

    def _pending(self, ctx: Context) -> dict[str, list[Any]]:
        statement = statement_from_context(ctx)
        assert statement is not None
        return statement.join(self, lambda: {"rows": [], "ids": []}, self._apply)

    def _apply(self, pending: dict[str, list[Any]]) -> int:
        for row in pending["rows"]:
            self.rows[self.next_rowid] = row
            self.next_rowid += 1
        found = [i for i in set(pending["ids"]) if self.rows.pop(i, None) is not None]
        return len(pending["rows"]) + len(found)

    def insert(self, ctx: Context, rows: pa.RecordBatchReader, opts: Any) -> DMLResult:
        self._pending(ctx)["rows"].extend(rows.read_all().to_pylist())
        return DMLResult(affected_rows=-1, returning_data=None)

    def delete_batch(self, ctx: Context, rows: pa.RecordBatchReader, opts: Any) -> DMLResult:
        ids = rows.read_all().column("rowid").to_pylist()
        self._pending(ctx)["ids"].extend(ids)
        return DMLResult(affected_rows=len(ids), returning_data=None)


def test_a_count_the_table_makes_at_commit_is_the_answer() -> None:
    """Statement.changed_rows replaces the call's DMLResult.affected_rows in every answer
    that carries a count: DoExchange INSERT's total_changed, DoPut's and the delete
    action's affected_rows."""
    table = _CountsAtCommit()
    dispatcher = dispatcher_for(table)
    _, _, total = exchange(
        dispatcher, "insert", [batch({"id": [7, 8], "name": ["a", "b"], "email": ["x", "y"]})]
    )
    assert total == 2 and len(table.rows) == 5
    descriptor = b'{"operation":"insert","schema_name":"s","table_name":"users"}'
    row = batch({"id": [9], "name": ["c"], "email": ["z"]})
    answer = dispatcher.put(Context.background(), descriptor, "", StaticInput(row.schema, [row]))
    assert DMLResponse.decode(answer).affected_rows == 1
    body = DeleteAction(schema_name="s", table_name="users", row_ids=[1, 2, 99]).encode()
    (result,) = dispatcher.action(Context.background(), "delete", body)
    assert DeleteActionResult.decode(result).affected_rows == 2  # rowid 99 is not there
    assert sorted(table.rows) == [3, 4, 5, 6]


def test_commit_hooks_count_only_when_they_return_an_int() -> None:
    from pyairport.statement_scope import Statement

    statement = Statement("s")
    statement.on_commit(lambda: None)
    statement.on_commit(lambda: 2)
    statement.on_commit(lambda: 3)
    statement.on_commit(lambda: [1])  # type: ignore[arg-type, return-value]
    statement.commit()
    assert statement.changed_rows == 5
    quiet = Statement("q")
    quiet.on_commit(lambda: None)
    quiet.commit()
    assert quiet.changed_rows is None


WIDTHS = [
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.float16(),
    pa.float32(),
    pa.float64(),
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.large_binary(),
]


def _extremes(data_type: pa.DataType) -> pa.Array:
    if pa.types.is_integer(data_type):
        info = np.iinfo(data_type.to_pandas_dtype())
        return pa.array([info.min, info.max, 0], data_type)
    if pa.types.is_floating(data_type):
        info = np.finfo(data_type.to_pandas_dtype())
        return pa.array(np.array([info.min, info.max, info.tiny, 0.1], info.dtype), data_type)
    return pa.array(
        ["", "é" * 40] if "string" in str(data_type) else [b"", b"\xff" * 40], data_type
    )


@pytest.mark.parametrize("got", WIDTHS, ids=str)
def test_a_column_type_said_to_always_fit_converts_every_value_exactly(got: pa.DataType) -> None:
    """input_columns_fit_table checks no batch of a type whose every value converts to the
    column's exactly (a widening): each such pair is tried on the type's extremes, and a
    pair that may lose a value is checked per batch."""
    from pyairport.dispatch.validation import _always_fits

    values = _extremes(got)
    for want in WIDTHS:
        if got.equals(want):
            continue
        if _always_fits(got, want):
            converted = values.cast(want, safe=True)
            assert converted.cast(got, safe=True).equals(values), (got, want)
        elif pa.types.is_integer(got) and pa.types.is_integer(want):
            with pytest.raises(pa.ArrowInvalid):
                values.cast(want, safe=True)  # the narrowing is checked: some value loses
