"""The memory backend against a plain-Python model: random statements, same answers.

Hypothesis drives INSERT / UPDATE / DELETE statements (batch and legacy methods, several
batches per statement, commit or rollback, RETURNING on or off) and compares every result
and the final table with a dict that does the same thing row by row."""

from __future__ import annotations

import datetime
import decimal
import gc
import math
import random
import threading
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from airport_contracts import (
    AddColumnOptions,
    Context,
    DMLOptions,
    DMLResult,
    ScanOptions,
    SchemaRequest,
    TimePoint,
    TimePointInvalid,
)
from pyairport import filters
from pyairport.backends.memory import committed as memory_committed
from pyairport.backends.memory import memory_table
from pyairport.backends.memory import patch as memory_patch
from pyairport.backends.memory import table as memory
from pyairport.backends.memory.compaction import COMPACTOR
from pyairport.statement_scope import Statement, with_statement

COLUMNS = pa.schema([("id", pa.int64()), ("name", pa.string())])
OPTS = DMLOptions(returning=True, returning_columns=["id", "name"])


def _reader(table: pa.Table, batch_rows: int) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(
        table.schema, table.to_batches(max_chunksize=batch_rows)
    )


class MemoryTableModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.table = memory_table("t", COLUMNS, id_from_rowid="id")
        self.model: dict[int, dict[str, Any]] = {}
        self.next_rowid = 1

    def _statement(self, commit: bool) -> tuple[Context, Statement]:
        statement = Statement("s")
        return with_statement(Context.background(), statement), statement

    def _finish(
        self,
        statement: Statement,
        commit: bool,
        staged: dict[int, dict[str, Any]],
        result: DMLResult | None = None,
        returned: list[dict[str, Any]] | None = None,
    ) -> None:
        """Check the RETURNING rows (when asked for), then commit or roll back."""
        if returned is not None:
            assert result is not None and result.returning_data is not None
            assert result.returning_data.read_all().to_pylist() == returned
        if commit:
            statement.commit()
            self.model = staged
        else:
            statement.rollback()

    @rule(
        names=st.lists(st.text(max_size=3), min_size=0, max_size=30),
        with_ids=st.booleans(),
        batch_rows=st.integers(1, 8),
        commit=st.booleans(),
        returning=st.booleans(),
    )
    def insert(
        self, names: list[str], with_ids: bool, batch_rows: int, commit: bool, returning: bool
    ) -> None:
        ids = [i * 10 if with_ids else None for i in range(len(names))]
        data = pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names, pa.string())})
        ctx, statement = self._statement(commit)
        result = self.table.insert(ctx, _reader(data, batch_rows), OPTS if returning else None)
        staged = dict(self.model)
        expected = []
        for i, name in enumerate(names):
            rowid = self.next_rowid + i
            row = {"id": ids[i] if ids[i] is not None else rowid, "name": name}
            staged[rowid] = row
            expected.append(row)
        self.next_rowid += len(names)
        assert result.affected_rows == len(names)
        self._finish(statement, commit, staged, result, expected if returning else None)

    @rule(
        data=st.data(),
        batch=st.booleans(),
        batch_rows=st.integers(1, 8),
        commit=st.booleans(),
        returning=st.booleans(),
        set_id=st.booleans(),
    )
    def update(
        self,
        data: st.DataObject,
        batch: bool,
        batch_rows: int,
        commit: bool,
        returning: bool,
        set_id: bool,
    ) -> None:
        candidates = sorted(self.model) + [self.next_rowid + 5]  # one rowid that names no row
        targets = data.draw(st.lists(st.sampled_from(candidates), max_size=12, unique=True))
        self.updates = getattr(self, "updates", 0) + 1
        names = [f"u{r}-{self.updates}" for r in targets]  # new values every statement
        ctx, statement = self._statement(commit)
        values = pa.table({"name": pa.array(names, pa.string())})
        if set_id:
            values = values.append_column("id", pa.array([r * 100 for r in targets], pa.int64()))
        ids = pa.array(targets, pa.int64())
        if batch:
            result = self.table.update_batch(
                ctx,
                _reader(values.append_column("rowid", ids), batch_rows),
                OPTS if returning else None,
            )
        else:
            result = self.table.update_by_row_ids(
                ctx, ids, _reader(values, batch_rows), OPTS if returning else None
            )
        staged = {k: dict(v) for k, v in self.model.items()}
        expected = []
        for rowid, name in zip(targets, names, strict=True):
            if rowid in staged:
                staged[rowid]["name"] = name
                if set_id:
                    staged[rowid]["id"] = rowid * 100
                expected.append(dict(staged[rowid]))
        assert result.affected_rows == len(expected)
        self._finish(statement, commit, staged, result, expected if returning else None)

    @rule(
        data=st.data(),
        batch=st.booleans(),
        batch_rows=st.integers(1, 8),
        commit=st.booleans(),
        returning=st.booleans(),
    )
    def delete(
        self, data: st.DataObject, batch: bool, batch_rows: int, commit: bool, returning: bool
    ) -> None:
        candidates = sorted(self.model) + [self.next_rowid + 5]
        targets = data.draw(st.lists(st.sampled_from(candidates), max_size=12, unique=True))
        ctx, statement = self._statement(commit)
        ids = pa.array(targets, pa.int64())
        if batch:
            result = self.table.delete_batch(
                ctx, _reader(pa.table({"rowid": ids}), batch_rows), OPTS if returning else None
            )
        else:
            result = self.table.delete_by_row_ids(ctx, ids, OPTS if returning else None)
        staged = dict(self.model)
        expected = [staged.pop(r) for r in targets if r in staged]
        assert result.affected_rows == len(expected)
        self._finish(statement, commit, staged, result, expected if returning else None)

    # An open statement that stays pending while others commit: its lookups go stale.
    @rule(data=st.data(), delete=st.booleans())
    def open_statement(self, data: st.DataObject, delete: bool) -> None:
        if getattr(self, "pending", None) is not None:
            return
        candidates = sorted(self.model) + [self.next_rowid + 5]
        targets = data.draw(st.lists(st.sampled_from(candidates), max_size=12, unique=True))
        ctx, statement = self._statement(True)
        ids = pa.array(targets, pa.int64())
        if delete:
            self.table.delete_by_row_ids(ctx, ids, None)
        else:
            self.table.update_by_row_ids(
                ctx, ids, _reader(pa.table({"name": [f"late{r}" for r in targets]}), 4), None
            )
        self.pending = (statement, delete, targets)

    @rule(commit=st.booleans())
    def close_statement(self, commit: bool) -> None:
        if getattr(self, "pending", None) is None:
            return
        statement, delete, targets = self.pending
        self.pending = None
        staged = {k: dict(v) for k, v in self.model.items()}
        for rowid in targets:  # applied to the rows that exist at commit time
            if rowid in staged:
                if delete:
                    del staged[rowid]
                else:
                    staged[rowid]["name"] = f"late{rowid}"
        self._finish(statement, commit, staged)

    # Reading writes pending UPDATE values into the columns, so the table is read only when
    # hypothesis chooses to (and at the end): runs of statements meet a pending patch.
    @rule()
    def same_rows(self) -> None:
        rows = self.table.to_table().to_pylist()
        assert [r["rowid"] for r in rows] == sorted(self.model)
        assert {r["rowid"]: {"id": r["id"], "name": r["name"]} for r in rows} == self.model

    def teardown(self) -> None:
        self.same_rows()


