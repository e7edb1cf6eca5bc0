"""DDL on a Spark warehouse (protocol §5): schemas (a warehouse's folders, or the catalog's
databases) and tables, created as Delta with the constraints sent and row tracking on (so
UPDATE and DELETE work), each one Delta commit or none; the Spark SQL the DDL statements
share (types, column definitions, properties). What Delta refuses is refused with Delta's
reason, in one line. A table's column changes: column_ddl.py.
"""

from __future__ import annotations

import logging
import os
import shutil
from typing import Any

import pyarrow as pa

from airport_contracts import (
    Context,
    CreateSchemaOptions,
    CreateTableOptions,
    DropSchemaOptions,
    DropTableOptions,
    EngineUnavailable,
    RenameTableOptions,
    SchemaNotEmpty,
    Table,
    Unimplemented,
)

from ...catalog import CatalogSchema, MutableCatalog
from ...names import field_names
from ..ddl_rules import (
    check_new_schema,
    check_new_table_name,
    created_columns,
    kept_on_conflict,
    missing,
    other_case_kept,
)
from .client_expressions import refusal, spark_expression
from .folders import check_storable
from .lake import Lake
from .layout import CREATED_TABLE_PROPERTIES, MAPPING_MODE, ROW_TRACKING, ROWID
from .session import SPARK_STOPPED, engine_lost, is_connect
from .sql import one_line, quote, string_token
from .stored_types import (
    SERVED_TYPES,
    for_schema,
    property_value,
    stored_field,
)
from .work_tables import WorkTable, discard, forget, note, settle

COLUMN_MAPPING = {
    MAPPING_MODE: "name",
    "delta.minReaderVersion": "2",
    "delta.minWriterVersion": "5",
}
# The characters Delta takes in a column name only with column mapping on
# (DELTA_INVALID_CHARACTERS_IN_COLUMN_NAMES); the name rule already refuses the control ones.
MAPPED_NAME_CHARACTERS = frozenset(" ,;{}()=")


def mapping_for(schema: pa.Schema) -> dict[str, str]:
    """The properties a table needs to keep schema's column names exactly: column mapping
    when one of them (or a nested field's) holds a character Delta takes only so."""
    needs = any(MAPPED_NAME_CHARACTERS & set(name) for name in field_names(schema))
    return dict(COLUMN_MAPPING) if needs else {}


log = logging.getLogger("pyairport.spark")


def _client_expression(spark: Any, kind: str, expression: str) -> str:
    """expression (DuckDB's dialect) as Spark SQL of the same meaning, once it is one the
    server's Spark may run on every write (client_expressions.py; DeltaRefused, naming what
    is refused)."""
    reason = refusal(spark, expression)
    if reason is not None:
        raise DeltaRefused(f"{kind}: {reason}")
    return spark_expression(expression)


def check_expression(spark: Any, expression: str) -> str:
    """expression, a CHECK constraint's, as Spark SQL, once it is one Spark may run on a
    write."""
    return _client_expression(spark, "a CHECK constraint tests the row's own columns", expression)


def default_expression(spark: Any, column: str, column_type: str, expression: str) -> str:
    """expression, a column DEFAULT's, once Delta would keep it on column, of Spark type
    column_type: nothing refused as in a CHECK, and what Spark's own rule for defaults takes
    (ResolveDefaultColumns.analyze: a constant, of a type the column holds, no subquery).
    Asked before the table takes Delta's column-defaults feature, so a refused DEFAULT leaves
    the table's protocol as it was; where the rule cannot be asked (Spark Connect, another
    Spark), the ALTER itself decides."""
    expression = _client_expression(spark, "a DEFAULT is a constant", expression)
    if is_connect(spark):  # Spark's rule for defaults is in the Connect server's JVM
        return expression
    from py4j.protocol import Py4JError, Py4JJavaError  # type: ignore[import-untyped]

    jvm = spark._jvm
    try:
        jvm.org.apache.spark.sql.catalyst.util.ResolveDefaultColumns.analyze(
            column,
            jvm.org.apache.spark.sql.types.DataType.fromDDL(column_type),
            expression,
            "ALTER TABLE ALTER COLUMN",
        )
    except Py4JJavaError as exc:  # Spark's refusal (AnalysisException, ParseException)
        raise DeltaRefused(one_line(exc)) from None
    except Py4JError as exc:  # no such method in this Spark, or its JVM is gone
        if engine_lost(exc):
            raise EngineUnavailable(error=SPARK_STOPPED) from None
        log.warning("Spark's rule for defaults could not be asked: %s", one_line(exc))
    return expression


class DeltaRefused(RuntimeError):
    """Delta refused the statement: its reason, in one line."""


