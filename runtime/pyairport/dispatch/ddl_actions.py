"""DoAction DDL (protocol §5): CREATE/DROP SCHEMA, CREATE/DROP/RENAME TABLE and ALTER TABLE,
every action run from its row (DDL_ACTIONS) the same way: decode the body, check the catalog
name and the required fields, look up what the action changes (a missing schema or table is
a success doing nothing when the request says ignore_not_found), check its capability, call
it, map the sentinel a backend raises to the row's error, and answer.

What differs per action is only how the request becomes the method's arguments: the
contract's row says it where fields are copied as they are (bind), else a method of
RequestBinders, which implements the generated DdlBinders (one abstract method per action
without a bind map).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from airport_contracts import (
    AddColumnOptions,
    AddColumnParams,
    AddFieldOptions,
    AddFieldParams,
    AirportError,
    ChangeColumnTypeOptions,
    ChangeColumnTypeParams,
    ColumnSchemaNotOneField,
    Context,
    CreateSchemaOptions,
    CreateSchemaParams,
    CreateTableOptions,
    CreateTableParams,
    DropSchemaOptions,
    DropSchemaParams,
    InvalidArrowSchema,
    InvalidColumnSchema,
    InvalidOnConflict,
    InvalidPayload,
    OnConflict,
    RenamedTableLookupFailed,
    Schema,
    SerializedContents,
    SerializeSchemaContentsFailed,
    Table,
    implements,
)
from airport_contracts.dispatch import DDL_ACTIONS, DdlBinders
from airport_contracts.errors import DdlSchemaNotFound, DdlTableNotFound
from airport_support.compressed import pack_compressed
from airport_support.rows import DdlActionRow, DdlBinding

from ..access.audit import audit
from ..access.grants import admit_schema
from ..any_case import found_schema, found_table, with_found_names
from ..names import NameRefused, check_columns, check_name, refused, same_name
from ..wire.go_text import go_quote
from .catalog_actions import check_catalog
from .flight_infos import FlightInfos
from .tables import Tables


@dataclass(frozen=True)
class Bound:
    """A request as its method's arguments (after ctx), and the names its errors carry: by
    parameter (schema, table, column), overridden per sentinel where one action's errors name
    different things (rename_column: the old name when missing, the new one when taken)."""

    args: tuple[Any, ...]
    names: Mapping[str, str] = field(default_factory=dict)
    by_sentinel: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    renamed_to: str = ""  # rename_table: the FlightInfo answered is the table's new name's
    # Held to the name rule before the call: the names the request carries that no lookup
    # checked (by kind), and the columns of a new table or column (their nested fields too).
    checked_names: tuple[tuple[str, str], ...] = ()
    new_columns: pa.Schema | None = None


@dataclass(frozen=True)
class Found:
    """A DDL request with its names as the objects have them, and what it changes: its
    schema and table when it targets one (else the catalog), and whether the request says
    ignore_not_found."""

    request: Any
    schema: Schema | None
    table: Table | None
    ignoring: bool


def _ipc_schema(data: bytes, error: Callable[..., AirportError]) -> pa.Schema:
    try:
        return pa.ipc.read_schema(pa.py_buffer(data))
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
        raise error(error=str(exc).splitlines()[0]) from None


def _one_field(data: bytes) -> pa.Schema:
    schema = _ipc_schema(data, InvalidColumnSchema)
    if len(schema) != 1:
        raise ColumnSchemaNotOneField(count=len(schema))
    return schema


_ON_CONFLICT = {"": OnConflict.ERROR, **{value.value: value for value in OnConflict}}


_PLAIN_CAST = re.compile(
    r'\s*(?:TRY_)?CAST\s*\(\s*("(?:[^"]|"")+"|[^\s()"]+)\s+AS\s+.+\)\s*', re.IGNORECASE | re.DOTALL
)


def conversion_expression(expression: str, column: str) -> str:
    """The USING expression a type change asks for, or "" for a plain conversion of the
    column's values to the new type. DuckDB sends `CAST(col AS type)` when the statement has
    no USING (`ALTER t ALTER col TYPE BIGINT`), which is that plain conversion; the column
    alone means the same (named as typed, in any case: deviation names_any_case)."""
    match = _PLAIN_CAST.fullmatch(expression)
    operand = match.group(1) if match else expression.strip()
    if operand.startswith('"') and operand.endswith('"'):
        operand = operand[1:-1].replace('""', '"')
    return "" if same_name(operand, column) else expression


class RequestBinders(DdlBinders):
    """The requests the contract cannot bind by copying fields (no bind: in their rows)."""

    def create_schema(self, request: CreateSchemaParams) -> Bound:
        opts = CreateSchemaOptions(comment=request.comment or "", tags=dict(request.tags))
        return Bound((request.schema, opts), {"schema": go_quote(request.schema)})

    def drop_schema(self, request: DropSchemaParams) -> Bound:
        name = request.name or request.schema_name  # Go: name, else schema_name
        opts = DropSchemaOptions(ignore_not_found=request.ignore_not_found)
        return Bound((name, opts), {"schema": go_quote(name)})

    def create_table(self, request: CreateTableParams) -> Bound:
        schema = _ipc_schema(request.arrow_schema, InvalidArrowSchema)
        on_conflict = _ON_CONFLICT.get(request.on_conflict)
        if on_conflict is None:
            raise InvalidOnConflict(value=go_quote(request.on_conflict))
        opts = CreateTableOptions(
            on_conflict=on_conflict,
            not_null_constraints=list(request.not_null_constraints),
            unique_constraints=list(request.unique_constraints),
            check_constraints=list(request.check_constraints),
        )
        return Bound(
            (request.table_name, schema, opts),
            {"table": go_quote(request.table_name)},
            checked_names=(("table", request.table_name),),
            new_columns=schema,
        )

    def add_column(self, request: AddColumnParams) -> Bound:
        column = _one_field(request.column_schema)
        opts = AddColumnOptions(
            if_column_not_exists=request.if_column_not_exists,
            ignore_not_found=request.ignore_not_found,
        )
        return Bound((column, opts), {"column": go_quote(column.field(0).name)}, new_columns=column)

    def change_column_type(self, request: ChangeColumnTypeParams) -> Bound:
        column = _ipc_schema(request.column_schema, InvalidColumnSchema)
        opts = ChangeColumnTypeOptions(ignore_not_found=request.ignore_not_found)
        name = column.field(0).name if len(column) else ""
        expression = conversion_expression(request.expression, name)
        return Bound((column, expression, opts))

    def add_field(self, request: AddFieldParams) -> Bound:
        column = _ipc_schema(request.column_schema, InvalidColumnSchema)
        opts = AddFieldOptions(
            ignore_not_found=request.ignore_not_found,
            if_field_not_exists=request.if_field_not_exists,
        )
        return Bound((column, opts), new_columns=column)


def bind_fields(binding: DdlBinding, request: Any) -> Bound:
    """A request bound as the contract's row says (DdlActionRow.bind): its fields copied."""

    def quoted(names: tuple[tuple[str, str], ...]) -> dict[str, str]:
        return {param: go_quote(getattr(request, field_name)) for param, field_name in names}

    options = binding.options(**{name: getattr(request, name) for name in binding.options_fields})
    return Bound(
        (*(getattr(request, name) for name in binding.args), options),
        quoted(binding.names),
        by_sentinel={sentinel: quoted(names) for sentinel, names in binding.by_sentinel},
        renamed_to=getattr(request, binding.renamed_to) if binding.renamed_to else "",
        checked_names=tuple((kind, getattr(request, name)) for kind, name in binding.checked),
    )


