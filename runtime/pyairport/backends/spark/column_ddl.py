"""ALTER TABLE on a Delta table's columns (protocol §5): each change one of Delta's own
statements, after the table-feature upgrade Delta needs for it, then the table's layout read
again.

Renaming or dropping a column needs Delta's column mapping: it is turned on first (a protocol
upgrade of the table, as Spark SQL users do by hand). A type change is Delta's type widening;
a default needs Delta's column defaults feature; both are turned on when asked for. A NOT NULL
on an existing column is a CHECK constraint. What Delta refuses is refused with Delta's
reason, in one line (ddl.run).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from airport_contracts import (
    AddColumnOptions,
    AddFieldOptions,
    AlreadyExists,
    ChangeColumnTypeOptions,
    Context,
    DropNotNullOptions,
    EngineUnavailable,
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
from .ddl import (
    COLUMN_MAPPING,
    column_sql,
    default_expression,
    mapping_for,
    properties_sql,
    run,
    spark_type,
)
from .layout import MAPPING_MODE, Layout
from .session import SPARK_STOPPED, engine_lost, is_connect
from .sql import one_line, quote
from .stored_types import (
    SERVED_TYPES,
    for_schema,
    kept_as_another,
    property_value,
    served_types,
    stored_field,
)

log = logging.getLogger("pyairport.spark")

TYPE_WIDENING = {"delta.enableTypeWidening": "true"}
COLUMN_DEFAULTS = {"delta.feature.allowColumnDefaults": "supported"}


def not_null_constraint(column: str) -> str:
    """The CHECK constraint that holds a column NOT NULL (set_not_null)."""
    return "not_null_" + "".join(c if c.isalnum() else "_" for c in column).lower()


@contextlib.contextmanager
def _missing_ok(opts: Any) -> Iterator[None]:
    """A column or field that is not there is no change when the request says so."""
    try:
        yield
    except NotFound:
        if not opts.ignore_not_found:
            raise


def _only_adds_fields(have: pa.DataType, wanted: pa.DataType) -> bool:
    """Whether wanted is the struct have with fields added after its own, which stay as
    they are."""
    if not pa.types.is_struct(have) or not pa.types.is_struct(wanted):
        return False
    kept = [wanted.field(i) for i in range(min(have.num_fields, wanted.num_fields))]
    return wanted.num_fields > have.num_fields and kept == [
        have.field(i) for i in range(have.num_fields)
    ]


def _delta_widens(spark: Any, held: str, wanted: str) -> bool:
    """Whether Delta's type widening takes a column of Spark type held to wanted, asked of
    Delta's own rule (TypeWidening.isTypeChangeSupported) before the table takes the feature:
    a change Delta refuses leaves the table's protocol as it was. True where the rule cannot be
    asked (Spark Connect, another Delta): the ALTER itself decides then."""
    if held == wanted or is_connect(spark):  # Delta's rule is in the Connect server's JVM
        return True
    try:
        jvm = spark._jvm
        parse = jvm.org.apache.spark.sql.types.DataType.fromDDL
        return bool(
            jvm.org.apache.spark.sql.delta.TypeWidening.isTypeChangeSupported(
                parse(held), parse(wanted)
            )
        )
    except Exception as exc:  # py4j's errors: no such class or method in this Delta
        if engine_lost(exc):
            raise EngineUnavailable(error=SPARK_STOPPED) from None
        log.warning("Delta's type-widening rule could not be asked: %s", one_line(exc))
        return True


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

    def _taken(self, name: str) -> bool:
        """Whether a column has the name, as Spark compares names ("U" is taken where "u" is,
        and where "u" is renamed)."""
        return any(same_name(n, name) for n in self.layout.schema.names)

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
        self,
        statement: Callable[[str], str],
        properties: dict[str, str] | None = None,
        served: dict[str, str] | None = None,
    ) -> None:
        """statement(the table's SQL name): after properties, the table features it needs,
        and before served, the served_types property as the change leaves it. The statement
        is written first, so a column it cannot write (a type Delta has no column for) is
        refused before anything changes; served is recorded once the statement made the change,
        so a statement Delta refuses leaves the columns served as they were."""
        ident = self.layout.ident
        written = statement(ident)
        self._set_properties(properties)
        run(self.spark, written)
        self._set_properties(served)
        self.reread_layout()

    def _set_properties(self, properties: dict[str, str] | None) -> None:
        wanted = dict(properties or {})
        if self.layout.properties.get(MAPPING_MODE, "none") != "none":
            # columns mapped by id keep their names as well as by name, and Delta changes a
            # table's mapping mode to no other (DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE)
            wanted = {k: v for k, v in wanted.items() if k not in COLUMN_MAPPING}
        missing = {k: v for k, v in wanted.items() if self.layout.properties.get(k) != v}
        if missing:
            run(
                self.spark,
                f"ALTER TABLE {self.layout.ident} SET TBLPROPERTIES ({properties_sql(missing)})",
            )

    def add_column(self, ctx: Context, column_schema: pa.Schema, opts: AddColumnOptions) -> None:
        with _missing_ok(opts):
            field = column_schema.field(0)
            if self._taken(field.name):
                if opts.if_column_not_exists:
                    return
                raise AlreadyExists(f"column {field.name!r} already exists")
            self._alter(
                lambda t: f"ALTER TABLE {t} ADD COLUMNS ({column_sql(field)})",
                properties=mapping_for(column_schema),
                served=self._served_types_with(add=for_schema(pa.schema([field]))),
            )

    def remove_column(self, ctx: Context, name: str, opts: RemoveColumnOptions) -> None:
        with _missing_ok(opts):
            if self.layout.schema.get_field_index(name) < 0 and opts.if_column_exists:
                return
            self._user_field(name)
            if len(self.layout.schema) - (1 if self.layout.rowids else 0) == 1:
                raise Unimplemented(
                    f"a Delta table keeps at least one column: {name!r} is its last"
                )
            self._alter(
                lambda t: f"ALTER TABLE {t} DROP COLUMN {quote(name)}",
                properties=COLUMN_MAPPING,
                served=self._served_types_with(remove=name),
            )

    def rename_column(
        self, ctx: Context, old_name: str, new_name: str, opts: RenameColumnOptions
    ) -> None:
        with _missing_ok(opts):
            self._user_field(old_name)
            if self._taken(new_name):
                raise AlreadyExists(f"column {new_name!r} already exists")
            self._alter(
                lambda t: f"ALTER TABLE {t} RENAME COLUMN {quote(old_name)} TO {quote(new_name)}",
                properties=COLUMN_MAPPING,
                served=self._served_types_with(rename=(old_name, new_name)),
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
            have = self._user_field(field.name)
            if expression and expression != field.name:
                raise Unimplemented("Delta changes a column's type by widening, not USING")
            if field.name in self.layout.retyped or kept_as_another(field.type):
                raise Unimplemented(
                    f"Delta stores {field.name!r} or {field.type} as another type"
                    " (stored_types), whose type is not changed"
                )
            if _only_adds_fields(have.type, field.type):
                # DuckDB's way to add a struct field (its ADD COLUMN s.f sends no field name:
                # deviation add_field_needs_the_struct); Delta's is ADD COLUMNS s.f
                self.add_field(ctx, column_schema, AddFieldOptions())
                return
            wanted = spark_type(stored_field(field).type)
            if not pa.types.is_nested(have.type) and not pa.types.is_nested(field.type):
                held = spark_type(stored_field(have).type)
                if not _delta_widens(self.spark, held, wanted):
                    raise Unimplemented(
                        f"Delta changes a column's type only by widening it: {held} to"
                        f" {wanted} is not a widening"
                    )
            self._alter(
                lambda t: f"ALTER TABLE {t} ALTER COLUMN {quote(field.name)} TYPE {wanted}",
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
            field = self._user_field(column_name)
            if expression and column_name in self.layout.retyped:
                raise Unimplemented(
                    f"Delta stores {column_name!r} as another type (stored_types), whose"
                    " DEFAULT is not set"
                )
            column_type = spark_type(stored_field(field).type)
            action = (
                f"SET DEFAULT {default_expression(self.spark, column_name, column_type, expression)}"
                if expression
                else "DROP DEFAULT"
            )
            self._alter(
                lambda t: f"ALTER TABLE {t} ALTER COLUMN {quote(column_name)} {action}",
                properties=COLUMN_DEFAULTS,
            )

    def add_field(self, ctx: Context, column_schema: pa.Schema, opts: AddFieldOptions) -> None:
        with _missing_ok(opts):
            wanted = column_schema.field(0)
            added = fields_to_add(wanted, self._user_field(wanted.name).type)
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

    def _field_path(self, path: Sequence[str]) -> tuple[str, pa.StructType]:
        """The field's path as Spark SQL names it, and the struct that holds the field."""
        if len(path) < 2:
            raise NotFound("a field path names a column, then its fields")
        data_type = self._user_field(path[0]).type
        parent = data_type
        for name in path[1:]:
            if not pa.types.is_struct(data_type) or data_type.get_field_index(name) < 0:
                raise NotFound(f"field {name!r} not found")
            parent = data_type
            data_type = data_type.field(data_type.get_field_index(name)).type
        return ".".join(quote(p) for p in path), parent

    def rename_field(
        self,
        ctx: Context,
        column_path: list[str],
        new_name: str,
        opts: RenameFieldOptions,
    ) -> None:
        with _missing_ok(opts):
            path, parent = self._field_path(column_path)
            # Refused here, before column mapping is turned on (as a column's: _taken).
            if any(same_name(f.name, new_name) for f in parent):
                raise AlreadyExists(f"field {new_name!r} already exists")
            self._alter(
                lambda t: f"ALTER TABLE {t} RENAME COLUMN {path} TO {quote(new_name)}",
                properties=COLUMN_MAPPING,
            )

    def remove_field(self, ctx: Context, column_path: list[str], opts: RemoveFieldOptions) -> None:
        with _missing_ok(opts):
            path, parent = self._field_path(column_path)
            if parent.num_fields == 1:
                raise Unimplemented(
                    f"a Delta struct keeps at least one field: {column_path[-1]!r} is its last"
                )
            self._alter(lambda t: f"ALTER TABLE {t} DROP COLUMN {path}", properties=COLUMN_MAPPING)
