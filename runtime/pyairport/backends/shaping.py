"""Fitting client input to a table's schema, shared by every backend.

Tables store rows as (rowid, columns...). Clients send columns by name in any order:
INSERT sends user columns (never the rowid), UPDATE sends the SET columns. These helpers
cast what was sent to the table's types, fill what was left out with nulls, and refuse
unknown columns (ValueError) and nulls in NOT NULL columns (RowsRefused, the client's error)
with messages that name the column.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Container, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airport_contracts import (
    DMLOptions,
    DMLResult,
    NullRowid,
    RowCountMismatch,
    RowsRefused,
    ScanFailed,
    find_rowid_column,
    project_schema,
    returning_columns,
)
from airport_contracts.dispatch import RULE_ERRORS
from airport_contracts.vocabulary import Rule

from .arrow_convert import convert, digits_fit, misplaced_null, relaxed


def user_fields(schema: pa.Schema) -> dict[str, pa.Field]:
    """The table's columns except the rowid column, if it has one."""
    rowid = find_rowid_column(schema)
    return {f.name: f for index, f in enumerate(schema) if index != rowid}


def _refuse_nulls(operation: str, name: str) -> RowsRefused:
    return RowsRefused(operation=operation, reason=f"column {name} does not accept nulls")


def cast_column(
    name: str, column: pa.Array, target: pa.Field, operation: str = "INSERT"
) -> pa.Array:
    if not column.type.equals(target.type):
        try:
            column = convert(column, target.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ValueError(
                f"column {name}: cannot store {column.type} as {target.type}: {exc}"
            ) from None
    if not target.nullable and column.null_count:
        raise _refuse_nulls(operation, name)
    if column.null_count < len(column) and not relaxed(target.type).equals(target.type):
        where = misplaced_null(column, target.type, name)
        if where is not None:
            raise _refuse_nulls(operation, where)
    return column


def conform_insert(
    batch: pa.RecordBatch,
    schema: pa.Schema,
    ids: np.ndarray | None,
    id_from_rowid: str | None = None,
) -> pa.RecordBatch:
    """Input columns by name → a batch of the table schema with the given rowids (a schema
    without a rowid column takes none: ids None).

    id_from_rowid names a column that gets the row's rowid where the input left it null."""
    fields = user_fields(schema)
    rowid = find_rowid_column(schema)
    given: dict[str, pa.Array] = {}
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        if rowid >= 0 and name == schema[rowid].name:
            continue  # the table assigns rowids; a client's rowid is never stored
        if name not in fields:
            raise ValueError(f"column {name} not found in table schema")
        if name in given:
            raise ValueError(f"column {name} appears twice in the input")
        given[name] = cast_column(name, column, fields[name])
    id_array = pa.array(ids, type=pa.int64()) if ids is not None else None
    columns = [] if id_array is None else [id_array]
    for name, target in fields.items():
        column = given.get(name)
        if column is None:
            column = pa.nulls(batch.num_rows, target.type)
        if name == id_from_rowid and id_array is not None and column.null_count:
            column = pc.if_else(pc.is_null(column), id_array.cast(target.type), column)
        if not target.nullable and column.null_count:
            raise _refuse_nulls("INSERT", name)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=schema)


class UpdateColumns:
    """The SET columns of a statement's UPDATE batches (rowid already removed), cast to the
    table's types. The batches of one input share their columns, so the names are checked
    against the table once, not per batch (this runs for every 2,048-row batch DuckDB sends)."""

    def __init__(self, schema: pa.Schema) -> None:
        self._fields = user_fields(schema)
        self._input: pa.Schema | None = None
        self._targets: list[tuple[str, pa.Field]] = []

    def __call__(self, batch: pa.RecordBatch) -> dict[str, pa.Array]:
        if self._input is None or not batch.schema.equals(self._input):
            self._targets = self._check(batch.schema.names)
            self._input = batch.schema
        return {
            name: cast_column(name, column, field, "UPDATE")
            for (name, field), column in zip(self._targets, batch.columns, strict=True)
        }

    def _check(self, names: list[str]) -> list[tuple[str, pa.Field]]:
        for index, name in enumerate(names):
            if name not in self._fields:
                raise ValueError(f"column {name} not found in table schema")
            if name in names[:index]:
                raise ValueError(f"column {name} appears twice in the input")
        return [(name, self._fields[name]) for name in names]


def rowids_of(column: pa.Array) -> np.ndarray:
    """A rowid column as int64 numpy (uint64 above 2**63-1 wraps, as in Go); nulls refused."""
    if column.null_count:  # the dispatcher refuses them first; a table called directly too
        raise NullRowid()
    if column.type != pa.int64():  # DuckDB sends int64: no cast then (a per-batch call)
        column = column.cast(pa.int64(), safe=False)
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)


def batch_chunks(
    rows: pa.RecordBatchReader, operation: str
) -> Iterator[tuple[np.ndarray, pa.RecordBatch]]:
    """(rowids, other columns) per batch of a batch-interface input (operation: update or
    delete, for the contract's error when the rowid column is missing)."""
    index = find_rowid_column(rows.schema)
    if index < 0:
        raise RULE_ERRORS[Rule.VR_001][operation]()
    for batch in rows:
        yield (
            rowids_of(batch.column(index)),
            batch.remove_column(index),
        )  # by position: names may repeat