def run(spark: Any, statement: str) -> None:
    """statement, or DeltaRefused with Delta's reason (UNAVAILABLE when Spark's JVM is gone)."""
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


MAX_NESTING = 24
"""The most structs, lists and maps a column's type nests. What reads the table's schema reads
no deeper (measured with Delta's schemas of nested structs: delta-rs read 36 levels and
refused 42, Spark Connect's client read 30 and refused 36), and Spark makes the table before
either fails."""


def _refuse_unstorable(data_type: pa.DataType, depth: int = 0) -> None:
    """Unimplemented for a type Delta would not store exactly, nested ones included."""
    if depth > MAX_NESTING:
        raise Unimplemented(
            f"a column's type here nests structs, lists and maps at most {MAX_NESTING} deep"
        )
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
    if pa.types.is_union(data_type):
        raise Unimplemented(
            "Delta has no UNION column type: use a STRUCT with a field for each member"
        )
    for index in range(data_type.num_fields):
        _refuse_unstorable(data_type.field(index).type, depth + 1)


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
    """Table properties as TBLPROPERTIES lists them, keys and values exactly."""
    return ", ".join(f"{string_token(k)} = {string_token(v)}" for k, v in properties.items())


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
        other = other_case_kept(self, ctx, name, opts)
        if other is not None:
            return other
        existing = self.table(ctx, name)
        if existing is not None and kept_on_conflict(existing, name, opts):
            return existing
        backend = self.backend
        fields = [f for f in created_columns(schema, opts) if f.name != ROWID]
        if not fields:
            raise DeltaRefused("a Delta table needs at least one column")
        # Made under a name of its own, its constraints added, then moved into place: a
        # failure on the way leaves the schema as it was (the old table too, for REPLACE).
        # Both work tables are noted (work_tables.py) for a server killed on the way.
        building = note(backend, "new", self.name())
        ident = backend.ident_for(self.name(), building.name)
        backend.prepare_schema(self.name())
        try:
            run(
                backend.spark,
                f"CREATE TABLE {ident} ({', '.join(column_sql(f) for f in fields)}) USING delta"
                f" TBLPROPERTIES ({properties_sql(_created_properties(fields))})",
            )
            for index, check in enumerate(opts.check_constraints):
                run(
                    backend.spark,
                    f"ALTER TABLE {ident} ADD CONSTRAINT check_{index}"
                    f" CHECK ({check_expression(backend.spark, check)})",
                )
            if existing is not None:
                final = self._replace(name, building)
            else:
                final = backend.move_table(self.name(), building.name, name)
        except BaseException:
            settle(backend, building)
            raise
        forget(backend, building)
        return backend.open_table(self.name(), name, final)

    def _replace(self, name: str, building: WorkTable) -> str:
        """Move the table built into name's place; the old table is set aside until then, and
        put back if the move fails."""
        backend = self.backend
        aside = note(backend, "old", self.name(), replaces=name)
        try:
            backend.move_table(self.name(), name, aside.name)
            self.drop(name)
            final = backend.move_table(self.name(), building.name, name)
        except BaseException:
            settle(backend, aside)  # back under its name, served again
            if self.table(Context.background(), name) is None and backend.exists(self.name(), name):
                backend.open_table(self.name(), name, backend.ident_for(self.name(), name))
            raise
        discard(backend, aside)  # its name is the new table's now
        return final

    def drop_table(self, ctx: Context, name: str, opts: DropTableOptions) -> None:
        if self.table(ctx, name) is None:
            return missing("table", name, opts.ignore_not_found)
        self.backend.remove_table(self.name(), name)
        self.drop(name)

    def rename_table(
        self, ctx: Context, old_name: str, new_name: str, opts: RenameTableOptions
    ) -> None:
        if self.table(ctx, old_name) is None:
            return missing("table", old_name, opts.ignore_not_found)
        check_storable("table", new_name)
        check_new_table_name(self, ctx, old_name, new_name)
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
        check_new_schema(self, ctx, name)
        check_storable("schema", name)
        self.backend.prepare_schema(name, opts.comment)
        return self.schema_for(name, opts.comment)

    def drop_schema(self, ctx: Context, name: str, opts: DropSchemaOptions) -> None:
        schema = self.schema(ctx, name)
        if schema is None:
            return missing("schema", name, opts.ignore_not_found)
        if schema.tables(ctx):
            raise SchemaNotEmpty(f"schema {name!r} contains tables")
        self.backend.remove_schema(name)
        with self._lock:
            self._schemas.pop(name, None)
        self.changed()


def remove_folder(path: str) -> None:
    shutil.rmtree(path)


def move_folder(source: str, target: str) -> None:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    os.rename(source, target)
