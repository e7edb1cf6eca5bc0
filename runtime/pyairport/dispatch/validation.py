"""The validation rules of the contract: one implementation per rule id, registered here
for the phase of the statement the contract places it in (RULE_PHASES: the input's schema
known, its rowid column found, each batch, a spec-002 request's row_ids, its rows read, …).

The runners run a phase (`check`), which checks the operation's rules of that phase in the
row's order; a new rule of a phase the runners already run needs no runner edit. A rule of
the contract with no implementation, or one implemented for another phase than the
contract's, fails `import pyairport.dispatch` with one line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airport_contracts import ScanOptions, Table, find_rowid_column
from airport_contracts.helpers import is_rowid_type
from airport_contracts.vocabulary import Rule
from airport_support.rows import OperationRow
from airport_support.vocabulary import RulePhase

from .. import filters
from ..backends.arrow_convert import relaxed
from .statement import BatchCheck, StatementRun


class ContractNotImplemented(ImportError):
    """contracts.yaml names a rule or an action this runtime has no implementation of."""


@dataclass(frozen=True)
class Facts:
    """What a phase's rules see: the operation's row, and what the statement knows by then
    (None where the phase comes before it or the operation has none)."""

    row: OperationRow
    input_schema: pa.Schema | None = None
    table_schema: pa.Schema | None = None
    input_rowid: int | None = None  # the input's rowid column (-1: none); None: no such column
    row_ids: Sequence[int] | None = None  # a spec-002 request's
    row_ids_limit: int | None = None
    rows: int = 0  # the rows read (rows_read)
    run: StatementRun | None = None
    table: Table | None = None


RuleCheck = Callable[[Facts], BatchCheck | None]
"""A rule's implementation: raises its error, or returns the check of each batch (or None)."""

IMPLEMENTED: dict[str, tuple[RulePhase, RuleCheck | None]] = {}
"""Each rule's implementation and the phase it is written for (None: by construction)."""


def rule(rule_id: str, phase: RulePhase) -> Callable[[RuleCheck], RuleCheck]:
    """Register fn as the implementation of a rule checked in phase."""

    def register(fn: RuleCheck) -> RuleCheck:
        IMPLEMENTED[rule_id] = (phase, fn)
        return fn

    return register


BY_CONSTRUCTION: dict[str, str] = {}
"""The rules that hold by how the library is built: why, by id."""


def by_construction(rule_id: str, why: str) -> None:
    """A rule that holds by how the library is built (why), with nothing to check."""
    IMPLEMENTED[rule_id] = (RulePhase.CONSTRUCTION, None)
    BY_CONSTRUCTION[rule_id] = why


def check(phase: RulePhase, facts: Facts) -> BatchCheck | None:
    """The operation's rules of phase, in the row's order: raises the first one's error, else
    the check of each batch its rules ask for (in the same order), or None."""
    checks = []
    for rule_id in facts.row.rules_in(phase):
        implementation = IMPLEMENTED[rule_id][1]
        batch_check = implementation(facts) if implementation is not None else None
        if batch_check is not None:
            checks.append(batch_check)
    if len(checks) <= 1:
        return checks[0] if checks else None

    def every(batch: pa.RecordBatch) -> None:
        for one in checks:
            one(batch)

    return every


def require_implemented(phases: Mapping[str, RulePhase], where: str) -> None:
    """Raise ContractNotImplemented (one line) for a rule of the contract nobody implements,
    or one implemented for another phase than the contract places it in."""
    missing = [r for r in phases if r not in IMPLEMENTED]
    if missing:
        raise ContractNotImplemented(
            f"{where} names validation rule {', '.join(map(repr, missing))}, which"
            " pyairport.dispatch.validation does not implement"
        )
    for rule_id, phase in phases.items():
        if IMPLEMENTED[rule_id][0] is not phase:
            raise ContractNotImplemented(
                f"{where} places validation rule {rule_id!r} in phase {phase.value},"
                f" pyairport.dispatch.validation implements it for {IMPLEMENTED[rule_id][0].value}"
            )


by_construction(Rule.VR_003, "the library always passes a Context")
by_construction(Rule.VR_004, "tables take None options as the defaults")