def legacy_chunks(
    row_ids: pa.Array, rows: pa.RecordBatchReader
) -> Iterator[tuple[np.ndarray, pa.RecordBatch]]:
    """(rowids, values) per batch of a legacy UPDATE: row i of the reader has row_ids[i]."""
    ids = rowids_of(row_ids)
    offset = 0
    for batch in rows:
        yield ids[offset : offset + batch.num_rows], batch
        offset += batch.num_rows
    if offset != len(ids):
        raise RowCountMismatch(row_ids=len(ids), rows=offset)


@functools.lru_cache(maxsize=64)
def null_column(length: int, type_: pa.DataType) -> pa.Array:
    """An all-null array, made once per length and type: a scan's batches are mostly of one
    length, and Arrow arrays are immutable, so every batch of a scan shares it (allocating
    and zeroing a string column's offsets for each batch cost more than reading the data)."""
    return pa.nulls(length, type_)


def null_batch(schema: pa.Schema, length: int) -> pa.RecordBatch:
    """length rows of schema, every column null (a count that reads no data)."""
    return pa.RecordBatch.from_arrays(
        [null_column(length, field.type) for field in schema], schema=schema
    )


def full_width(batch: pa.RecordBatch, schema: pa.Schema, wanted: Container[str]) -> pa.RecordBatch:
    """A batch as the served schema: the wanted columns, converted only where the type
    differs (Spark's large strings, DataFusion's string views, the types Delta stores as
    others: arrow_convert.py), the others null — a scan answers
    with the table's full width, and sending columns the client did not ask for (every
    column of a count(*)) costs their bytes. A stored value the served type cannot hold (a
    file some writer put a 19-digit value in, in a DECIMAL(18) column) fails the scan naming
    its column: never changed, and the client learns which column to look at."""
    columns = []
    for field in schema:
        if field.name in wanted:
            column = batch.column(field.name)
            columns.append(column if column.type == field.type else _served(column, field))
        else:
            columns.append(null_column(batch.num_rows, field.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def digits_checked(batch: pa.RecordBatch, names: list[str]) -> pa.RecordBatch:
    """batch, once its decimal64 columns of names are found to hold no value wider than their
    precision (arrow_convert.digits_fit); else the scan fails naming the column, in the words
    of the narrowing's refusal (convert, through _served)."""
    for name in names:
        column = batch.column(name)
        if not digits_fit(column):
            precision = column.type.precision
            raise _unfit(name, f"Decimal value does not fit in precision {precision}")
    return batch


def _served(column: pa.Array, field: pa.Field) -> pa.Array:
    try:
        return convert(column, field.type)
    except pa.ArrowInvalid as exc:  # a value that does not fit: pyarrow's words name no path
        raise _unfit(field.name, exc) from None


def _unfit(column: str, reason: object) -> ScanFailed:
    """The scan's failure on a stored value its column's served type cannot hold."""
    return ScanFailed(error=f"column {column}: {reason}")


def returning_schema(schema: pa.Schema, opts: DMLOptions | None) -> pa.Schema | None:
    """The columns a statement returns (opts.returning_columns, by default every column
    but the rowid), or None without RETURNING: a table gathers only these."""
    if opts is None or not opts.returning:
        return None
    return project_schema(schema, opts.returning_columns or returning_columns(schema))


def in_sent_types(result: DMLResult, sent: pa.Schema) -> DMLResult:
    """An UPDATE's result with its RETURNING columns in the decimal widths the client sent
    them in. An UPDATE answers in its input's schema (protocol §1.8), and a table may serve a
    DECIMAL in another width than a client sends it: the Spark backend serves DECIMAL(p <= 18)
    as decimal64 (spark/stored_types.py), DuckDB 1.4.4 sends every DECIMAL as decimal128.
    The same values either way; any other difference is left for the dispatcher to refuse."""
    reader = result.returning_data
    if reader is None:
        return result
    sent_types = {f.name: f.type for f in sent}
    fields = [
        f.with_type(sent_types[f.name])
        if f.name in sent_types and _same_decimal(f.type, sent_types[f.name])
        else f
        for f in reader.schema
    ]
    schema = pa.schema(fields, metadata=reader.schema.metadata)
    if schema.equals(reader.schema):
        return result

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            columns = [convert(c, f.type) for c, f in zip(batch.columns, fields, strict=True)]
            yield pa.RecordBatch.from_arrays(columns, schema=schema)

    retyped = pa.RecordBatchReader.from_batches(schema, batches())
    return dataclasses.replace(result, returning_data=retyped)


def _same_decimal(served: pa.DataType, sent: pa.DataType) -> bool:
    return (
        pa.types.is_decimal(served)
        and pa.types.is_decimal(sent)
        and not served.equals(sent)
        and (served.precision, served.scale) == (sent.precision, sent.scale)
    )


def returning_reader(
    schema: pa.Schema, batches: list[pa.RecordBatch], opts: DMLOptions | None
) -> pa.RecordBatchReader | None:
    """RETURNING data: rows of the table schema projected to opts.returning_columns."""
    projected = returning_schema(schema, opts)
    if projected is None:
        return None
    out = [
        b
        if b.schema.equals(projected)  # the table gathered only these (memory's does)
        else pa.RecordBatch.from_arrays(
            [convert(b.column(n), projected.field(n).type) for n in projected.names],
            schema=projected,
        )
        for b in batches
    ]
    return pa.RecordBatchReader.from_batches(projected, out)
