"""What CREATE, DROP and RENAME mean whatever stores the tables: the columns a CREATE TABLE
makes, what it does with a table of the same name, and a DROP or RENAME of something that is
not there. The backends share them so that a DuckDB user sees the same DDL on either."""

from __future__ import annotations

import pyarrow as pa

from airport_contracts import (
    AlreadyExists,
    CreateTableOptions,
    NotFound,
    OnConflict,
    Table,
    find_rowid_column,
)


def created_columns(schema: pa.Schema, opts: CreateTableOptions) -> pa.Schema:
    """A CREATE TABLE's columns without a rowid column (the backend keeps its own), those its
    NOT NULL constraints name made non-nullable."""
    not_null = set(opts.not_null_constraints)
    rowid = find_rowid_column(schema)
    return pa.schema(
        [
            field.with_nullable(field.nullable and index not in not_null)
            for index, field in enumerate(schema)
            if index != rowid
        ],
        metadata=schema.metadata,
    )


def kept_on_conflict(existing: Table | None, name: str, opts: CreateTableOptions) -> bool:
    """Whether a CREATE TABLE answers the table already named so (ON CONFLICT IGNORE); one it
    may not replace is AlreadyExists."""
    if existing is None or opts.on_conflict is OnConflict.REPLACE:
        return False
    if opts.on_conflict is OnConflict.IGNORE:
        return True
    raise AlreadyExists(f"table {name!r} already exists")


def missing(kind: str, name: str, ignore_not_found: bool) -> None:
    """A DROP or RENAME of a schema or table that is not there: nothing to do when the
    statement said IF EXISTS, else NotFound."""
    if not ignore_not_found:
        raise NotFound(f"{kind} {name!r} not found")