MemoryTableModel.TestCase.settings = settings(
    max_examples=60, stateful_step_count=25, deadline=None
)
test_memory_table_matches_the_model = MemoryTableModel.TestCase


def test_concurrent_statements_commit_in_any_order() -> None:
    """Statements that allocate rowids in one order and commit in another stay sorted and
    findable (the out-of-order commit path)."""
    table = memory_table("t", COLUMNS)
    first, second = Statement("a"), Statement("b")
    ctx_a, ctx_b = (
        with_statement(Context.background(), first),
        with_statement(Context.background(), second),
    )
    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]})
    table.insert(ctx_a, _reader(rows, 1), None)  # rowids 1, 2
    table.insert(ctx_b, _reader(rows, 1), None)  # rowids 3, 4
    second.commit()
    first.commit()
    assert table.to_table().column("rowid").to_pylist() == [1, 2, 3, 4]
    table.delete_by_row_ids(Context.background(), pa.array([2, 3], pa.int64()), None)
    assert table.to_table().column("rowid").to_pylist() == [1, 4]


def test_many_small_statements_stay_compact_and_correct() -> None:
    table = memory_table("t", COLUMNS)
    for i in range(600):
        table.insert(
            Context.background(),
            _reader(pa.table({"id": pa.array([i], pa.int64()), "name": [str(i)]}), 1),
            None,
        )
    assert COMPACTOR.wait_idle(10)  # off the statements' path, the chunks were merged
    data = table.to_table()
    assert data.num_rows == 600 and data.column(0).num_chunks < 256
    result = table.update_by_row_ids(
        Context.background(),
        pa.array([1, 600], pa.int64()),
        _reader(pa.table({"name": ["x", "y"]}), 1),
        OPTS,
    )
    assert result.returning_data is not None and result.returning_data.read_all().to_pylist() == [
        {"id": 0, "name": "x"},
        {"id": 599, "name": "y"},
    ]


