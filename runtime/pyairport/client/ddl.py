"""AirportClient's DDL calls (protocol §5): each builds the action's request payload, sends it
as DuckDB does and decodes the answer the contract's row says the action gives
(DDL_ACTIONS[…].answer): the schema's contents, the table as the server now describes it
(TableInfo, from a FlightInfo), or nothing."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa

from airport_contracts import (
    AddColumnParams,
    AddFieldParams,
    ChangeColumnTypeParams,
    CreateSchemaParams,
    CreateTableParams,
    DropNotNullParams,
    DropSchemaParams,
    DropTableParams,
    RemoveColumnParams,
    RemoveFieldParams,
    RenameColumnParams,
    RenameFieldParams,
    RenameTableParams,
    SerializedContents,
    SetDefaultParams,
    SetNotNullParams,
)
from airport_contracts.dispatch import DDL_ACTIONS
from airport_contracts.vocabulary import Action

from ..wire.ipc import serialize_schema
from .remote_catalog import TableInfo, table_info


def _one(field: pa.Field) -> bytes:
    return serialize_schema(pa.schema([field]))


class DdlCalls:
    """The DDL actions; `catalog` is the attached catalog's name (the server checks it)."""

    action: Callable[..., list[bytes]]
    """AirportClient.action: one DoAction, its Result bodies."""

    def _call(self, action: str, body: bytes) -> TableInfo | SerializedContents | None:
        """One DDL action, its answer decoded as the contract's row says."""
        answers = self.action(action, body)
        kind = DDL_ACTIONS[action].answer
        if not answers or kind == "none":
            return None
        if kind == "schema_contents":
            return SerializedContents.decode(answers[0])
        if kind == "flight_info":
            return table_info(answers[0])
        raise AssertionError(f"the contract's answer {kind!r} has no decoder in the client")

    def _table(self, action: str, body: bytes) -> TableInfo | None:
        answer = self._call(action, body)
        assert answer is None or isinstance(answer, TableInfo), answer
        return answer

    def create_schema(
        self,
        schema: str,
        comment: str | None = None,
        tags: dict[str, str] | None = None,
        catalog: str = "",
    ) -> SerializedContents:
        """CREATE SCHEMA; answers the new schema's contents."""
        body = CreateSchemaParams(
            catalog_name=catalog, schema=schema, comment=comment, tags=tags or {}
        ).encode()
        answer = self._call(Action.CREATE_SCHEMA, body)
        assert isinstance(answer, SerializedContents), answer
        return answer

    def drop_schema(self, schema: str, if_exists: bool = False, catalog: str = "") -> None:
        """DROP SCHEMA [IF EXISTS]."""
        body = DropSchemaParams(
            type="schema", catalog_name=catalog, name=schema, ignore_not_found=if_exists
        ).encode()
        self._call(Action.DROP_SCHEMA, body)

    def create_table(
        self,
        schema: str,
        table: str,
        columns: pa.Schema,
        on_conflict: str = "error",
        not_null: Sequence[int] = (),
        unique: Sequence[int] = (),
        checks: Sequence[str] = (),
        catalog: str = "",
    ) -> TableInfo | None:
        """CREATE TABLE (on_conflict: error, ignore = IF NOT EXISTS, replace = OR REPLACE);
        not_null and unique are column indexes, checks SQL expressions."""
        body = CreateTableParams(
            catalog_name=catalog,
            schema_name=schema,
            table_name=table,
            arrow_schema=serialize_schema(columns),
            on_conflict=on_conflict,
            not_null_constraints=list(not_null),
            unique_constraints=list(unique),
            check_constraints=list(checks),
        ).encode()
        return self._table(Action.CREATE_TABLE, body)

    def drop_table(
        self, schema: str, table: str, if_exists: bool = False, catalog: str = ""
    ) -> None:
        """DROP TABLE [IF EXISTS]."""
        body = DropTableParams(
            type="table",
            catalog_name=catalog,
            schema_name=schema,
            name=table,
            ignore_not_found=if_exists,
        ).encode()
        self._call(Action.DROP_TABLE, body)

    def rename_table(
        self, schema: str, table: str, new_name: str, catalog: str = ""
    ) -> TableInfo | None:
        """ALTER TABLE … RENAME TO."""
        body = RenameTableParams(
            catalog=catalog, schema=schema, name=table, new_table_name=new_name
        ).encode()
        return self._table(Action.RENAME_TABLE, body)

    def add_column(
        self,
        schema: str,
        table: str,
        column: pa.Field,
        if_not_exists: bool = False,
        catalog: str = "",
    ) -> TableInfo | None:
        """ALTER TABLE … ADD COLUMN [IF NOT EXISTS]."""
        body = AddColumnParams(
            catalog=catalog,
            schema=schema,
            name=table,
            column_schema=_one(column),
            if_column_not_exists=if_not_exists,
        ).encode()
        return self._table(Action.ADD_COLUMN, body)

    def remove_column(
        self, schema: str, table: str, column: str, if_exists: bool = False, catalog: str = ""
    ) -> TableInfo | None:
        """ALTER TABLE … DROP COLUMN [IF EXISTS]."""
        body = RemoveColumnParams(
            catalog=catalog,
            schema=schema,
            name=table,
            removed_column=column,
            if_column_exists=if_exists,
        ).encode()
        return self._table(Action.REMOVE_COLUMN, body)

    def rename_column(
        self, schema: str, table: str, column: str, new_name: str, catalog: str = ""
    ) -> TableInfo | None:
        """ALTER TABLE … RENAME COLUMN … TO."""
        body = RenameColumnParams(
            catalog=catalog, schema=schema, name=table, old_name=column, new_name=new_name
        ).encode()
        return self._table(Action.RENAME_COLUMN, body)

    def change_column_type(
        self, schema: str, table: str, column: pa.Field, expression: str = "", catalog: str = ""
    ) -> TableInfo | None:
        """ALTER TABLE … ALTER COLUMN … TYPE (column: the name and its new type)."""
        body = ChangeColumnTypeParams(
            catalog=catalog,
            schema=schema,
            name=table,
            column_schema=_one(column),
            expression=expression,
        ).encode()
        return self._table(Action.CHANGE_COLUMN_TYPE, body)

    def set_not_null(
        self, schema: str, table: str, column: str, catalog: str = ""
    ) -> TableInfo | None:
        """ALTER TABLE … ALTER COLUMN … SET NOT NULL."""
        body = SetNotNullParams(
            catalog=catalog, schema=schema, name=table, column_name=column
        ).encode()
        return self._table(Action.SET_NOT_NULL, body)

    def drop_not_null(
        self, schema: str, table: str, column: str, catalog: str = ""
    ) -> TableInfo | None:
        """ALTER TABLE … ALTER COLUMN … DROP NOT NULL."""
        body = DropNotNullParams(
            catalog=catalog, schema=schema, name=table, column_name=column
        ).encode()
        return self._table(Action.DROP_NOT_NULL, body)

    def set_default(
        self, schema: str, table: str, column: str, expression: str, catalog: str = ""
    ) -> TableInfo | None:
        """ALTER TABLE … ALTER COLUMN … SET DEFAULT (expression: SQL)."""
        body = SetDefaultParams(
            catalog=catalog, schema=schema, name=table, column_name=column, expression=expression
        ).encode()
        return self._table(Action.SET_DEFAULT, body)

    def add_field(
        self,
        schema: str,
        table: str,
        column: pa.Field,
        if_not_exists: bool = False,
        catalog: str = "",
    ) -> TableInfo | None:
        """Add fields to a struct column: column is the struct column with its new type."""
        body = AddFieldParams(
            catalog=catalog,
            schema=schema,
            name=table,
            column_schema=_one(column),
            if_field_not_exists=if_not_exists,
            column_path=[column.name],
        ).encode()
        return self._table(Action.ADD_FIELD, body)

    def rename_field(
        self, schema: str, table: str, path: Sequence[str], new_name: str, catalog: str = ""
    ) -> TableInfo | None:
        """Rename the struct field at path (the column, then field names)."""
        body = RenameFieldParams(
            catalog=catalog, schema=schema, name=table, column_path=list(path), new_name=new_name
        ).encode()
        return self._table(Action.RENAME_FIELD, body)

    def remove_field(
        self, schema: str, table: str, path: Sequence[str], catalog: str = ""
    ) -> TableInfo | None:
        """Remove the struct field at path."""
        body = RemoveFieldParams(
            catalog=catalog, schema=schema, name=table, column_path=list(path)
        ).encode()
        return self._table(Action.REMOVE_FIELD, body)
