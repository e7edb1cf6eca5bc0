"""The validation rules of the contract: one implementation per rule id, registered here.

An operation's row lists the rules it applies (in order) and their errors. Each rule of the
contract is registered once, as one of two kinds:
- placed: the runner calls it at the point of the statement the contract fixes (VR-001
  before or after the interface check, per batch, after the rows are read, …);
- input: it needs only the request's schemas; the runners call every such rule of the row
  when the input schema is known, so a new rule of this kind runs with no runner edit.
A rule of the contract with no implementation fails `import pyairport.dispatch` with one line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from airport_contracts import ScanOptions, Table, find_rowid_column
from airport_contracts.helpers import is_rowid_type
from airport_contracts.vocabulary import Rule
from airport_support.rows import OperationRow

from .statement import BatchCheck, StatementRun


class ContractNotImplemented(ImportError):
    """contracts.yaml names a rule or an action this runtime has no implementation of."""


@dataclass(frozen=True)
class RuleInput:
    """What an input rule sees: the operation's row and the request's schemas."""

    row: OperationRow
    input_schema: pa.Schema
    table_schema: pa.Schema


PLACED: dict[str, str] = {}
"""Rules the runners call at their fixed point: rule id → where."""
INPUT_RULES: dict[str, Callable[[RuleInput], None]] = {}
"""Rules checked once the input schema is known, by id."""


def placed(rule: str, where: str) -> None:
    PLACED[rule] = where


def input_rule(rule: str) -> Callable[[Callable[[RuleInput], None]], Callable[[RuleInput], None]]:
    """Register fn as the implementation of an input rule."""

    def register(fn: Callable[[RuleInput], None]) -> Callable[[RuleInput], None]:
        INPUT_RULES[rule] = fn
        return fn

    return register


def check_input_rules(row: OperationRow, input_schema: pa.Schema, table_schema: pa.Schema) -> None:
    """Every input rule of the row, in the row's order."""
    facts = RuleInput(row, input_schema, table_schema)
    for rule in row.validation:
        check = INPUT_RULES.get(rule)
        if check is not None:
            check(facts)


def require_implemented(rules: Iterable[str] | Mapping[str, object], where: str) -> None:
    """Raise ContractNotImplemented (one line) for a rule of the contract nobody implements."""
    missing = [r for r in rules if r not in PLACED and r not in INPUT_RULES]
    if missing:
        raise ContractNotImplemented(
            f"{where} names validation rule {', '.join(map(repr, missing))}, which"
            " pyairport.dispatch.validation does not implement"
        )


placed(Rule.VR_003, "by construction: the library always passes a Context")
placed(Rule.VR_004, "by construction: tables take None options as the defaults")


def rowid_present(row: OperationRow, rowid_index: int) -> None:
    """VR-001."""
    if rowid_index < 0:
        raise row.rule_error(Rule.VR_001)()


placed(Rule.VR_001, "do_exchange: before or after the interface check")


def rowid_type(row: OperationRow, input_schema: pa.Schema, rowid_index: int) -> None:
    """VR-002."""
    if not is_rowid_type(input_schema.field(rowid_index).type):
        raise row.rule_error(Rule.VR_002)()


placed(Rule.VR_002, "do_exchange: after VR-001")


def no_null_rowids(row: OperationRow, rowid_index: int) -> BatchCheck:
    """VR-NULL, for each batch."""
    error = row.rule_error(Rule.VR_NULL)

    def check(batch: pa.RecordBatch) -> None:
        if batch.column(rowid_index).null_count:
            raise error()

    return check


placed(Rule.VR_NULL, "do_exchange: each input batch")

_SHOWN_CHARACTERS = 64
"""How much of a client's column name or type an error repeats."""


def shown(name: str) -> str:
    """A client's column name for an error message: quoted, cut, control characters escaped."""
    cut = name[:_SHOWN_CHARACTERS] + ("…" if len(name) > _SHOWN_CHARACTERS else "")
    return "'" + "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in cut) + "'"


def shown_type(data_type: pa.DataType) -> str:
    text = str(data_type)
    return text[:_SHOWN_CHARACTERS] + ("…" if len(text) > _SHOWN_CHARACTERS else "")