def test_parallel_writers_lose_nothing() -> None:
    table = memory_table("t", COLUMNS)

    def writer(k: int) -> None:
        for j in range(50):
            statement = Statement(f"{k}-{j}")
            ctx = with_statement(Context.background(), statement)
            table.insert(
                ctx,
                _reader(
                    pa.table({"id": pa.array([k * 1000 + j] * 3, pa.int64()), "name": ["n"] * 3}), 2
                ),
                None,
            )
            statement.commit()

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    data = table.to_table()
    assert data.num_rows == 8 * 50 * 3
    assert data.column("rowid").to_pylist() == sorted(set(data.column("rowid").to_pylist()))


def test_a_statement_left_open_while_another_deletes_applies_to_the_right_rows() -> None:
    table = memory_table(
        "t",
        COLUMNS,
        rows=pa.table({"id": pa.array(range(1, 6), pa.int64()), "name": list("abcde")}),
    )
    late = Statement("late")
    ctx = with_statement(Context.background(), late)
    table.update_by_row_ids(
        ctx, pa.array([4], pa.int64()), _reader(pa.table({"name": ["D"]}), 1), None
    )
    table.delete_by_row_ids(
        Context.background(), pa.array([1, 2], pa.int64()), None
    )  # shifts row 4 left
    late.commit()
    assert table.to_table().select(["rowid", "name"]).to_pylist() == [
        {"rowid": 3, "name": "c"},
        {"rowid": 4, "name": "D"},
        {"rowid": 5, "name": "e"},
    ]


def _names(n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64()), "name": [f"n{i}" for i in range(n)]})


def test_deleted_rows_stay_deleted_through_inserts_updates_and_compaction() -> None:
    """DELETE marks rows dead; every later read, lookup, update and the compaction that
    drops dead rows once half the table is dead must agree with a plain model."""
    table = memory_table("t", COLUMNS, rows=_names(10))
    model = {r["rowid"]: r["name"] for r in table.to_table().to_pylist()}

    def delete(*rowids: int) -> int:
        result = table.delete_by_row_ids(Context.background(), pa.array(rowids, pa.int64()), None)
        for r in rowids:
            model.pop(r, None)
        return result.affected_rows

    assert delete(2, 3, 2) == 2  # a repeated rowid counts once
    assert delete(3) == 0  # already dead: not found
    assert table.num_rows == 8
    table.insert(Context.background(), _reader(_names(2), 1), None)  # rowids 11, 12
    model.update({11: "n0", 12: "n1"})
    result = table.update_by_row_ids(
        Context.background(),
        pa.array([3, 4, 12], pa.int64()),
        _reader(pa.table({"name": ["dead", "four", "twelve"]}), 2),
        OPTS,
    )
    assert result.affected_rows == 2  # rowid 3 is dead
    model.update({4: "four", 12: "twelve"})
    assert delete(1, 4, 5, 6, 7) == 5  # now more than half is dead: compacted
    expected = [{"rowid": r, "name": n} for r, n in sorted(model.items())]
    assert table.to_table().select(["rowid", "name"]).to_pylist() == expected
    assert table.num_rows == len(model)
    assert delete(8) == 1 and delete(8) == 0