@rule(Rule.VR_001, RulePhase.ROWID_COLUMN)
def rowid_present(facts: Facts) -> None:
    """VR-001."""
    if facts.input_rowid is None or facts.input_rowid < 0:
        raise facts.row.rule_error(Rule.VR_001)()


@rule(Rule.VR_002, RulePhase.ROWID_TYPE)
def rowid_type(facts: Facts) -> None:
    """VR-002."""
    assert facts.input_schema is not None and facts.input_rowid is not None
    if not is_rowid_type(facts.input_schema.field(facts.input_rowid).type):
        raise facts.row.rule_error(Rule.VR_002)()


@rule(Rule.VR_NULL, RulePhase.INPUT_BATCHES)
def no_null_rowids(facts: Facts) -> BatchCheck:
    """VR-NULL, for each batch."""
    error = facts.row.rule_error(Rule.VR_NULL)
    index = facts.input_rowid
    assert index is not None

    def check(batch: pa.RecordBatch) -> None:
        if batch.column(index).null_count:
            raise error()

    return check


@rule(Rule.INPUT_IS_VALID_ARROW, RulePhase.INPUT_BATCHES)
def valid_arrow(facts: Facts) -> BatchCheck:
    """input_is_valid_arrow, for each batch."""
    mismatch = facts.row.rule_error(Rule.INPUT_IS_VALID_ARROW)

    def check(batch: pa.RecordBatch) -> None:
        problem = invalid_column(batch)
        if problem is not None:
            raise mismatch(details=f"input {problem}")

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


@rule(Rule.NO_DICTIONARY_COLUMNS, RulePhase.INPUT_SCHEMA)
def no_dictionary_columns(facts: Facts) -> None:
    """no_dictionary_columns."""
    assert facts.input_schema is not None
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


def _always_fits(got: pa.DataType, want: pa.DataType) -> bool:
    """Whether every value of got converts to want exactly (a widening): then no batch's
    values need a trial conversion, the table's own being the only one."""
    types = pa.types
    if types.is_integer(got) and types.is_integer(want):
        signed_got, signed_want = types.is_signed_integer(got), types.is_signed_integer(want)
        if signed_got == signed_want:
            return bool(want.bit_width >= got.bit_width)
        return bool(signed_want and want.bit_width > got.bit_width)  # unsigned into signed
    if types.is_floating(got) and types.is_floating(want):
        return bool(want.bit_width >= got.bit_width)
    return bool(
        (types.is_string(got) and types.is_large_string(want))
        or (types.is_binary(got) and types.is_large_binary(want))
    )


@rule(Rule.INPUT_COLUMNS_FIT_TABLE, RulePhase.INPUT_BATCHES)
def columns_fit(facts: Facts) -> BatchCheck | None:
    """input_columns_fit_table: the names and types now; returns the check of each batch's
    values, or None when every type is the column's own. The input's rowid column (UPDATE)
    is not the table's to fit; for INSERT (no input rowid) the table assigns rowids and a
    column named as the table's rowid column is ignored."""
    row, input_schema, table_schema = facts.row, facts.input_schema, facts.table_schema
    assert input_schema is not None and table_schema is not None
    input_rowid = facts.input_rowid
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
        if relaxed(got.type).equals(relaxed(want.type)):
            continue  # nested fields the table declares NOT NULL: the backend checks the values
        if _type_kind(got.type) is None or _type_kind(got.type) != _type_kind(want.type):
            raise mismatch(
                details=f"input column {shown(got.name)} is {shown_type(got.type)}, the"
                f" table's column is {shown_type(want.type)}"
            )
        if not _always_fits(got.type, want.type):
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


@rule(Rule.SCHEMA_MATCHES_TABLE, RulePhase.INPUT_SCHEMA)
def schema_matches(facts: Facts) -> None:
    """schema_matches_table."""
    input_schema = facts.input_schema
    assert input_schema is not None and facts.table_schema is not None
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


