"""Table access, the one place the runners reach the catalog: the lookup and its errors, the
interface an operation calls (batch first, 001 §10), the DMLOptions of a request and the rowid
column of a request that names rows by rowid."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow as pa

from airport_contracts import (
    AirportError,
    Catalog,
    Context,
    DMLOptions,
    ScanSchemaNotFound,
    ScanTableNotFound,
    Schema,
    SchemaLookupFailed,
    SchemaNotFound,
    Table,
    TableLookupFailed,
    TableNotFound,
    find_rowid_column,
    implements,
    returning_columns,
)
from airport_support.rows import CapabilityMethod, ErrorFactory, OperationRow
from airport_support.vocabulary import RulePhase

from ..access.grants import admit_schema
from ..names import check_name
from ..wire.ipc_body import MAX_MESSAGE_BYTES
from . import validation


@dataclass(frozen=True)
class LookupErrors:
    """The errors of a lookup: a catalog that raised (None: the exception propagates, an
    INTERNAL for the transport) and a name that is not there."""

    schema_failed: ErrorFactory | None
    schema_missing: ErrorFactory
    table_failed: ErrorFactory | None
    table_missing: ErrorFactory


DML_LOOKUP = LookupErrors(SchemaLookupFailed, SchemaNotFound, TableLookupFailed, TableNotFound)
"""The DML protocols' lookup errors (protocol §1.6)."""
SCAN_LOOKUP = LookupErrors(None, ScanSchemaNotFound, None, ScanTableNotFound)
"""DoGet's and flight_info's (protocol §2.7)."""


class Tables:
    """The catalog as the runners see it. max_row_ids: the longest row_ids a spec-002 call
    may send (None: no limit); max_batch_bytes: the most a client's compressed batch may
    decompress to."""

    def __init__(
        self,
        catalog: Catalog,
        max_row_ids: int | None = None,
        max_batch_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self.catalog = catalog
        self.max_row_ids = max_row_ids
        self.max_batch_bytes = max_batch_bytes

    def schema(
        self, ctx: Context, name: str, failed: ErrorFactory | None = SchemaLookupFailed
    ) -> Schema | None:
        """The schema name, or None; a catalog that raises is `failed` (None: as it is).
        A name the rule refuses, or a call whose identity may not use the schema so, is
        refused first (names, grants)."""
        admit_schema(ctx, name)
        with _failing_as(failed):
            return self.catalog.schema(ctx, name)

    @staticmethod
    def table_in(
        ctx: Context, schema: Schema, name: str, failed: ErrorFactory | None = TableLookupFailed
    ) -> Table | None:
        """The table name of schema, or None; a schema that raises is `failed`."""
        check_name("table", name)
        with _failing_as(failed):
            return schema.table(ctx, name)

    def table(
        self, ctx: Context, schema_name: str, table_name: str, errors: LookupErrors = DML_LOOKUP
    ) -> Table:
        """Look a table up; the lookup errors of the calling protocol."""
        schema = self.schema(ctx, schema_name, errors.schema_failed)
        if schema is None:
            raise errors.schema_missing(schema=schema_name)
        table = self.table_in(ctx, schema, table_name, errors.table_failed)
        if table is None:
            raise errors.table_missing(schema=schema_name, table=table_name)
        return table

    @staticmethod
    def interface(row: OperationRow, table: Table, table_name: str) -> CapabilityMethod:
        """The first interface of the row the table implements (batch first, 001 §10), or
        the row's not-supported error."""
        for method in row.interfaces:
            if implements(table, method.interface):
                return method
        assert row.not_supported is not None
        raise row.not_supported(table=table_name)

    @staticmethod
    def options(table_schema: pa.Schema, returning: bool) -> DMLOptions:
        """One DMLOptions per request: every table column but the rowid when RETURNING."""
        columns = returning_columns(table_schema) if returning else []
        return DMLOptions(returning=returning, returning_columns=columns)

    def rowid_for_row_ids(
        self, row: OperationRow, table_schema: pa.Schema, table_name: str, row_ids: Sequence[int]
    ) -> int:
        """The table's rowid column for a request naming rows by row_ids (spec 002): without
        one the table cannot serve the request (the row's not-supported error); then the
        rules on the row_ids list."""
        table_rowid = find_rowid_column(table_schema)
        if table_rowid < 0:
            assert row.not_supported is not None
            raise row.not_supported(table=table_name)
        facts = validation.Facts(row, row_ids=row_ids, row_ids_limit=self.max_row_ids)
        validation.check(RulePhase.ROW_IDS, facts)
        return table_rowid


@contextmanager
def _failing_as(failed: ErrorFactory | None) -> Iterator[None]:
    """A lookup's failure as the protocol's error (failed), the contract's errors as they are."""
    try:
        yield
    except AirportError:
        raise
    except Exception as exc:
        if failed is None:
            raise
        raise failed(error=exc) from exc
