"""The column changes of a memory table (protocol §5): each is a function (schema, rows) →
(schema, rows), rowid column first, that MemoryTable applies to its committed rows.

A column change rewrites the table's committed rows under its lock, as one step: statements
already committed are in it, scans already running keep reading the rows they started with.
Everything a change refuses is refused before anything changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from airport_contracts import (
    AddColumnOptions,
    AddFieldOptions,
    AlreadyExists,
    ChangeColumnTypeOptions,
    DropNotNullOptions,
    NotFound,
    RemoveColumnOptions,
    RemoveFieldOptions,
    RenameColumnOptions,
    RenameFieldOptions,
    SetDefaultOptions,
    SetNotNullOptions,
    Unimplemented,
)

from ...names import same_name
from ..ddl_rules import fields_to_add

DEFAULT_METADATA_KEY = b"default"
"""Field metadata holding a column's DEFAULT expression, as set_default records it."""

Change = Callable[[pa.Schema, pa.Table], tuple[pa.Schema, pa.Table]]


def _named(schema: pa.Schema, name: str) -> int | None:
    """The index of the column (the rowid column included) DuckDB and Delta take name for
    (same_name), if any."""
    for index in range(len(schema)):
        if same_name(schema.field(index).name, name):
            return index
    return None


def _index(schema: pa.Schema, name: str) -> int:
    """A user column's index; the rowid column (index 0) is not one."""
    index: int = schema.get_field_index(name)
    if index <= 0:
        raise NotFound(f"column {name!r} not found")
    return index


def add_column(column: pa.Schema, opts: AddColumnOptions) -> Change:
    field = column.field(0)

    def change(schema: pa.Schema, rows: pa.Table) -> tuple[pa.Schema, pa.Table]:
        if _named(schema, field.name) is not None:
            if opts.if_column_not_exists:
                return schema, rows
            raise AlreadyExists(f"column {field.name!r} already exists")
        if not field.nullable and rows.num_rows:
            raise ValueError(f"column {field.name!r} is NOT NULL and the table has rows")
        return schema.append(field), rows.append_column(field, pa.nulls(rows.num_rows, field.type))

    return change


def remove_column(name: str, opts: RemoveColumnOptions) -> Change:
    def change(schema: pa.Schema, rows: pa.Table) -> tuple[pa.Schema, pa.Table]:
        if schema.get_field_index(name) <= 0 and opts.if_column_exists:
            return schema, rows
        index = _index(schema, name)
        if len(schema) == 2:
            raise ValueError("a table keeps at least one column")
        return schema.remove(index), rows.remove_column(index)

    return change


def rename_column(old_name: str, new_name: str, opts: RenameColumnOptions) -> Change:
    def change(schema: pa.Schema, rows: pa.Table) -> tuple[pa.Schema, pa.Table]:
        index = _index(schema, old_name)
        if _named(schema, new_name) is not None:  # its own in another case too, as on Delta
            raise AlreadyExists(f"column {new_name!r} already exists")
        field = schema.field(index).with_name(new_name)
        return schema.set(index, field), rows.rename_columns(
            [new_name if i == index else n for i, n in enumerate(rows.column_names)]
        )

    return change


