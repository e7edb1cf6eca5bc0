"""The memory backend's catalog (protocol §5): a catalog that creates and drops schemas, and
schemas that create, drop and rename memory tables."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from airport_contracts import (
    AlreadyExists,
    Context,
    CreateSchemaOptions,
    CreateTableOptions,
    DropSchemaOptions,
    DropTableOptions,
    RenameTableOptions,
    SchemaNotEmpty,
    Table,
    Unimplemented,
)

from ...catalog import CatalogSchema, MutableCatalog
from ..capabilities import ALL_CAPABILITIES
from ..ddl_rules import (
    check_new_schema,
    check_new_table_name,
    created_columns,
    kept_on_conflict,
    missing,
    other_case_kept,
)
from .table import memory_table

TableMaker = Callable[[str, pa.Schema, str], Table]


class MemorySchema(CatalogSchema):
    """A schema of memory tables that creates, drops and renames them (DynamicSchema)."""

    def __init__(self, name: str, comment: str = "", make_table: TableMaker | None = None) -> None:
        super().__init__(name, comment)
        self._make_table = make_table or _new_memory_table

    def create_table(
        self, ctx: Context, name: str, schema: pa.Schema, opts: CreateTableOptions
    ) -> Table:
        if opts.unique_constraints or opts.check_constraints:
            # Nothing here would enforce them: refuse rather than accept rows they forbid.
            raise Unimplemented("the memory backend does not enforce UNIQUE or CHECK constraints")
        columns = created_columns(schema, opts)
        other = other_case_kept(self, ctx, name, opts)
        if other is not None:
            return other
        with self._lock:
            existing = self._tables.get(name)
            if existing is not None and kept_on_conflict(existing, name, opts):
                return existing
            table = self._make_table(name, columns, "")
            self._tables[name] = table
        self.on_change()
        return table

    def drop_table(self, ctx: Context, name: str, opts: DropTableOptions) -> None:
        with self._lock:
            if name not in self._tables:
                return missing("table", name, opts.ignore_not_found)
            del self._tables[name]
        self.on_change()

    def rename_table(
        self, ctx: Context, old_name: str, new_name: str, opts: RenameTableOptions
    ) -> None:
        if self.table(ctx, old_name) is not None:
            check_new_table_name(self, ctx, old_name, new_name)
        with self._lock:
            table = self._tables.get(old_name)
            if table is None:
                return missing("table", old_name, opts.ignore_not_found)
            if new_name in self._tables:
                raise AlreadyExists(f"table {new_name!r} already exists")
            rename = getattr(table, "rename", None)
            if not callable(rename):
                raise Unimplemented("this table cannot be renamed")
            rename(new_name)
            self._tables[new_name] = self._tables.pop(old_name)
        self.on_change()


class MemoryCatalog(MutableCatalog):
    """A catalog of memory schemas that creates and drops them (DynamicCatalog)."""

    def create_schema(self, ctx: Context, name: str, opts: CreateSchemaOptions) -> CatalogSchema:
        check_new_schema(self, ctx, name)
        return self.add_schema(MemorySchema(name, opts.comment))

    def drop_schema(self, ctx: Context, name: str, opts: DropSchemaOptions) -> None:
        with self._lock:
            schema = self._schemas.get(name)
            if schema is None:
                return missing("schema", name, opts.ignore_not_found)
            if schema.tables(ctx):
                raise SchemaNotEmpty(f"schema {name!r} contains tables")
            del self._schemas[name]
        self.changed()


def _new_memory_table(name: str, columns: pa.Schema, comment: str) -> Table:
    return memory_table(name, columns, ALL_CAPABILITIES, comment=comment)
