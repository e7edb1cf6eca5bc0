"""What a name typed in another case means (deviation names_any_case): DuckDB takes a name
whatever its case and sends a DDL statement's names as the user typed them (`DROP TABLE
s.orders` of a table listed as Orders), while its scans and DML carry the names it listed; a
lake function's 'schema.table' argument is typed text too.

Each name is kept when an object has it exactly; else it becomes the name of the one object
that has it in another case; else it stays as typed, and the lookup proper answers for it
(NOT_FOUND, or the failure of a catalog that raised). A schema is found only among those the
caller may read, so that no answer tells of a schema the grants hide; its grants are then
checked on its own name, as they are for every call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol

import pyarrow as pa

from airport_contracts import Context, Schema, Table

from .access.grants import may_read, readable
from .names import name_problem, others_in_another_case


class Schemas(Protocol):
    """What a name is found among: a Catalog's lookups (any catalog's list of schemas)."""

    def schema(self, ctx: Context, name: str) -> Schema | None: ...

    def schemas(self, ctx: Context) -> Sequence[Schema]: ...


def found_schema(ctx: Context, catalog: Schemas, name: str) -> str:
    """The name of the schema name finds (the module's rule), among those ctx may read."""
    if name_problem(name) is not None:
        return name
    try:
        if may_read(ctx, name) and catalog.schema(ctx, name) is not None:
            return name
        names = [schema.name() for schema in catalog.schemas(ctx)]
    except Exception:  # the lookup proper reports it
        return name
    return _one_other(name, readable(ctx, names, str))


def found_table(ctx: Context, schema: Schema, name: str) -> str:
    """The name of the table of schema that name finds (the module's rule)."""
    if name_problem(name) is not None:
        return name
    try:
        if schema.table(ctx, name) is not None:
            return name
        names = [table.name() for table in schema.tables(ctx)]
    except Exception:  # the lookup proper reports it
        return name
    return _one_other(name, names)


def found_column(columns: pa.Schema | pa.StructType, name: str) -> str:
    """The name of the column (or struct field) that name finds (the module's rule)."""
    names = [field.name for field in columns]
    return name if name in names else _one_other(name, names)


def found_path(columns: pa.Schema, path: Sequence[str]) -> list[str]:
    """A path of names into struct fields, each found in its level (the module's rule); the
    names below a level that is not a struct are kept as typed."""
    found: list[str] = []
    level: pa.Schema | pa.StructType | None = columns
    for name in path:
        if level is None:
            found.append(name)
            continue
        name = found_column(level, name)
        found.append(name)
        index = level.get_field_index(name)
        kind = level.field(index).type if index >= 0 else None
        level = kind if kind is not None and pa.types.is_struct(kind) else None
    return found


def found_column_schema(columns: pa.Schema, data: bytes) -> bytes:
    """A serialized one-field schema whose field name finds a column, with the column's name;
    anything else as it came (its action's binder refuses what is not one field)."""
    try:
        schema = pa.ipc.read_schema(pa.py_buffer(data))
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError):
        return data
    if len(schema) != 1:
        return data
    name = found_column(columns, schema.field(0).name)
    if name == schema.field(0).name:
        return data
    renamed = pa.schema([schema.field(0).with_name(name)], metadata=schema.metadata)
    return bytes(renamed.serialize().to_pybytes())


def _one_other(name: str, names: Sequence[str]) -> str:
    """The one of names that is name in another case, else name (none, or two or more)."""
    others = others_in_another_case(name, names)
    return others[0] if len(others) == 1 else name


def with_found_names(
    ctx: Context,
    request: Any,
    existing: Sequence[tuple[str, str]],
    schema: Schema | None,
    table: Table | None,
    catalog: Schemas,
) -> Any:
    """request with the names of its existing fields (a DdlActionRow's (kind, field) pairs)
    found: a schema's in catalog, a table's in schema, a column's in table."""
    changes: dict[str, Any] = {}
    columns = table.arrow_schema() if table is not None else None
    for kind, field_name in existing:
        value = getattr(request, field_name)
        if not value:
            continue
        if kind == "schema":
            changes[field_name] = found_schema(ctx, catalog, value)
        elif kind == "table" and schema is not None:
            changes[field_name] = found_table(ctx, schema, value)
        elif kind == "column" and columns is not None:
            changes[field_name] = found_column(columns, value)
        elif kind == "column_path" and columns is not None:
            changes[field_name] = found_path(columns, value)
        elif kind == "column_schema" and columns is not None:
            changes[field_name] = found_column_schema(columns, value)
    return dataclasses.replace(request, **changes) if changes else request
