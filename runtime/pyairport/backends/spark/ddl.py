"""DDL on Delta tables (protocol §5): schemas (a warehouse's folders, or the catalog's
databases), tables created as Delta with the constraints sent and row tracking on (so UPDATE
and DELETE work), and ALTER TABLE as Delta's own statements, each one Delta commit or none.

Renaming or dropping a column needs Delta's column mapping: it is turned on first (a protocol
upgrade of the table, as Spark SQL users do by hand). A type change is Delta's type widening;
a default needs Delta's column defaults feature; both are turned on when asked for. What
Delta refuses is refused with Delta's reason, in one line.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from airport_contracts import (
    AddColumnOptions,
    AddFieldOptions,
    AlreadyExists,
    ChangeColumnTypeOptions,
    Context,
    CreateSchemaOptions,
    CreateTableOptions,
    DropNotNullOptions,
    DropSchemaOptions,
    DropTableOptions,
    EngineUnavailable,
    NotFound,
    OnConflict,
    RemoveColumnOptions,
    RemoveFieldOptions,
    RenameColumnOptions,
    RenameFieldOptions,
    RenameTableOptions,
    SchemaNotEmpty,
    SetDefaultOptions,
    SetNotNullOptions,
    Table,
    Unimplemented,
    find_rowid_column,
)

from ...catalog import CatalogSchema, MutableCatalog
from ...names import field_names
from .folders import WORK_PREFIX, check_storable
from .lake import Lake
from .layout import CREATED_TABLE_PROPERTIES, ROW_TRACKING, ROWID, Layout
from .session import SPARK_STOPPED, engine_lost
from .sql import one_line, quote
from .stored_types import (
    SERVED_TYPES,
    for_schema,
    property_value,
    served_types,
    stored_field,
    stored_type,
)

COLUMN_MAPPING = {
    "delta.columnMapping.mode": "name",
    "delta.minReaderVersion": "2",
    "delta.minWriterVersion": "5",
}
TYPE_WIDENING = {"delta.enableTypeWidening": "true"}
COLUMN_DEFAULTS = {"delta.feature.allowColumnDefaults": "supported"}
# The characters Delta takes in a column name only with column mapping on
# (DELTA_INVALID_CHARACTERS_IN_COLUMN_NAMES); the name rule already refuses the control ones.
MAPPED_NAME_CHARACTERS = frozenset(" ,;{}()=")


def mapping_for(schema: pa.Schema) -> dict[str, str]:
    """The properties a table needs to keep schema's column names exactly: column mapping
    when one of them (or a nested field's) holds a character Delta takes only so."""
    needs = any(MAPPED_NAME_CHARACTERS & set(name) for name in field_names(schema))
    return dict(COLUMN_MAPPING) if needs else {}


# What a CHECK expression may not hold: it runs inside the server's Spark on every write, so a
# subquery would read tables the writer may not (another schema's, any path), and reflect /
# java_method call any static Java method (System.exit among them).
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`]|``)*`")
_REFUSED_IN_CHECKS = re.compile(
    r"\b(?:select|from|table|reflect|try_reflect|java_method)\b", re.IGNORECASE
)


def check_expression(expression: str) -> str:
    """expression, a CHECK constraint's, once it is one Spark may run on a write: no
    subquery, no reflection (DeltaRefused, naming what is refused)."""
    bare = _QUOTED.sub("''", expression)
    found = _REFUSED_IN_CHECKS.search(bare)
    if found is not None or ";" in bare:
        what = found.group(0) if found is not None else ";"
        raise DeltaRefused(
            f"a CHECK constraint tests the row's own columns: {what!r} is not allowed in one"
        )
    return expression


def not_null_constraint(column: str) -> str:
    """The CHECK constraint that holds a column NOT NULL (set_not_null)."""
    return "not_null_" + "".join(c if c.isalnum() else "_" for c in column).lower()


class DeltaRefused(RuntimeError):
    """Delta refused the statement: its reason, in one line."""


def _run(spark: Any, statement: str) -> None:
    try:
        spark.sql(statement)
    except Exception as exc:  # AnalysisException and friends: Spark's reason, no plan
        if engine_lost(exc):
            raise EngineUnavailable(error=SPARK_STOPPED) from None
        raise DeltaRefused(one_line(exc)) from None


def spark_type(data_type: pa.DataType) -> str:
    """The Spark SQL type of an Arrow type, as DDL spells it; Unimplemented, naming the type
    and what to use instead, for a type a Delta column cannot hold exactly (refused, never
    stored as something else)."""
    from pyspark.sql.pandas.types import from_arrow_type

    _refuse_unstorable(data_type)
    return _ddl_type(from_arrow_type(data_type))


def _refuse_unstorable(data_type: pa.DataType) -> None:
    """Unimplemented for a type Delta would not store exactly, nested ones included."""
    if isinstance(data_type, pa.BaseExtensionType):
        raise Unimplemented(
            f"Delta has no column type for the Arrow extension type {data_type.extension_name}"
            " (DuckDB sends one with arrow_lossless_conversion = true: turn it off, or use"
            " VARCHAR for UUID, BOOLEAN for bool8)"
        )
    if pa.types.is_unsigned_integer(data_type):
        raise Unimplemented(
            f"Delta has no unsigned integer type ({data_type}): use a signed type one size"
            " wider (SMALLINT, INTEGER, BIGINT) or DECIMAL(20, 0)"
        )
    if pa.types.is_timestamp(data_type) and data_type.unit == "ns":
        raise Unimplemented(
            "Delta stores timestamps in microseconds, so TIMESTAMP_NS would lose its"
            " nanoseconds: use TIMESTAMP, or BIGINT nanoseconds"
        )
    if pa.types.is_time(data_type) or pa.types.is_duration(data_type):
        raise Unimplemented(f"Delta has no {data_type} column type: use BIGINT or VARCHAR")
    if pa.types.is_interval(data_type):
        raise Unimplemented("Delta has no INTERVAL column type: use VARCHAR or BIGINT")
    if pa.types.is_float16(data_type):
        raise Unimplemented("Delta has no half-precision float: use FLOAT")
    if pa.types.is_decimal(data_type) and data_type.precision > 38:
        raise Unimplemented(
            f"Delta decimals hold at most 38 digits ({data_type}): use DECIMAL(38, s) or VARCHAR"
        )
    if pa.types.is_fixed_size_binary(data_type):
        raise Unimplemented(f"Delta has no {data_type} column type: use BLOB")
    for index in range(data_type.num_fields):
        _refuse_unstorable(data_type.field(index).type)


def _ddl_type(data_type: Any) -> str:
    """A Spark type in DDL, nested field names quoted (Spark's simpleString leaves them bare,
    so a field named `a b` or `x:y` would not parse). No session needed, Connect or not."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(data_type, StructType):
        fields = (
            f"{quote(f.name)}: {_ddl_type(f.dataType)}{'' if f.nullable else ' NOT NULL'}"
            for f in data_type.fields
        )
        return f"STRUCT<{', '.join(fields)}>"
    if isinstance(data_type, ArrayType):
        return f"ARRAY<{_ddl_type(data_type.elementType)}>"
    if isinstance(data_type, MapType):
        return f"MAP<{_ddl_type(data_type.keyType)}, {_ddl_type(data_type.valueType)}>"
    return str(data_type.simpleString())


def column_sql(field: pa.Field) -> str:
    """A column's DDL, of the type Delta stores it as (stored_types.py)."""
    stored = stored_field(field)
    return f"{quote(stored.name)} {spark_type(stored.type)}" + (
        "" if stored.nullable else " NOT NULL"
    )


def properties_sql(properties: dict[str, str]) -> str:
    """Table properties as TBLPROPERTIES lists them (a quote in a value is dropped)."""
    return ", ".join(f"'{k}' = '{v.replace(chr(39), '')}'" for k, v in properties.items())


def _created_properties(fields: list[pa.Field]) -> dict[str, str]:
    properties = {
        ROW_TRACKING: "true",
        **CREATED_TABLE_PROPERTIES,
        **mapping_for(pa.schema(fields)),
    }
    types = for_schema(pa.schema(fields))
    if types:
        properties[SERVED_TYPES] = property_value(types)
    return properties


class SparkSchema(CatalogSchema):
    """A schema of Delta tables that creates, drops and renames them (DynamicSchema)."""

    def __init__(self, name: str, backend: Lake, comment: str = "") -> None:
        super().__init__(name, comment)
        self.backend = backend

    def create_table(
        self, ctx: Context, name: str, schema: pa.Schema, opts: CreateTableOptions
    ) -> Table:
        if opts.unique_constraints:
            raise Unimplemented("Delta does not enforce UNIQUE constraints")
        check_storable("table", name)
        existing = self.table(ctx, name)
        if existing is not None and opts.on_conflict is OnConflict.IGNORE:
            return existing
        if existing is not None and opts.on_conflict is not OnConflict.REPLACE:
            raise AlreadyExists(f"table {name!r} already exists")
        backend = self.backend
        not_null = set(opts.not_null_constraints)
        rowid = find_rowid_column(schema)
        fields = [
            f.with_nullable(f.nullable and i not in not_null)
            for i, f in enumerate(schema)
            if i != rowid and f.name != ROWID
        ]
        if not fields:
            raise DeltaRefused("a Delta table needs at least one column")
        # Made under a name of its own, its constraints added, then moved into place: a
        # failure on the way leaves the schema as it was (the old table too, for REPLACE).
        building = f"{WORK_PREFIX}new_{uuid.uuid4().hex[:12]}"
        ident = backend.ident_for(self.name(), building)
        backend.prepare_schema(self.name())
        try:
            _run(
                backend.spark,
                f"CREATE TABLE {ident} ({', '.join(column_sql(f) for f in fields)}) USING delta"
                f" TBLPROPERTIES ({properties_sql(_created_properties(fields))})",
            )
            for index, check in enumerate(opts.check_constraints):
                _run(
                    backend.spark,
                    f"ALTER TABLE {ident} ADD CONSTRAINT check_{index}"
                    f" CHECK ({check_expression(check)})",
                )
            if existing is not None:
                replaced = f"{WORK_PREFIX}old_{uuid.uuid4().hex[:12]}"
                backend.move_table(self.name(), name, replaced)
                self.drop(name)
                final = backend.move_table(self.name(), building, name)
                backend.remove_table(self.name(), replaced)
            else:
                final = backend.move_table(self.name(), building, name)
        except BaseException:
            with contextlib.suppress(Exception):
                backend.remove_table(self.name(), building)
            raise
        return backend.open_table(self.name(), name, final)

    def drop_table(self, ctx: Context, name: str, opts: DropTableOptions) -> None:
        if self.table(ctx, name) is None:
            if opts.ignore_not_found:
                return
            raise NotFound(f"table {name!r} not found")
        self.backend.remove_table(self.name(), name)
        self.drop(name)

    def rename_table(
        self, ctx: Context, old_name: str, new_name: str, opts: RenameTableOptions
    ) -> None:
        if self.table(ctx, old_name) is None:
            if opts.ignore_not_found:
                return
            raise NotFound(f"table {old_name!r} not found")
        check_storable("table", new_name)
        if self.table(ctx, new_name) is not None:
            raise AlreadyExists(f"table {new_name!r} already exists")
        ident = self.backend.move_table(self.name(), old_name, new_name)
        self.drop(old_name)
        self.backend.open_table(self.name(), new_name, ident)


class SparkCatalog(MutableCatalog):
    """The served Delta tables' catalog; creates and drops schemas (DynamicCatalog)."""

    def __init__(self, backend: Lake) -> None:
        super().__init__("", refresh=backend.refresh)
        self.backend = backend

    def schema_for(self, name: str, comment: str = "") -> CatalogSchema:
        """The schema name, added (empty) when the catalog has none of that name."""
        return self.add_schema(SparkSchema(name, self.backend, comment))

    def create_schema(self, ctx: Context, name: str, opts: CreateSchemaOptions) -> CatalogSchema:
        if self.schema(ctx, name) is not None:
            raise AlreadyExists(f"schema {name!r} already exists")
        check_storable("schema", name)
        self.backend.prepare_schema(name, opts.comment)
        return self.schema_for(name, opts.comment)

    def drop_schema(self, ctx: Context, name: str, opts: DropSchemaOptions) -> None:
        schema = self.schema(ctx, name)
        if schema is None:
            if opts.ignore_not_found:
                return
            raise NotFound(f"schema {name!r} not found")
        if schema.tables(ctx):
            raise SchemaNotEmpty(f"schema {name!r} contains tables")
        self.backend.remove_schema(name)
        with self._lock:
            self._schemas.pop(name, None)
        self.changed()


# --- the column changes of a Delta table ----------------------------------------------------


@contextlib.contextmanager
def _missing_ok(opts: Any) -> Iterator[None]:
    """A column or field that is not there is no change when the request says so."""
    try:
        yield
    except NotFound:
        if not opts.ignore_not_found:
            raise


class DeltaColumns:
    """DynamicTable for SparkTable: each change one ALTER TABLE (after a table-feature
    upgrade where Delta needs one), then the table's layout read again."""

    layout: Layout
    spark: Any
    reread_layout: Callable[[], None]  # SparkTable's: the layout read again after a change

    def _user_field(self, name: str) -> pa.Field:
        schema = self.layout.schema
        index = schema.get_field_index(name)
        if index < 0 or (self.layout.rowids and index == 0):
            raise NotFound(f"column {name!r} not found")
        field: pa.Field = schema.field(index)
        return field

    def _served_types_with(
        self,
        add: dict[str, str] | None = None,
        remove: str | None = None,
        rename: tuple[str, str] | None = None,
    ) -> dict[str, str]:
        """The served_types property after a column change (nothing when it stays as is)."""
        before = served_types(self.layout.properties)
        after = {**before, **(add or {})}
        after.pop(remove or "", None)
        if rename and rename[0] in after:
            after[rename[1]] = after.pop(rename[0])
        return {} if after == before else {SERVED_TYPES: property_value(after)}

    def _alter(
        self, statement: Callable[[str], str], properties: dict[str, str] | None = None
    ) -> None:
        """statement(the table's SQL name), after the table properties it needs."""
        ident = self.layout.ident
        if properties:
            missing = {k: v for k, v in properties.items() if self.layout.properties.get(k) != v}
            if missing:
                _run(
                    self.spark, f"ALTER TABLE {ident} SET TBLPROPERTIES ({properties_sql(missing)})"
                )
        _run(self.spark, statement(ident))
        self.reread_layout()

    def add_column(self, ctx: Context, column_schema: pa.Schema, opts: AddColumnOptions) -> None:
        with _missing_ok(opts):
            field = column_schema.field(0)
            if self.layout.schema.get_field_index(field.name) >= 0:
                if opts.if_column_not_exists:
                    return
                raise AlreadyExists(f"column {field.name!r} already exists")
            self._alter(
                lambda t: f"ALTER TABLE {t} ADD COLUMNS ({column_sql(field)})",
                properties={
                    **mapping_for(column_schema),
                    **self._served_types_with(add=for_schema(pa.schema([field]))),
                },
            )

    def remove_column(self, ctx: Context, name: str, opts: RemoveColumnOptions) -> None:
        with _missing_ok(opts):
            if self.layout.schema.get_field_index(name) < 0 and opts.if_column_exists:
                return
            self._user_field(name)
            self._alter(
                lambda t: f"ALTER TABLE {t} DROP COLUMN {quote(name)}",
                properties={**COLUMN_MAPPING, **self._served_types_with(remove=name)},
            )

    def rename_column(
        self, ctx: Context, old_name: str, new_name: str, opts: RenameColumnOptions
    ) -> None:
        with _missing_ok(opts):
            self._user_field(old_name)
            if self.layout.schema.get_field_index(new_name) >= 0:
                raise AlreadyExists(f"column {new_name!r} already exists")
            self._alter(
                lambda t: f"ALTER TABLE {t} RENAME COLUMN {quote(old_name)} TO {quote(new_name)}",
                properties={
                    **COLUMN_MAPPING,
                    **self._served_types_with(rename=(old_name, new_name)),
                },
            )

    def change_column_type(
        self,
        ctx: Context,
        column_schema: pa.Schema,
        expression: str,
        opts: ChangeColumnTypeOptions,
    ) -> None:
        with _missing_ok(opts):
            field = column_schema.field(0)
            self._user_field(field.name)
            if expression and expression != field.name:
                raise Unimplemented("Delta changes a column's type by widening, not USING")
            if field.name in self.layout.retyped or stored_type(field.type):
                raise Unimplemented(
                    f"Delta stores {field.name!r} or {field.type} as another type"
                    " (stored_types), whose type is not changed"
                )
            self._alter(
                lambda t: (
                    f"ALTER TABLE {t} ALTER COLUMN {quote(field.name)} TYPE {spark_type(field.type)}"
                ),
                properties=TYPE_WIDENING,
            )

    def set_not_null(self, ctx: Context, column_name: str, opts: SetNotNullOptions) -> None:
        """Delta cannot make a nullable column NOT NULL: a CHECK (column IS NOT NULL)
        constraint holds it instead (checked against the rows there, enforced on writes)."""
        with _missing_ok(opts):
            self._user_field(column_name)
            name = not_null_constraint(column_name)
            self._alter(
                lambda t: (
                    f"ALTER TABLE {t} ADD CONSTRAINT {name} CHECK"
                    f" ({quote(column_name)} IS NOT NULL)"
                )
            )

    def drop_not_null(self, ctx: Context, column_name: str, opts: DropNotNullOptions) -> None:
        """Drops set_not_null's constraint, and Delta's own NOT NULL (from CREATE TABLE)."""
        with _missing_ok(opts):
            field = self._user_field(column_name)
            name = not_null_constraint(column_name)
            if f"delta.constraints.{name}" in self.layout.properties:
                self._alter(lambda t: f"ALTER TABLE {t} DROP CONSTRAINT IF EXISTS {name}")
            if not field.nullable:
                self._alter(
                    lambda t: f"ALTER TABLE {t} CHANGE COLUMN {quote(column_name)} DROP NOT NULL"
                )

    def set_default(
        self, ctx: Context, column_name: str, expression: str, opts: SetDefaultOptions
    ) -> None:
        with _missing_ok(opts):
            self._user_field(column_name)
            action = f"SET DEFAULT {expression}" if expression else "DROP DEFAULT"
            self._alter(
                lambda t: f"ALTER TABLE {t} ALTER COLUMN {quote(column_name)} {action}",
                properties=COLUMN_DEFAULTS,
            )

    def add_field(self, ctx: Context, column_schema: pa.Schema, opts: AddFieldOptions) -> None:
        with _missing_ok(opts):
            wanted = column_schema.field(0)
            have = self._user_field(wanted.name).type
            if not pa.types.is_struct(have) or not pa.types.is_struct(wanted.type):
                raise NotFound(f"{wanted.name!r} is not a struct column")
            added = [
                wanted.type.field(i)
                for i in range(wanted.type.num_fields)
                if have.get_field_index(wanted.type.field(i).name) < 0
            ]
            if not added:
                if opts.if_field_not_exists:
                    return
                raise AlreadyExists(f"the fields of {wanted.name!r} already exist")
            columns = ", ".join(
                f"{quote(wanted.name)}.{quote(f.name)} {spark_type(f.type)}" for f in added
            )
            self._alter(
                lambda t: f"ALTER TABLE {t} ADD COLUMNS ({columns})",
                properties=mapping_for(column_schema),
            )

    def _field_path(self, path: Sequence[str]) -> str:
        if len(path) < 2:
            raise NotFound("a field path names a column, then its fields")
        data_type = self._user_field(path[0]).type
        for name in path[1:]:
            if not pa.types.is_struct(data_type) or data_type.get_field_index(name) < 0:
                raise NotFound(f"field {name!r} not found")
            data_type = data_type.field(data_type.get_field_index(name)).type
        return ".".join(quote(p) for p in path)

    def rename_field(
        self,
        ctx: Context,
        column_path: list[str],
        new_name: str,
        opts: RenameFieldOptions,
    ) -> None:
        with _missing_ok(opts):
            path = self._field_path(column_path)
            self._alter(
                lambda t: f"ALTER TABLE {t} RENAME COLUMN {path} TO {quote(new_name)}",
                properties=COLUMN_MAPPING,
            )

    def remove_field(self, ctx: Context, column_path: list[str], opts: RemoveFieldOptions) -> None:
        with _missing_ok(opts):
            path = self._field_path(column_path)
            self._alter(lambda t: f"ALTER TABLE {t} DROP COLUMN {path}", properties=COLUMN_MAPPING)


def remove_folder(path: str) -> None:
    shutil.rmtree(path)


def move_folder(source: str, target: str) -> None:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    os.rename(source, target)