def test_a_statement_counts_each_row_it_deletes_or_updates_across_its_batches() -> None:
    """Without RETURNING a statement's rowids are looked up once, after its last batch: a
    rowid sent in two batches of a DELETE is one deleted row; an UPDATE's later value wins;
    rowids of consecutive rows are read back as a slice with RETURNING, others one by one."""
    table = memory_table("t", COLUMNS, rows=_names(6))  # rowids 1..6
    deleted = table.delete_batch(
        Context.background(),
        _reader(pa.table({"rowid": pa.array([2, 3, 3, 9], pa.int64())}), 2),
        None,
    )
    assert deleted.affected_rows == 2
    values = pa.table({"name": ["a", "b", "c"], "rowid": pa.array([4, 5, 4], pa.int64())})
    assert table.update_batch(Context.background(), _reader(values, 1), None).affected_rows == 3
    assert table.to_table().select(["rowid", "name"]).to_pylist() == [
        {"rowid": r, "name": n} for r, n in ((1, "n0"), (4, "c"), (5, "b"), (6, "n5"))
    ]
    for rowids in ([4, 5, 6], [6, 1, 5]):  # a run of rows, then rows out of order
        values = pa.table({"name": ["x"] * 3, "rowid": pa.array(rowids, pa.int64())})
        result = table.update_batch(Context.background(), _reader(values, 3), OPTS)
        assert result.returning_data is not None
        before = {1: 0, 4: 3, 5: 4, 6: 5}
        assert result.returning_data.read_all().to_pylist() == [
            {"id": before[r], "name": "x"} for r in rowids
        ]


def test_an_update_naming_a_column_the_table_lacks_or_twice_changes_nothing() -> None:
    """Called directly (the dispatcher refuses such input first), the table refuses it too."""
    table = memory_table("t", COLUMNS, rows=_names(2))
    before = table.to_table()
    rowids = pa.array([1, 2], pa.int64())
    for values, message in (
        (pa.table({"nope": ["a", "b"]}), "column nope not found in table schema"),
        (pa.table([["a", "b"], ["c", "d"]], names=["name", "name"]), "column name appears twice"),
    ):
        with pytest.raises(ValueError, match=message):
            table.update_by_row_ids(Context.background(), rowids, _reader(values, 1), None)
        assert table.to_table().equals(before)


def test_a_scan_joins_small_chunks_and_leaves_out_deleted_and_filtered_rows() -> None:
    """DuckDB's 2,048-row INSERTs stay small chunks until the compactor merges them: a scan
    sends runs of them as batches of at least half SCAN_BATCH_ROWS (a large chunk as it is),
    the deletion mask and the pushed-down filter applied across the joined chunks."""
    table = memory_table("t", COLUMNS)
    sizes = [1000] * 20 + [40_000] + [1000] * 20  # 41 chunks, below the compactor's threshold
    start = 0
    for size in sizes:
        rows = pa.table(
            {"id": pa.array(range(start, start + size), pa.int64()), "name": ["n"] * size}
        )
        table.insert(Context.background(), _reader(rows, size), None)
        start += size
    dead = pa.array(range(1, start + 1, 7), pa.int64())  # rowids start at 1: id = rowid - 1
    table.delete_by_row_ids(Context.background(), dead, None)
    above = filters.to_json(filters.Compare("id", ">", 500), table.schema)  # DuckDB's JSON
    batches = list(table.scan(Context.background(), ScanOptions(filter=above)))
    kept = [i for i in range(start) if i > 500 and i % 7 != 0]
    # the 20 small chunks before the large one as one batch, the large one, the 20 after it
    assert [b.num_rows for b in batches] == [
        sum(1 for i in kept if low <= i < high)
        for low, high in ((0, 20_000), (20_000, 60_000), (60_000, 80_000))
    ]
    scanned = pa.Table.from_batches(batches).column("id").to_pylist()
    assert scanned == kept
    # the columns DuckDB asks for, and the rowid; the others null (a count(*) sends rowids)
    only_names = pa.Table.from_batches(
        table.scan(Context.background(), ScanOptions(columns=["name"]))
    )
    assert only_names.schema == table.schema
    live = [i + 1 for i in range(start) if i % 7 != 0]  # rowids of the rows not deleted
    assert only_names.column("rowid").to_pylist() == live
    assert only_names.column("id").null_count == len(live)
    assert only_names.column("name").null_count == 0