@rule(Rule.ROW_IDS_EXIST, RulePhase.ROWS_READ)
def row_ids_exist(facts: Facts) -> None:
    """row_ids_exist: every rowid of the request names a row of the table. The table is
    asked for the rows of these rowids only (a filter it may use to skip the rest) and read
    a batch at a time: the check holds a table of any size in a batch's memory."""
    run, table, table_schema = facts.run, facts.table, facts.table_schema
    assert run is not None and table is not None and table_schema is not None
    assert facts.row_ids is not None
    rowid = table_schema.field(find_rowid_column(table_schema))
    row_ids = pa.array(facts.row_ids, type=pa.int64())
    found = np.zeros(len(row_ids), dtype=bool)
    opts = ScanOptions(columns=[rowid.name], filter=_naming(rowid, row_ids).encode())
    try:
        for batch in table.scan(run.ctx, opts):
            stored = batch.column(rowid.name).cast(pa.int64())
            found |= pc.is_in(row_ids, value_set=stored).to_numpy(zero_copy_only=False)
            if found.all():
                break
    except Exception as exc:
        raise run.table_error(exc) from exc
    if not found.all():
        missing = int(np.flatnonzero(~found)[0])
        raise facts.row.rule_error(Rule.ROW_IDS_EXIST)(row_id=row_ids[missing].as_py())


ROWIDS_LISTED = 1024  # a request naming more rowids asks for their range instead of a list


def _naming(rowid: pa.Field, row_ids: pa.Array) -> str:
    """The filter JSON of the rows these rowids name: their list, or, for a long one, the
    range they span (a short filter that still lets the table skip the rest)."""
    schema = pa.schema([rowid])
    if len(row_ids) <= ROWIDS_LISTED:
        values = tuple(dict.fromkeys(row_ids.to_pylist()))
        return filters.to_json(filters.In(rowid.name, values, negated=False), schema)
    low, high = pc.min_max(row_ids).values()
    return filters.to_json(
        filters.Between(rowid.name, low.as_py(), high.as_py(), True, True), schema
    )


@rule(Rule.ROW_COUNT_MATCHES, RulePhase.ROWS_READ)
def row_count_matches(facts: Facts) -> None:
    """row_count_matches: a DoPut UPDATE sends one row per rowid."""
    assert facts.row_ids is not None
    if len(facts.row_ids) != facts.rows:
        raise facts.row.rule_error(Rule.ROW_COUNT_MATCHES)(
            row_ids=len(facts.row_ids), rows=facts.rows
        )


@rule(Rule.ROW_IDS_NOT_EMPTY, RulePhase.ROW_IDS)
def row_ids_not_empty(facts: Facts) -> None:
    """row_ids_not_empty: the row_ids list of a spec-002 request names a row at least."""
    if not facts.row_ids:
        raise facts.row.rule_error(Rule.ROW_IDS_NOT_EMPTY)()


@rule(Rule.ROW_IDS_WITHIN_LIMIT, RulePhase.ROW_IDS)
def row_ids_within_limit(facts: Facts) -> None:
    """row_ids_within_limit: no longer than the server allows (--max-row-ids)."""
    count, limit = len(facts.row_ids or ()), facts.row_ids_limit
    if limit is not None and count > limit:
        raise facts.row.rule_error(Rule.ROW_IDS_WITHIN_LIMIT)(count=count, limit=limit)


def invalid_column(batch: pa.RecordBatch) -> str | None:
    """The first column of a client's batch whose data Arrow's full validation refuses, and
    why (or the batch's, where no one column is at fault), without Arrow's text (which
    repeats the client's values); None when the batch is valid.
    An IPC reader takes the buffers as they came: a table or a function reading past one
    reads the server's memory. About 5 ms a million rows of four columns, one a string."""
    try:
        batch.validate(full=True)
        return None
    except pa.ArrowInvalid:
        pass  # which column, below
    for field, column in zip(batch.schema, batch.columns, strict=True):
        try:
            column.validate(full=True)
        except pa.ArrowInvalid as invalid:
            utf8 = "UTF8" in str(invalid)
            what = "a string that is not UTF-8" if utf8 else "data that is not valid Arrow"
            return f"column {shown(field.name)} ({shown_type(field.type)}) holds {what}"
    return "batch holds data that is not valid Arrow"  # its columns' lengths, say
