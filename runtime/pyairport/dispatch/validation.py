"""The validation rules of the contract, by id; an operation's row lists the ones it applies
and RULE_ERRORS gives each rule's error. (VR-003 and VR-004 need no check here: the library
always passes a Context, and tables take None options as the defaults.)"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from airport_contracts import AirportError, ScanOptions, Table, find_rowid_column
from airport_contracts.dispatch import RULE_ERRORS
from airport_contracts.helpers import is_rowid_type

from .statement import BatchCheck, StatementRun


def rule_error(rule_id: str, key: str) -> Callable[..., AirportError]:
    """The error a rule raises for an operation (or a part of the rule)."""
    return RULE_ERRORS[rule_id][key]


def rowid_present(rowid_index: int, operation: str) -> None:
    """VR-001."""
    if rowid_index < 0:
        raise rule_error("VR-001", operation)()


def rowid_type(input_schema: pa.Schema, rowid_index: int, operation: str) -> None:
    """VR-002."""
    if not is_rowid_type(input_schema.field(rowid_index).type):
        raise rule_error("VR-002", operation)()


def no_null_rowids(rowid_index: int, operation: str) -> BatchCheck:
    """VR-NULL, for each batch."""
    error = rule_error("VR-NULL", operation)

    def check(batch: pa.RecordBatch) -> None:
        if batch.column(rowid_index).null_count:
            raise error()

    return check


_SHOWN_CHARACTERS = 64
"""How much of a client's column name or type an error repeats."""


def shown(name: str) -> str:
    """A client's column name for an error message: quoted, cut, control characters escaped."""
    cut = name[:_SHOWN_CHARACTERS] + ("…" if len(name) > _SHOWN_CHARACTERS else "")
    return "'" + "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in cut) + "'"


def shown_type(data_type: pa.DataType) -> str:
    text = str(data_type)
    return text[:_SHOWN_CHARACTERS] + ("…" if len(text) > _SHOWN_CHARACTERS else "")


def no_dictionary_columns(input_schema: pa.Schema, operation: str) -> None:
    """no_dictionary_columns."""
    for field in input_schema:
        if pa.types.is_dictionary(field.type):
            raise rule_error("no_dictionary_columns", operation)(
                details=f"input column {shown(field.name)} is dictionary-encoded"
                f" ({shown_type(field.type)}); the stream carries no dictionaries"
            )


def _is_string(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def _is_binary(t: pa.DataType) -> bool:
    types = pa.types
    return bool(
        types.is_binary(t)
        or types.is_large_binary(t)
        or types.is_fixed_size_binary(t)
        or types.is_binary_view(t)
    )


def _is_number(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


_KINDS: tuple[tuple[str, Callable[[pa.DataType], bool]], ...] = (
    ("number", _is_number),
    ("string", _is_string),
    ("binary", _is_binary),
    ("boolean", pa.types.is_boolean),
    ("timestamp", pa.types.is_timestamp),
    ("date", pa.types.is_date),
    ("time", pa.types.is_time),
    ("duration", pa.types.is_duration),
)


def _type_kind(data_type: pa.DataType) -> str | None:
    """The kind of values a type holds; None: nested, dictionary-encoded or other."""
    return next((kind for kind, is_kind in _KINDS if is_kind(data_type)), None)


def columns_fit(
    input_schema: pa.Schema, table_schema: pa.Schema, input_rowid: int | None, operation: str
) -> BatchCheck | None:
    """input_columns_fit_table: the names and types now; returns the check of each batch's
    values, or None when every type is the column's own. input_rowid is the input's rowid
    column (UPDATE), or None for INSERT, where the table assigns rowids and a column named as
    the table's rowid column is ignored."""
    mismatch = rule_error("input_columns_fit_table", operation)
    table_rowid = find_rowid_column(table_schema)
    columns = {f.name: f for i, f in enumerate(table_schema) if i != table_rowid}
    if input_rowid is None and table_rowid >= 0:
        input_rowid = input_schema.get_field_index(table_schema.field(table_rowid).name)
    given: set[str] = set()
    converted: list[tuple[int, pa.Field, pa.Field]] = []
    for index, got in enumerate(input_schema):
        if index == input_rowid:
            continue
        want = columns.get(got.name)
        if want is None:
            raise mismatch(
                details=f"input column {shown(got.name)} ({shown_type(got.type)}) is not a"
                " column of the table"
            )
        if got.name in given:
            raise mismatch(details=f"input column {shown(got.name)} is given twice")
        given.add(got.name)
        if got.type.equals(want.type) or pa.types.is_null(got.type):
            continue
        if _type_kind(got.type) is None or _type_kind(got.type) != _type_kind(want.type):
            raise mismatch(
                details=f"input column {shown(got.name)} is {shown_type(got.type)}, the"
                f" table's column is {shown_type(want.type)}"
            )
        converted.append((index, got, want))
    if not converted:
        return None

    def values_fit(batch: pa.RecordBatch) -> None:
        for index, got, want in converted:
            try:
                batch.column(index).cast(want.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise mismatch(
                    details=f"input column {shown(got.name)} ({shown_type(got.type)}) has a"
                    f" value that does not convert to {shown_type(want.type)}"
                ) from None

    return values_fit


def data_schema(table_schema: pa.Schema) -> pa.Schema:
    """The table's columns without the rowid: what a DoPut client sends."""
    index = find_rowid_column(table_schema)
    return table_schema if index < 0 else table_schema.remove(index)


def schema_matches(input_schema: pa.Schema, table_schema: pa.Schema) -> None:
    """schema_matches_table."""
    expected = data_schema(table_schema)
    if len(input_schema) != len(expected):
        raise rule_error("schema_matches_table", "count")(
            table_columns=len(expected), input_columns=len(input_schema)
        )
    for index, (got, want) in enumerate(zip(input_schema, expected, strict=True)):
        if got.name != want.name or not got.type.equals(want.type):
            raise rule_error("schema_matches_table", "columns")(
                details=f"column {index} is {shown(got.name)} ({shown_type(got.type)}), table"
                f" has {shown(want.name)} ({shown_type(want.type)})"
            )


def row_ids_exist(
    run: StatementRun, table: Table, rowid_name: str, row_ids: pa.Int64Array, operation: str
) -> None:
    """row_ids_exist."""
    try:
        reader = table.scan(run.ctx, ScanOptions(columns=[rowid_name]))
        existing = reader.read_all().column(rowid_name)
    except Exception as exc:
        raise run.table_error(exc) from exc
    missing = pc.invert(pc.is_in(row_ids, value_set=existing.combine_chunks().cast(pa.int64())))
    if pc.any(missing).as_py():
        raise rule_error("row_ids_exist", operation)(row_id=row_ids.filter(missing)[0].as_py())
