"""DuckDB's column ids: the `column_ids` of an `endpoints` request.

DuckDB numbers a table's columns as it sees them: every field of the Arrow schema except the
one whose `is_rowid` metadata is non-empty, which it hides and asks for with its own id,
2**64-1. So with the rowid field first, id 0 is the field after it. (airport-go indexes the
ids over the whole Arrow schema, rowid field included: deviation `column_ids_as_duckdb_counts`.)
The server and the client both count this way, here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from airport_contracts import ROWID_METADATA_KEY, find_rowid_column

ROWID_COLUMN_ID = 2**64 - 1
"""DuckDB's column id for the rowid pseudo-column."""

_ROWID_KEY = ROWID_METADATA_KEY.encode()


def hidden_by_duckdb(schema_field: pa.Field) -> bool:
    """The extension hides a field whose `is_rowid` metadata is non-empty (only that: a
    field merely named rowid is an ordinary column to DuckDB)."""
    metadata = schema_field.metadata
    return bool(metadata and metadata.get(_ROWID_KEY))


def duckdb_columns(schema: pa.Schema) -> list[str]:
    """The table's columns as DuckDB numbers them."""
    return [f.name for f in schema if not hidden_by_duckdb(f)]


def served_order(schema: pa.Schema) -> list[int]:
    """The field order a table is served in: DuckDB's hidden rowid field last (deviation
    rowid_served_last). The extension keys a column's Arrow field by its position in the
    Arrow schema, but numbers DuckDB's columns without the hidden field: with that field
    anywhere but last, every column after it is looked up one place off (struct and list
    access, statistics)."""
    hidden = [i for i, f in enumerate(schema) if hidden_by_duckdb(f)]
    return [i for i in range(len(schema)) if i not in hidden] + hidden


def served_schema(schema: pa.Schema) -> pa.Schema:
    """schema in the order it is served (served_order)."""
    order = served_order(schema)
    if order == list(range(len(schema))):
        return schema
    return pa.schema([schema.field(i) for i in order], metadata=schema.metadata)


def served_reader(reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
    """reader's batches in the order they are served (served_order); zero-copy."""
    order = served_order(reader.schema)
    if order == list(range(len(reader.schema))):
        return reader
    schema = served_schema(reader.schema)
    return pa.RecordBatchReader.from_batches(schema, (batch.select(order) for batch in reader))


def names_for_ids(schema: pa.Schema, column_ids: Iterable[Any]) -> list[str]:
    """The column names DuckDB means by column_ids; ids out of range are dropped, as Go drops
    them, and the rowid id names the rowid column when the table has one."""
    visible = duckdb_columns(schema)
    names = []
    for column_id in column_ids:
        if column_id == ROWID_COLUMN_ID:
            index = find_rowid_column(schema)
            if index >= 0:
                names.append(schema.field(index).name)
        elif isinstance(column_id, int) and 0 <= column_id < len(visible):
            names.append(visible[column_id])
    return names


def ids_for_names(schema: pa.Schema, names: Iterable[str]) -> list[int]:
    """DuckDB's column ids for the named columns (the rowid column has its own id)."""
    visible = {name: index for index, name in enumerate(duckdb_columns(schema))}
    rowid = find_rowid_column(schema)
    rowid_name = schema.field(rowid).name if rowid >= 0 else None
    ids = []
    for name in names:
        if name == rowid_name and name not in visible:
            ids.append(ROWID_COLUMN_ID)
        elif name in visible:
            ids.append(visible[name])
        else:
            raise ValueError(f"the table has no column {name!r}")
    return ids


def needs_no_columns(column_ids: Iterable[Any], json_filters: str) -> bool:
    """Whether a scan needs only its number of rows (deviation scan_needs_no_columns).

    DuckDB's count(*) asks for one column it will not look at: the rowid pseudo-column where
    the table has one, as `SELECT rowid` does, else the first column, as `SELECT first` does.
    What tells them apart is the column bindings of its filter document (written before
    DuckDB picks that column), which name the column for the latter and nothing for the
    count. DuckDB still reads that column's vector in some plans (a count over a cross
    product copies it): it is sent typed, even when its values are left null."""
    ids = list(column_ids)
    if len(ids) != 1 or not isinstance(ids[0], int):
        return False
    try:
        document = json.loads(json_filters) if json_filters else None
    except ValueError:
        return False
    if not isinstance(document, dict):
        return False
    bindings = document.get("column_binding_names_by_index")
    return isinstance(bindings, list) and not bindings and not document.get("filters")


def _unrequested(field: pa.Field) -> pa.Field:
    return pa.field(field.name, pa.null(), nullable=True, metadata=field.metadata)


def requested_only(reader: pa.RecordBatchReader, requested: Iterable[str]) -> pa.RecordBatchReader:
    """reader with the columns the client did not ask for typed null: every field stays in
    its place with its name and metadata, and those carry no buffers on the wire
    (deviation unrequested_columns_null_typed)."""
    keep = set(requested)
    schema = reader.schema
    if all(name in keep for name in schema.names):
        return reader
    kept = [i for i, field in enumerate(schema) if field.name in keep]
    narrowed = pa.schema(
        [field if field.name in keep else _unrequested(field) for field in schema],
        metadata=schema.metadata,
    )

    def batches() -> Iterable[pa.RecordBatch]:
        for batch in reader:
            columns = [_nulls(batch.num_rows)] * len(schema)
            for i in kept:
                columns[i] = batch.column(i)
            yield pa.RecordBatch.from_arrays(columns, schema=narrowed)

    return pa.RecordBatchReader.from_batches(narrowed, batches())


def _nulls(length: int) -> pa.Array:
    return pa.nulls(length)  # the null type has no buffers: nothing to share or allocate