def change_column_type(column: pa.Schema, expression: str, opts: ChangeColumnTypeOptions) -> Change:
    field = column.field(0)

    def change(schema: pa.Schema, rows: pa.Table) -> tuple[pa.Schema, pa.Table]:
        index = _index(schema, field.name)
        if expression and expression != field.name:
            raise Unimplemented("the memory backend converts values by cast only, not USING")
        old = schema.field(index)
        new = old.with_type(field.type)
        try:
            values = pc.cast(rows.column(index), field.type, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ValueError(
                f"column {field.name!r} has values that are not {field.type}: {exc}"
            ) from None
        return schema.set(index, new), rows.set_column(index, new, values)

    return change


def set_not_null(name: str, opts: SetNotNullOptions) -> Change:
    def change(schema: pa.Schema, rows: pa.Table) -> tuple[pa.Schema, pa.Table]:
        index = _index(schema, name)
        if rows.column(index).null_count:
            raise ValueError(f"column {name!r} holds nulls")
        field = schema.field(index).with_nullable(False)
        return schema.set(index, field), rows.cast(schema.set(index, field))

    return change


def drop_not_null(name: str, opts: DropNotNullOptions) -> Change:
    def change(schema: pa.Schema, rows: pa.Table) -> tuple[pa.Schema, pa.Table]:
        index = _index(schema, name)
        field = schema.field(index).with_nullable(True)
        return schema.set(index, field), rows.cast(schema.set(index, field))

    return change


def set_default(name: str, expression: str, opts: SetDefaultOptions) -> Change:
    def change(schema: pa.Schema, rows: pa.Table) -> tuple[pa.Schema, pa.Table]:
        index = _index(schema, name)
        field = schema.field(index)
        metadata = dict(field.metadata or {})
        if expression:
            metadata[DEFAULT_METADATA_KEY] = expression.encode()
        else:
            metadata.pop(DEFAULT_METADATA_KEY, None)
        return schema.set(index, field.with_metadata(metadata)), rows

    return change


def _struct_at(schema: pa.Schema, path: Sequence[str]) -> tuple[int, list[pa.Field]]:
    """The top-level index of path[0] and the fields down the path (each a struct's field)."""
    if not path:
        raise NotFound("empty column path")
    index = _index(schema, path[0])
    fields = [schema.field(index)]
    for name in path[1:]:
        parent = fields[-1].type
        if not pa.types.is_struct(parent) or parent.get_field_index(name) < 0:
            raise NotFound(f"field {name!r} not found")
        fields.append(parent.field(parent.get_field_index(name)))
    return index, fields


def _edit_struct(
    values: pa.Array, path: Sequence[str], edit: Callable[[pa.StructArray], pa.StructArray]
) -> pa.StructArray:
    """values (a struct array) with edit applied to the struct at path below it."""
    if not path:
        return edit(values)
    struct = values.type
    children = [values.field(i) for i in range(struct.num_fields)]
    at = struct.get_field_index(path[0])
    children[at] = _edit_struct(children[at], path[1:], edit)
    names = [struct.field(i).name for i in range(struct.num_fields)]
    return pa.StructArray.from_arrays(children, names=names, mask=values.is_null())


def _struct_change(path: Sequence[str], edit: Callable[[pa.StructArray], pa.StructArray]) -> Change:
    """A change of the struct at path: path[0] a column, the rest struct fields down to it."""

    def change(schema: pa.Schema, rows: pa.Table) -> tuple[pa.Schema, pa.Table]:
        index, fields = _struct_at(schema, path)
        if not pa.types.is_struct(fields[-1].type):
            raise NotFound(f"{'.'.join(path)} is not a struct")
        column = rows.column(index).combine_chunks() if rows.num_rows else None
        old = schema.field(index)
        if column is None:
            empty = pa.array([], type=old.type)
            new_values = _edit_struct(empty, path[1:], edit)
        else:
            new_values = _edit_struct(column, path[1:], edit)
        new_field = old.with_type(new_values.type)
        return schema.set(index, new_field), rows.set_column(index, new_field, new_values)

    return change


def add_field(column: pa.Schema, opts: AddFieldOptions) -> Change:
    """column's one field names a struct column (DuckDB sends its path's first name) and
    carries the struct type it should have: the fields it lacks are added, null."""
    wanted = column.field(0)

    def change(schema: pa.Schema, rows: pa.Table) -> tuple[pa.Schema, pa.Table]:
        index, fields = _struct_at(schema, [wanted.name])
        added = fields_to_add(wanted, fields[0].type)
        if not added:
            if opts.if_field_not_exists:
                return schema, rows
            raise AlreadyExists(f"the fields of {wanted.name!r} already exist")

        def edit(values: pa.StructArray) -> pa.StructArray:
            children = [values.field(i) for i in range(values.type.num_fields)]
            fields_now = [values.type.field(i) for i in range(values.type.num_fields)]
            children += [pa.nulls(len(values), f.type) for f in added]
            return pa.StructArray.from_arrays(
                children, fields=fields_now + added, mask=values.is_null()
            )

        return _struct_change([wanted.name], edit)(schema, rows)

    return change


def rename_field(path: Sequence[str], new_name: str, opts: RenameFieldOptions) -> Change:
    def edit(values: pa.StructArray) -> pa.StructArray:
        struct = values.type
        at = struct.get_field_index(path[-1])
        fields = [struct.field(i) for i in range(struct.num_fields)]
        if any(same_name(f.name, new_name) for f in fields):
            raise AlreadyExists(f"field {new_name!r} already exists")
        fields[at] = fields[at].with_name(new_name)
        children = [values.field(i) for i in range(struct.num_fields)]
        return pa.StructArray.from_arrays(children, fields=fields, mask=values.is_null())

    def change(schema: pa.Schema, rows: pa.Table) -> tuple[pa.Schema, pa.Table]:
        _struct_at(schema, path)  # NotFound first
        if len(path) < 2:
            raise NotFound("a field path names a column, then its fields")
        return _struct_change(path[:-1], edit)(schema, rows)

    return change


def remove_field(path: Sequence[str], opts: RemoveFieldOptions) -> Change:
    def edit(values: pa.StructArray) -> pa.StructArray:
        struct = values.type
        at = struct.get_field_index(path[-1])
        if struct.num_fields == 1:
            raise ValueError("a struct keeps at least one field")
        keep = [i for i in range(struct.num_fields) if i != at]
        return pa.StructArray.from_arrays(
            [values.field(i) for i in keep],
            fields=[struct.field(i) for i in keep],
            mask=values.is_null(),
        )

    def change(schema: pa.Schema, rows: pa.Table) -> tuple[pa.Schema, pa.Table]:
        _struct_at(schema, path)
        if len(path) < 2:
            raise NotFound("a field path names a column, then its fields")
        return _struct_change(path[:-1], edit)(schema, rows)

    return change
