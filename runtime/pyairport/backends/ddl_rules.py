"""What CREATE, DROP and RENAME mean whatever stores the tables: the columns a CREATE TABLE
makes, what it does with a table of the same name, a DROP or RENAME of something that is not
there, and the fields an add_field adds. The backends share them so that a DuckDB user sees
the same DDL on either."""

from __future__ import annotations

import pyarrow as pa

from airport_contracts import (
    ROWID_METADATA_KEY,
    ROWID_NAME,
    AddFieldWithoutFieldName,
    AlreadyExists,
    Context,
    CreateTableOptions,
    NameInvalid,
    NotFound,
    OnConflict,
    Table,
    find_rowid_column,
)

from ..catalog import CatalogSchema, MutableCatalog
from ..names import in_another_case, same_name
from ..wire.go_text import go_quote


def created_columns(schema: pa.Schema, opts: CreateTableOptions) -> pa.Schema:
    """A CREATE TABLE's columns without a rowid column (the backend keeps its own), those its
    NOT NULL constraints name made non-nullable. A column named rowid that its metadata does
    not mark as the row id is refused: DuckDB's `CREATE TABLE t (rowid INTEGER, …)` means a
    column of data, and dropping it as the contract's rowid would lose it unsaid."""
    not_null = set(opts.not_null_constraints)
    if any(f.name == ROWID_NAME and not _marked_rowid(f) for f in schema):
        raise NameInvalid(
            kind="column",
            name=go_quote(ROWID_NAME),
            reason="the table keeps a row id column of that name: name this column otherwise"
            f" (or mark it with {ROWID_METADATA_KEY} metadata to declare the row id)",
        )
    rowid = find_rowid_column(schema)  # a marked one: no unmarked rowid is left
    return pa.schema(
        [
            field.with_nullable(field.nullable and index not in not_null)
            for index, field in enumerate(schema)
            if index != rowid
        ],
        metadata=schema.metadata,
    )


def fields_to_add(wanted: pa.Field, have: pa.DataType) -> list[pa.Field]:
    """The fields add_field adds to a struct column of type have: those of wanted (the
    column with the type it should have) that it lacks in any case. NotFound when the column
    is not a struct; AddFieldWithoutFieldName when wanted is not one, which is what DuckDB's
    Airport sends for ADD COLUMN s.f (deviation add_field_needs_the_struct)."""
    if not pa.types.is_struct(have):
        raise NotFound(f"{wanted.name!r} is not a struct column")
    if not pa.types.is_struct(wanted.type):
        raise AddFieldWithoutFieldName(column=go_quote(wanted.name), type=str(wanted.type))
    present = [have.field(i).name for i in range(have.num_fields)]
    return [
        field
        for field in (wanted.type.field(i) for i in range(wanted.type.num_fields))
        if not any(same_name(field.name, name) for name in present)
    ]


def _marked_rowid(field: pa.Field) -> bool:
    return bool((field.metadata or {}).get(ROWID_METADATA_KEY.encode()))


def kept_on_conflict(existing: Table | None, name: str, opts: CreateTableOptions) -> bool:
    """Whether a CREATE TABLE answers the table already named so (ON CONFLICT IGNORE); one it
    may not replace is AlreadyExists."""
    if existing is None or opts.on_conflict is OnConflict.REPLACE:
        return False
    if opts.on_conflict is OnConflict.IGNORE:
        return True
    raise AlreadyExists(f"table {name!r} already exists")


def other_case_kept(
    schema: CatalogSchema, ctx: Context, name: str, opts: CreateTableOptions
) -> Table | None:
    """The table a CREATE TABLE answers because the schema has its name in another case
    (ON CONFLICT IGNORE), None when it has none; else AlreadyExists, REPLACE included: the
    two names are one to DuckDB, and the table of the other is not this one to replace."""
    other = in_another_case(name, [t.name() for t in schema.tables(ctx)])
    if other is None:
        return None
    if opts.on_conflict is OnConflict.IGNORE:
        return schema.table(ctx, other)
    raise AlreadyExists(f"table {name!r} already exists")


def check_new_schema(catalog: MutableCatalog, ctx: Context, name: str) -> None:
    """AlreadyExists for a CREATE SCHEMA of a name the catalog has, in any case."""
    names = [s.name() for s in catalog.schemas(ctx)]
    if name in names or in_another_case(name, names) is not None:
        raise AlreadyExists(f"schema {name!r} already exists")


def check_new_table_name(schema: CatalogSchema, ctx: Context, old: str, new: str) -> None:
    """AlreadyExists for a RENAME onto a table's name, its own included, or onto another
    table's in another case (a table may take its own name in another case)."""
    names = [t.name() for t in schema.tables(ctx)]
    others = [name for name in names if name != old]
    if new in names or in_another_case(new, others) is not None:
        raise AlreadyExists(f"table {new!r} already exists")


def missing(kind: str, name: str, ignore_not_found: bool) -> None:
    """A DROP or RENAME of a schema or table that is not there: nothing to do when the
    statement said IF EXISTS, else NotFound."""
    if not ignore_not_found:
        raise NotFound(f"{kind} {name!r} not found")
