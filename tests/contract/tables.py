"""Small tables for the contract tests: one mixin per capability interface, so a test can
build any combination of the compatibility matrix. Deliberately simple (a dict of rows):
these check the dispatchers, not storage."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from airport_contracts import (
    Context,
    DMLOptions,
    DMLResult,
    ScanOptions,
    find_rowid_column,
    project_schema,
    rowid_field,
)

USERS_SCHEMA = pa.schema(
    [
        rowid_field(),
        pa.field("id", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("email", pa.string()),
    ]
)


class BaseTable:
    """Table: name, comment, arrow_schema, scan. Rows keyed by rowid."""

    def __init__(self, name: str = "users", rows: Iterable[dict[str, Any]] = ()) -> None:
        self._name = name
        self.rows: dict[int, dict[str, Any]] = {}
        self.calls: list[str] = []
        self.options: list[DMLOptions | None] = []
        for row in rows:
            self.rows[row["rowid"]] = {k: v for k, v in row.items() if k != "rowid"}
        self.next_rowid = max(self.rows, default=0) + 1

    def name(self) -> str:
        return self._name

    def comment(self) -> str:
        return "test table"

    def arrow_schema(self, columns: list[str] | None = None) -> pa.Schema:
        return project_schema(USERS_SCHEMA, columns or [])

    def scan(self, ctx: Context, opts: ScanOptions | None = None) -> pa.RecordBatchReader:
        ctx.raise_if_done()
        table = pa.Table.from_pylist(
            [{"rowid": k, **v} for k, v in sorted(self.rows.items())], schema=USERS_SCHEMA
        )
        return pa.RecordBatchReader.from_batches(USERS_SCHEMA, table.to_batches())

    def _record(self, method: str, opts: DMLOptions | None) -> None:
        self.calls.append(method)
        self.options.append(opts)

    def _returning(
        self, rows: list[dict[str, Any]], opts: DMLOptions | None
    ) -> pa.RecordBatchReader | None:
        if opts is None or not opts.returning:
            return None
        schema = project_schema(USERS_SCHEMA, opts.returning_columns)
        table = pa.Table.from_pylist(rows, schema=schema)
        return pa.RecordBatchReader.from_batches(schema, table.to_batches())


class Insertable:
    def insert(
        self: Any, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        self._record("insert", opts)
        inserted = []
        for batch in rows:
            ctx.raise_if_done()
            for row in batch.to_pylist():
                rowid = self.next_rowid
                self.next_rowid += 1
                if row.get("id") is None:
                    row["id"] = rowid
                self.rows[rowid] = {k: row.get(k) for k in ("id", "name", "email")}
                inserted.append(self.rows[rowid])
        return DMLResult(
            affected_rows=len(inserted), returning_data=self._returning(inserted, opts)
        )


class BatchUpdatable:
    def update_batch(
        self: Any, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        self._record("update_batch", opts)
        index = find_rowid_column(rows.schema)
        if index < 0:
            raise ValueError("UPDATE requires rowid column")
        changed = []
        for batch in rows:
            ctx.raise_if_done()
            names = batch.schema.names
            for row in batch.to_pylist():
                rowid = row[names[index]]
                if rowid in self.rows:
                    self.rows[rowid].update({k: v for k, v in row.items() if k != names[index]})
                    changed.append(self.rows[rowid])
        return DMLResult(affected_rows=len(changed), returning_data=self._returning(changed, opts))


class LegacyUpdatable:
    def update_by_row_ids(
        self: Any,
        ctx: Context,
        row_ids: pa.Int64Array,
        rows: pa.RecordBatchReader,
        opts: DMLOptions | None,
    ) -> DMLResult:
        self._record("update_by_row_ids", opts)
        ids = row_ids.to_pylist()
        changed, position = [], 0
        for batch in rows:
            ctx.raise_if_done()
            for row in batch.to_pylist():
                rowid = ids[position]
                position += 1
                if rowid in self.rows:
                    self.rows[rowid].update(row)
                    changed.append(self.rows[rowid])
        return DMLResult(affected_rows=len(changed), returning_data=self._returning(changed, opts))


class BatchDeletable:
    def delete_batch(
        self: Any, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        self._record("delete_batch", opts)
        index = find_rowid_column(rows.schema)
        if index < 0:
            raise ValueError("DELETE requires rowid column")
        removed = []
        for batch in rows:
            ctx.raise_if_done()
            for rowid in batch.column(index).to_pylist():
                if rowid in self.rows:
                    removed.append(self.rows.pop(rowid))
        return DMLResult(affected_rows=len(removed), returning_data=self._returning(removed, opts))


class LegacyDeletable:
    def delete_by_row_ids(
        self: Any, ctx: Context, row_ids: pa.Int64Array, opts: DMLOptions | None
    ) -> DMLResult:
        self._record("delete_by_row_ids", opts)
        ctx.raise_if_done()
        removed = [self.rows.pop(r) for r in row_ids.to_pylist() if r in self.rows]
        return DMLResult(affected_rows=len(removed), returning_data=self._returning(removed, opts))


CAPABILITY_MIXINS: dict[str, type] = {
    "InsertableTable": Insertable,
    "UpdatableBatchTable": BatchUpdatable,
    "UpdatableTable": LegacyUpdatable,
    "DeletableBatchTable": BatchDeletable,
    "DeletableTable": LegacyDeletable,
}


def make_table(*interfaces: str, rows: Iterable[dict[str, Any]] = ()) -> Any:
    """A table implementing exactly the named capability interfaces."""
    bases = tuple(CAPABILITY_MIXINS[name] for name in interfaces) + (BaseTable,)
    cls = type("Table_" + "_".join(interfaces), bases, {})
    return cls(rows=rows)


def seed(n: int) -> list[dict[str, Any]]:
    return [
        {"rowid": i, "id": i, "name": f"user{i}", "email": f"user{i}@example.com"}
        for i in range(1, n + 1)
    ]


class Schema:
    def __init__(self, name: str, tables: dict[str, Any]) -> None:
        self._name = name
        self._tables = tables

    def name(self) -> str:
        return self._name

    def comment(self) -> str:
        return ""

    def tables(self, ctx: Context) -> list[Any]:
        return list(self._tables.values())

    def table(self, ctx: Context, name: str) -> Any:
        return self._tables.get(name)


class Catalog:
    def __init__(self, schemas: dict[str, dict[str, Any]]) -> None:
        self._schemas = {name: Schema(name, tables) for name, tables in schemas.items()}

    def schemas(self, ctx: Context) -> list[Schema]:
        return list(self._schemas.values())

    def schema(self, ctx: Context, name: str) -> Schema | None:
        return self._schemas.get(name)