def binder(row: DdlActionRow) -> Callable[[Any], Bound] | None:
    """How the row's request becomes its method's arguments: the contract's bind map, else
    RequestBinders' method of the action's name (None: neither has one)."""
    binding = row.bind
    if binding is not None:
        return lambda request: bind_fields(binding, request)
    return getattr(_BINDERS, row.name, None)


def check_binders(rows: Mapping[str, DdlActionRow]) -> None:
    """Refuse a binder for a row the contract binds itself: it would never run."""
    both = sorted(name for name, row in rows.items() if row.bind and hasattr(RequestBinders, name))
    if both:
        raise RuntimeError(f"RequestBinders binds {both}, which the contract binds (bind:)")


_BINDERS = RequestBinders()  # cannot be made while an action without a bind map lacks a method
check_binders(DDL_ACTIONS)


class DdlActions:
    """The DDL actions over one catalog."""

    def __init__(self, tables: Tables, infos: FlightInfos, catalog_name: str = "") -> None:
        self.tables = tables
        self.infos = infos
        self.catalog_name = catalog_name

    def serve(
        self, ctx: Context, row: DdlActionRow, body: bytes, decoded: Any = None
    ) -> list[bytes]:
        """The action's answer (decoded: its body already decoded, by the transport when it
        routed the call)."""
        request = decoded
        if request is None:
            try:
                request = row.request.decode(body)
            except InvalidPayload as exc:  # Go's msgpack.Decode words its errors so
                raise row.bad_payload(
                    error=f"failed to decode MessagePack: {exc.problem}"
                ) from None
        where = (self.catalog_name, *_changed_object(row, request))
        try:
            found = self._find(ctx, row, request)
            if found is None:  # a missing schema or table the request ignores
                answer: list[bytes] = []
            else:
                where = (self.catalog_name, *_changed_object(row, found.request))
                answer = self._run(ctx, row, found)
        except Exception as exc:
            audit(ctx, row.name, where, None, exc)
            raise
        audit(ctx, row.name, where, None)
        return answer

    def _find(self, ctx: Context, row: DdlActionRow, request: Any) -> Found | None:
        """What the request changes, its names as the objects have them (any_case), or None
        when its schema or table is missing and it says ignore_not_found."""
        catalog = self.tables.catalog
        check_catalog(catalog, getattr(request, row.catalog_field))  # type: ignore[arg-type]
        for field_name, error in row.required:
            if not getattr(request, field_name):
                raise error()
        ignoring = row.ignore_not_found and bool(getattr(request, "ignore_not_found", False))
        schema: Schema | None = None
        table: Table | None = None
        if row.target in ("schema", "table"):
            typed = getattr(request, row.schema_field)
            schema_name = found_schema(ctx, catalog, typed)
            request = dataclasses.replace(request, **{row.schema_field: schema_name})
            schema = self.tables.schema(ctx, schema_name)
            if schema is None:
                if ignoring:
                    return None
                raise DdlSchemaNotFound(schema=go_quote(typed))
        if row.target == "table":
            assert schema is not None
            typed = getattr(request, row.table_field)
            table_name = found_table(ctx, schema, typed)
            request = dataclasses.replace(request, **{row.table_field: table_name})
            table = self.tables.table_in(ctx, schema, table_name)
            if table is None:
                if ignoring:
                    return None
                raise DdlTableNotFound(table=go_quote(typed))
        request = with_found_names(ctx, request, row.existing, schema, table, catalog)
        if row.target == "catalog":  # create_schema, drop_schema: the schema is the object
            admit_schema(ctx, _changed_object(row, request)[0])
        return Found(request, schema, table, ignoring)

    def _run(self, ctx: Context, row: DdlActionRow, found: Found) -> list[bytes]:
        """Call the action's method on what it changes, and answer."""
        target: Any = self.tables.catalog
        if found.table is not None:
            target = found.table
        elif found.schema is not None:
            target = found.schema
        if not implements(target, row.interface):
            raise row.unsupported()
        bind = binder(row)
        assert bind is not None  # require_implemented refused the contract at import
        bound = bind(found.request)
        for kind, name in bound.checked_names:
            check_name(kind, name)
        if bound.new_columns is not None:
            check_columns(bound.new_columns)
        try:
            result = getattr(target, row.method)(ctx, *bound.args)
        except AirportError:
            raise
        except NameRefused as exc:
            raise refused(exc) from None
        except Exception as exc:
            raise _mapped(row, bound, exc) from exc
        self._changed()
        return self._answer(ctx, row, bound, found, result)

    def _changed(self) -> None:
        """DuckDB reloads its catalog when catalog_version moves (protocol §2.5)."""
        changed = getattr(self.tables.catalog, "changed", None)
        if callable(changed):
            changed()

    def _answer(
        self, ctx: Context, row: DdlActionRow, bound: Bound, found: Found, result: Any
    ) -> list[bytes]:
        if row.answer == "none":
            return []
        if row.answer == "schema_contents":
            return [self._contents(ctx, result)]
        schema, table = found.schema, found.table
        assert schema is not None
        if bound.renamed_to:
            table = self.tables.table_in(ctx, schema, bound.renamed_to, RenamedTableLookupFailed)
            if table is None and found.ignoring:
                # ALTER TABLE IF EXISTS of a table that was not there renamed nothing: nothing
                # to answer, as when its schema is missing (deviation
                # rename_if_exists_answers_nothing)
                return []
            if table is None:
                raise RenamedTableLookupFailed(error=f"table {bound.renamed_to!r} not found")
        elif result is not None:
            table = result
        assert table is not None
        info = self.infos.for_table(schema.name(), table, with_catalog=True, ticket_catalog=False)
        return [info.SerializeToString()]

    def _contents(self, ctx: Context, schema: Schema) -> bytes:
        try:
            infos = [
                self.infos.for_table(schema.name(), t, with_catalog=True).SerializeToString()
                for t in schema.tables(ctx)
            ]
        except Exception as exc:
            raise SerializeSchemaContentsFailed(error=exc) from exc
        serialized = pack_compressed(infos, bin_type=True)
        return SerializedContents(
            sha256=hashlib.sha256(serialized).hexdigest(), url=None, serialized=serialized
        ).encode()


def _mapped(row: DdlActionRow, bound: Bound, exc: Exception) -> AirportError:
    """The row's error for what the backend raised: its sentinel's, else failed."""
    for sentinel, error in row.sentinels.items():
        if isinstance(exc, sentinel):
            names = {**bound.names, **bound.by_sentinel.get(sentinel.__name__, {})}
            wanted = getattr(error, "params", ())
            return error(**{name: names.get(name, "") for name in wanted})
    return row.failed(error=exc)


def _changed_object(row: DdlActionRow, request: Any) -> tuple[str, ...]:
    """The schema (and table) a DDL request changes: create_schema names it `schema`,
    drop_schema `name` (else `schema_name`), the others by their row's fields."""
    if row.target == "catalog":
        named = getattr(request, "schema", "") or getattr(request, "name", "")
        return (named or getattr(request, "schema_name", ""),)
    schema = getattr(request, row.schema_field)
    if row.target == "table":
        return (schema, getattr(request, row.table_field))
    table = getattr(request, "table_name", None) or getattr(request, "name", None)
    return (schema, table) if isinstance(table, str) and table else (schema,)