@pytest.mark.parametrize(
    "column",
    [
        pa.field("s", pa.struct([("a", pa.int64())])),
        pa.field("l", pa.list_(pa.int64())),
        pa.field("d", pa.dictionary(pa.int32(), pa.string())),
        pa.field("u", pa.uuid()),
        pa.field("t", pa.string()),
        pa.field("du", pa.duration("us")),
        pa.field("dec", pa.decimal64(12, 2)),
    ],
    ids=lambda f: str(f.type),
)
def test_updated_values_of_every_type_read_back_before_and_after_compaction(
    column: pa.Field,
) -> None:
    """An UPDATE's values stay a patch over the columns until compaction writes them in: a
    RETURNING statement reads the patched rows back through it (Arrow's mask kernel has no
    nested, dictionary, extension, duration or 64-bit decimal types: those take the general
    path), and writing the patch in — consecutive rows, scattered rows — gives the same
    rows."""
    values = {
        "struct<a: int64>": [{"a": i} for i in range(6)],
        "list<item: int64>": [[i, i] for i in range(6)],
        "dictionary<values=string, indices=int32, ordered=0>": [f"v{i % 2}" for i in range(6)],
        "extension<arrow.uuid>": [bytes([i]) * 16 for i in range(6)],
        "string": [f"s{i}" for i in range(6)],
        "duration[us]": [datetime.timedelta(seconds=i) for i in range(6)],
        "decimal64(12, 2)": [decimal.Decimal(f"{i}.25") for i in range(6)],
    }[str(column.type)]
    schema = pa.schema([pa.field("id", pa.int64()), column])
    rows = pa.table({"rowid": pa.array(range(1, 7), pa.int64()), "id": range(6)})
    seeded = pa.array(values, column.type)
    table = memory_table("t", schema, rows=rows.append_column(column, seeded))
    new = seeded.take([5, 0, 5])
    for rowids in ([2, 3, 4], [1, 3, 6]):  # consecutive rows, then scattered ones
        update = pa.table({column.name: new, "rowid": pa.array(rowids, pa.int64())})
        table.update_batch(Context.background(), _reader(update, 3), None)
    # rowids 1..6 now hold: new[0], new[0], new[1], new[2], the seeded values[4], new[2]
    expected = [new[0].as_py(), new[0].as_py(), new[1].as_py(), new[2].as_py(), seeded[4].as_py()]
    expected.append(new[2].as_py())
    returning = DMLOptions(returning=True, returning_columns=["id", column.name])
    update = pa.table({"id": [10, 11, 12], "rowid": pa.array([1, 5, 6], pa.int64())})
    result = table.update_batch(Context.background(), _reader(update, 3), returning)
    assert result.returning_data is not None  # rowid 5 unpatched: patched rows 1 and 3 of 3
    assert result.returning_data.read_all().column(column.name).to_pylist() == [
        expected[0],
        expected[4],
        expected[5],
    ]
    assert table.to_table().column(column.name).to_pylist() == expected  # the patch written in


def test_an_out_of_order_commit_after_deletes_keeps_the_right_rows_dead() -> None:
    table = memory_table("t", COLUMNS, rows=_names(4))  # rowids 1..4
    early = Statement("early")
    table.insert(with_statement(Context.background(), early), _reader(_names(1), 1), None)  # 5
    table.insert(Context.background(), _reader(_names(1), 1), None)  # 6, committed first
    table.delete_by_row_ids(Context.background(), pa.array([2, 6], pa.int64()), None)
    early.commit()  # rowid 5 lands before 6: the table is re-sorted
    assert table.to_table().column("rowid").to_pylist() == [1, 3, 4, 5]


def test_an_update_rewrites_only_the_chunks_it_touches() -> None:
    table = memory_table("t", COLUMNS)
    for _ in range(3):  # three statements: three chunks
        table.insert(Context.background(), _reader(_names(100), 100), None)
    before = table.to_table().column("name").chunks
    table.update_by_row_ids(
        Context.background(),
        pa.array([150, 150], pa.int64()),  # repeated: the last value wins
        _reader(pa.table({"name": ["first", "last"]}), 2),
        None,
    )
    after = table.to_table().column("name").chunks
    assert len(after) == 3

    def data_address(chunk: pa.Array) -> int:
        return int(chunk.buffers()[2].address)  # the string bytes

    # chunks 0 and 2 are the same memory (not copied); chunk 1 was rewritten
    assert data_address(after[0]) == data_address(before[0])
    assert data_address(after[2]) == data_address(before[2])
    assert data_address(after[1]) != data_address(before[1])
    assert table.to_table().to_pylist()[149]["name"] == "last"