@input_rule(Rule.NO_DICTIONARY_COLUMNS)
def no_dictionary_columns(facts: RuleInput) -> None:
    """no_dictionary_columns."""
    for field in facts.input_schema:
        if pa.types.is_dictionary(field.type):
            raise facts.row.rule_error(Rule.NO_DICTIONARY_COLUMNS)(
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
    row: OperationRow, input_schema: pa.Schema, table_schema: pa.Schema, input_rowid: int | None
) -> BatchCheck | None:
    """input_columns_fit_table: the names and types now; returns the check of each batch's
    values, or None when every type is the column's own. input_rowid is the input's rowid
    column (UPDATE), or None for INSERT, where the table assigns rowids and a column named as
    the table's rowid column is ignored."""
    mismatch = row.rule_error(Rule.INPUT_COLUMNS_FIT_TABLE)
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


placed(Rule.INPUT_COLUMNS_FIT_TABLE, "do_exchange: the input schema, then each batch")


def data_schema(table_schema: pa.Schema) -> pa.Schema:
    """The table's columns without the rowid: what a DoPut client sends."""
    index = find_rowid_column(table_schema)
    return table_schema if index < 0 else table_schema.remove(index)


@input_rule(Rule.SCHEMA_MATCHES_TABLE)
def schema_matches(facts: RuleInput) -> None:
    """schema_matches_table."""
    input_schema = facts.input_schema
    expected = data_schema(facts.table_schema)
    if len(input_schema) != len(expected):
        raise facts.row.rule_error(Rule.SCHEMA_MATCHES_TABLE, "count")(
            table_columns=len(expected), input_columns=len(input_schema)
        )
    for index, (got, want) in enumerate(zip(input_schema, expected, strict=True)):
        if got.name != want.name or not got.type.equals(want.type):
            raise facts.row.rule_error(Rule.SCHEMA_MATCHES_TABLE, "columns")(
                details=f"column {index} is {shown(got.name)} ({shown_type(got.type)}), table"
                f" has {shown(want.name)} ({shown_type(want.type)})"
            )


def row_ids_exist(
    row: OperationRow, run: StatementRun, table: Table, rowid_name: str, row_ids: pa.Int64Array
) -> None:
    """row_ids_exist."""
    try:
        reader = table.scan(run.ctx, ScanOptions(columns=[rowid_name]))
        existing = reader.read_all().column(rowid_name)
    except Exception as exc:
        raise run.table_error(exc) from exc
    missing = pc.invert(pc.is_in(row_ids, value_set=existing.combine_chunks().cast(pa.int64())))
    if pc.any(missing).as_py():
        raise row.rule_error(Rule.ROW_IDS_EXIST)(row_id=row_ids.filter(missing)[0].as_py())


placed(Rule.ROW_IDS_EXIST, "do_put: after the rows are read")


def row_count_matches(row: OperationRow, row_ids: int, rows: int) -> None:
    """row_count_matches: a DoPut UPDATE sends one row per rowid."""
    if row_ids != rows:
        raise row.rule_error(Rule.ROW_COUNT_MATCHES)(row_ids=row_ids, rows=rows)


placed(Rule.ROW_COUNT_MATCHES, "do_put: after the rows are read")


def row_ids_listed(row: OperationRow, row_ids: list[int], limit: int | None) -> None:
    """row_ids_not_empty and row_ids_within_limit: the row_ids list of a spec-002 request."""
    if Rule.ROW_IDS_NOT_EMPTY in row.validation and not row_ids:
        raise row.rule_error(Rule.ROW_IDS_NOT_EMPTY)()
    if Rule.ROW_IDS_WITHIN_LIMIT in row.validation and limit is not None and len(row_ids) > limit:
        raise row.rule_error(Rule.ROW_IDS_WITHIN_LIMIT)(count=len(row_ids), limit=limit)


placed(Rule.ROW_IDS_NOT_EMPTY, "tables.rowid_for_row_ids")
placed(Rule.ROW_IDS_WITHIN_LIMIT, "tables.rowid_for_row_ids")