def test_a_long_run_of_single_row_updates_keeps_the_patch_small_and_the_last_values() -> None:
    """DuckDB sends each single-row UPDATE as a statement of its own. Their values are merged
    in the patch (never read in between here, so never written into the columns): each
    column keeps at most 1 + log2(rows) runs however long the run is, so a RETURNING lookup
    stays cheap, and every row reads its last value, also where the columns alternate."""
    rows = 100
    table = _seeded(list(range(1, rows + 1)))
    model = {r: {"id": r, "name": f"r{r}"} for r in range(1, rows + 1)}
    rng = random.Random(7)
    for i in range(2000):
        rowid = rng.randint(1, rows)
        column, value = ("id", i) if i % 3 == 0 else ("name", f"v{i}")
        model[rowid][column] = value
        result = table.update_by_row_ids(
            Context.background(),
            pa.array([rowid], pa.int64()),
            _reader(pa.table({column: pa.array([value], COLUMNS.field(column).type)}), 1),
            OPTS,
        )
        assert result.returning_data is not None
        assert result.returning_data.read_all().to_pylist() == [model[rowid]]
    runs = table.store.patch.columns
    assert set(runs) == {"id", "name"}
    assert all(len(column_runs) <= 1 + math.log2(rows) for column_runs in runs.values())
    found = {r["rowid"]: {"id": r["id"], "name": r["name"]} for r in table.to_table().to_pylist()}
    assert found == model
    assert not table.store.patch.columns  # reading wrote the patch into the columns


def test_large_updates_keep_their_runs_until_there_are_too_many(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A large UPDATE's values are not merged into the patch (that would cost the UPDATE the
    patch's size); once a column has more than _MAX_RUNS runs, the patch is written into
    the columns. (The limits are lowered so that 10-row UPDATEs count as large.)"""
    monkeypatch.setattr(memory_patch, "_RUN_MERGE_ROWS", 8)
    monkeypatch.setattr(memory_committed, "_MAX_RUNS", 3)
    table = _seeded(list(range(1, 101)))
    for i in range(4):
        rowids = list(range(10 * i + 1, 10 * i + 11))
        result = table.update_by_row_ids(
            Context.background(),
            pa.array(rowids, pa.int64()),
            _reader(pa.table({"name": [f"s{i}-{r}" for r in rowids]}), 10),
            OPTS,
        )
        assert result.returning_data is not None
        assert result.returning_data.read_all().column("name").to_pylist() == [
            f"s{i}-{r}" for r in rowids
        ]
        runs = table.store.patch.columns.get("name", ())
        assert len(runs) == (i + 1 if i < 3 else 0)  # the fourth run is one too many
    names = table.to_table().column("name").to_pylist()
    assert names[:40] == [f"s{r // 10}-{r + 1}" for r in range(40)]
    assert names[40:] == [f"r{r}" for r in range(41, 101)]


def test_single_row_statements_interleaved_find_the_right_rows() -> None:
    """INSERT, UPDATE and DELETE one row at a time, as DuckDB sends them, through the chunk
    compaction and the dead-row compaction: every RETURNING row and the final table match a
    plain model. Between those compactions, an INSERT extends the rowid index in place
    rather than have the next UPDATE rebuild it from the column."""
    table = memory_table("t", COLUMNS)
    table.insert(Context.background(), _reader(_names(50), 50), None)  # rowids 1..50
    model = {r: {"id": r - 1, "name": f"n{r - 1}"} for r in range(1, 51)}
    rng = random.Random(11)
    next_rowid, extended_in_place = 51, 0
    for i in range(600):
        before = table.store.rowid_buffer
        row = pa.table({"id": pa.array([1000 + i], pa.int64()), "name": [f"i{i}"]})
        table.insert(Context.background(), _reader(row, 1), None)
        model[next_rowid] = {"id": 1000 + i, "name": f"i{i}"}
        next_rowid += 1
        if before is not None and table.store.rowid_buffer is before:
            extended_in_place += 1
        target = rng.choice(sorted(model))
        model[target]["name"] = f"u{i}"
        updated = table.update_by_row_ids(
            Context.background(),
            pa.array([target], pa.int64()),
            _reader(pa.table({"name": [f"u{i}"]}), 1),
            OPTS,
        )
        assert updated.returning_data is not None
        assert updated.returning_data.read_all().to_pylist() == [model[target]]
        if i % 3:  # the table keeps growing, so chunks pile up; a third as many die
            continue
        gone = rng.choice(sorted(model))
        deleted = table.delete_by_row_ids(Context.background(), pa.array([gone], pa.int64()), OPTS)
        assert deleted.returning_data is not None
        assert deleted.returning_data.read_all().to_pylist() == [model.pop(gone)]
    assert COMPACTOR.wait_idle(10)  # off the statements' path, the chunks were merged
    data = table.to_table()
    assert data.column(0).num_chunks < 256
    found = {r["rowid"]: {"id": r["id"], "name": r["name"]} for r in data.to_pylist()}
    assert found == model
    assert extended_in_place > 500


def test_compacting_chunks_copies_only_the_small_ones_at_the_end() -> None:
    """Many single-row INSERTs leave one chunk each; when they pile up, only those small
    chunks are combined: a large chunk before them keeps its memory (O(small rows), not
    O(table))."""
    table = memory_table("t", COLUMNS)
    table.insert(Context.background(), _reader(_names(20_000), 20_000), None)
    first = table.to_table().column("name").chunk(0).buffers()[2].address
    for i in range(300):
        row = pa.table({"id": pa.array([i], pa.int64()), "name": [f"s{i}"]})
        table.insert(Context.background(), _reader(row, 1), None)
    assert COMPACTOR.wait_idle(10)  # off the statements' path (a busy machine may not have yet)
    data = table.to_table()
    assert data.column("name").num_chunks < 256
    assert data.column("name").chunk(0).buffers()[2].address == first
    assert data.column("rowid").to_pylist() == list(range(1, 20_301))
    assert data.column("name").to_pylist()[-300:] == [f"s{i}" for i in range(300)]


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _seeded(rowids: list[int]) -> Any:
    names = [f"r{r}" for r in rowids]
    rows = pa.table({"rowid": pa.array(rowids, pa.int64()), "id": pa.array(rowids), "name": names})
    return memory_table("t", COLUMNS, rows=rows)


def test_rowids_are_found_with_and_without_gaps_and_at_the_ends_of_int64() -> None:
    """Rowids without a gap are found by their offset, others by a search: both find exactly
    the rows there are, also for rowids at the limits of int64."""
    asked = [INT64_MIN, INT64_MIN + 1, -1, 0, 4, 5, 6, 7, 8, 9, 10, INT64_MAX - 1, INT64_MAX]
    for rowids in ([5, 6, 7], [9, 5, 7], [INT64_MAX - 2, INT64_MAX - 1, INT64_MAX], [-3, -2]):
        table = _seeded(rowids)
        assert table.to_table().column("rowid").to_pylist() == sorted(rowids)
        result = table.delete_by_row_ids(Context.background(), pa.array(asked, pa.int64()), None)
        assert result.affected_rows == len(set(asked) & set(rowids)), rowids
        assert table.to_table().column("rowid").to_pylist() == sorted(set(rowids) - set(asked))


def test_seed_rows_must_name_each_rowid_once() -> None:
    with pytest.raises(ValueError, match="seed rows repeat rowid 5"):
        _seeded([7, 5, 5])
    with pytest.raises(ValueError, match="seed rows have a null rowid"):
        memory_table(
            "t",
            COLUMNS,
            rows=pa.table(
                {"rowid": pa.array([1, None], pa.int64()), "id": [1, 2], "name": ["a", "b"]}
            ),
        )


def _delete(table: Any, *rowids: int) -> None:
    table.delete_by_row_ids(Context.background(), pa.array(rowids, pa.int64()), None)


def test_a_delete_marks_the_mask_in_place_while_no_scan_reads_it() -> None:
    """A single-row DELETE costs O(1), not a copy of a mask as long as the table; an INSERT
    after it extends the mask in place too."""
    table = memory_table("t", COLUMNS, rows=_names(1000))
    _delete(table, 1)
    mask, buffer = table.store.mask, table.store.mask.buffer
    for rowid in range(2, 200):
        _delete(table, rowid)
        table.insert(Context.background(), _reader(_names(1), 1), None)
    assert table.store.mask is mask and table.store.mask.buffer is buffer
    assert table.num_rows == 1000 - 199 + 198
    assert table.to_table().column("rowid").to_pylist() == [*range(200, 1001), *range(1001, 1199)]


def test_a_scan_sees_the_rows_as_they_were_when_it_began() -> None:
    """Rows deleted while a scan is being read (one statement deletes a row the scan has
    passed and one it has not) are either both in what it returns or neither: it reads a
    mask no DELETE changes."""
    table = memory_table("t", COLUMNS, rows=_names(3 * memory.SCAN_BATCH_ROWS))
    _delete(table, 10)  # the table has a mask before the scan begins
    reader = table.scan(Context.background())
    first = reader.read_next_batch()
    last_rowid = 3 * memory.SCAN_BATCH_ROWS
    _delete(table, 5, last_rowid)
    rest = [reader.read_next_batch() for _ in range(2)]
    with pytest.raises(StopIteration):
        reader.read_next_batch()
    scanned = pa.Table.from_batches([first, *rest]).column("rowid").to_pylist()
    assert 5 in scanned and last_rowid in scanned and 10 not in scanned
    assert len(scanned) == last_rowid - 1
    after = table.to_table().column("rowid").to_pylist()
    assert 5 not in after and last_rowid not in after and len(after) == last_rowid - 3
    # a scan read to its end no longer holds the mask: the next DELETE marks it in place
    mask = table.store.mask
    assert table.scan(Context.background()).read_all().num_rows == last_rowid - 3
    _delete(table, 7)
    assert table.store.mask is mask


def test_a_scan_given_up_half_way_lets_deletes_mark_in_place_again() -> None:
    table = memory_table("t", COLUMNS, rows=_names(2 * memory.SCAN_BATCH_ROWS))
    _delete(table, 1)
    reader = table.scan(Context.background())
    reader.read_next_batch()
    del reader
    gc.collect()
    mask = table.store.mask
    _delete(table, 2)
    assert table.store.mask is mask


def test_a_failed_insert_leaves_the_mask_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    """An INSERT extends the mask in place; when a later step of the commit fails, the
    extension is taken back and the table is as it was."""
    table = memory_table("t", COLUMNS, rows=_names(10))
    _delete(table, 3)  # a mask, and the rowid index an INSERT extends after the mask
    extended = memory_committed.extended

    def rowid_index_fails(front: Any, buffer: Any, added: Any) -> Any:
        if added.dtype == np.int64:
            raise MemoryError("no room for the rowid index")
        return extended(front, buffer, added)

    monkeypatch.setattr(memory_committed, "extended", rowid_index_fails)
    with pytest.raises(MemoryError):
        table.insert(Context.background(), _reader(_names(4), 4), None)
    monkeypatch.undo()
    assert table.num_rows == 9
    assert table.to_table().column("rowid").to_pylist() == [1, 2, *range(4, 11)]
    table.insert(Context.background(), _reader(_names(2), 2), None)  # 11-14 were allocated
    _delete(table, 15)
    assert table.to_table().column("rowid").to_pylist() == [1, 2, *range(4, 11), 16]


def _at(table: Any, version: int | str, unit: str = "version") -> list[Any]:
    point = TimePoint(unit=unit, value=str(version))
    rows = table.scan(Context.background(), ScanOptions(time_point=point)).read_all()
    return rows.select([n for n in rows.column_names if n != "rowid"]).to_pylist()


def test_time_travel_reads_each_kept_version() -> None:
    """Version 0 is the table as created; each committed statement or column change is the
    next, as Delta numbers its commits; deletes marked in place later are undone."""
    table = memory_table("t", COLUMNS, rows=_names(3))
    before = datetime.datetime.now(datetime.UTC)
    _delete(table, 1)
    table.add_column(Context.background(), pa.schema([("age", pa.int32())]), AddColumnOptions())
    _delete(table, 2)
    assert [len(_at(table, v)) for v in range(4)] == [3, 2, 2, 1]
    assert "age" not in _at(table, 1)[0] and _at(table, 2)[0]["age"] is None
    request = SchemaRequest(time_point=TimePoint(unit="version", value="1"))
    assert table.schema_for_request(Context.background(), request).names == ["rowid", "id", "name"]
    assert len(_at(table, before.isoformat(), "timestamp")) == 3
    with pytest.raises(TimePointInvalid, match="version 9 does not exist"):
        _at(table, 9)


def test_time_travel_keeps_a_bounded_number_of_versions() -> None:
    table = memory_table("t", COLUMNS, rows=_names(3), versions_kept=2)
    _delete(table, 1)
    _delete(table, 2)
    assert len(_at(table, 2)) == 1 and len(_at(table, 1)) == 2
    with pytest.raises(TimePointInvalid, match="version 0 is no longer kept"):
        _at(table, 0)


def test_time_travel_holds_few_copies_of_the_storage() -> None:
    """Versions on storages a compaction or column change replaced are released beyond the
    last three storages: the history never holds more than a few copies of the table."""
    table = memory_table("t", COLUMNS, rows=_names(10))
    for n in range(6):  # each column change writes the columns anew
        table.add_column(
            Context.background(), pa.schema([(f"c{n}", pa.int8())]), AddColumnOptions()
        )
    kept = [v.generation for v in table.store.history._kept]
    assert len(set(kept)) <= 3 and len(kept) < 7
    _at(table, 6)
    with pytest.raises(TimePointInvalid, match="no longer kept"):
        _at(table, 0)
