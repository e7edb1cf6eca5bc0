"""The Dispatcher: the generated stubs' runner. Entry points per protocol (what a transport
calls), the table lookup and interface choice every operation shares, and `run`, which hands
an operation's row to its protocol's runner."""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterator, Sequence
from typing import Any

import pyarrow as pa

from airport_contracts import (
    AirportError,
    Catalog,
    Context,
    DMLOptions,
    InvalidPayload,
    InvalidPutOperation,
    SchemaLookupFailed,
    SchemaNotFound,
    Table,
    TableLookupFailed,
    TableNotFound,
    TransactionManager,
    find_rowid_column,
    implements,
    returning_columns,
)
from airport_contracts.dispatch import (
    OPERATIONS,
    PROTOCOLS,
    CapabilityMethod,
    OperationRow,
    OperationStubs,
)

from . import validation
from .action import run_action
from .events import ExchangeEvent, ExchangeInput, ExchangeRequest
from .exchange import run_exchange
from .put import json_command, run_put
from .statement import abort_transaction

log = logging.getLogger("pyairport.dispatch")

_BY_WIRE_NAME = {(row.protocol, row.name): row for row in OPERATIONS.values()}


class Dispatcher(OperationStubs):
    """Serves every operation of the contract against a catalog.

    transactions is the optional TransactionManager; without it, DML runs without
    transactions and the transaction actions answer as protocol §2.2-2.3 describe.
    max_row_ids: the longest row_ids a spec-002 call may send (None: no limit).
    """

    def __init__(
        self,
        catalog: Catalog,
        transactions: TransactionManager | None = None,
        max_row_ids: int | None = None,
    ) -> None:
        self.catalog = catalog
        self.transactions = transactions
        self.max_row_ids = max_row_ids

    # --- entry points, one per protocol --------------------------------------------------------

    def exchange(
        self, ctx: Context, request: ExchangeRequest, stream: ExchangeInput
    ) -> Generator[ExchangeEvent, None, None]:
        """Serve one DoExchange DML request; iterate the result to drive it."""
        row = _BY_WIRE_NAME.get(("doexchange", request.operation))
        if row is None:
            unknown = PROTOCOLS["doexchange"].unknown_operation
            assert unknown is not None
            raise unknown(operation=request.operation)
        events: Generator[ExchangeEvent, None, None] = getattr(self, row.id)(ctx, (request, stream))
        return self._aborting_on_failure(ctx, request.transaction_id, events)

    def put(
        self, ctx: Context, command: bytes, transaction_id: str, stream: ExchangeInput
    ) -> bytes:
        """Serve one DoPut DML request; returns the PutResult's app_metadata."""
        try:
            descriptor = json_command(command)
            operation = descriptor.get("operation")
            if operation is None:
                raise InvalidPayload(payload="descriptor", problem="missing field 'operation'")
            if not isinstance(operation, str):
                raise InvalidPayload(
                    payload="descriptor", problem="field 'operation' must be a string"
                )
            row = _BY_WIRE_NAME.get(("doput", operation))
            if row is None or row.request is None:
                raise InvalidPutOperation(operation=operation)
            request = row.request.from_mapping(descriptor)  # type: ignore[attr-defined]
            answer: bytes = getattr(self, row.id)(ctx, (request, transaction_id, stream))
            return answer
        except Exception:
            self._abort_transaction(ctx, transaction_id)
            raise

    def action(
        self, ctx: Context, action_type: str, body: bytes, transaction_id: str = ""
    ) -> list[bytes]:
        """Serve one DoAction of the contract; returns the Result bodies."""
        row = _BY_WIRE_NAME.get(("doaction", action_type))
        if row is None:
            unknown = PROTOCOLS["doaction"].unknown_action
            assert unknown is not None
            raise unknown(type=action_type)
        transaction_id = transaction_id if row.interfaces else ""  # only DML takes part
        try:
            return [getattr(self, row.id)(ctx, (body, transaction_id))]
        except Exception:
            self._abort_transaction(ctx, transaction_id)
            raise

    # --- the runner the stubs hand their calls to ---------------------------------------------

    def run(self, operation: OperationRow, ctx: Context, call: Any) -> Any:
        if operation.protocol == "doexchange":
            return run_exchange(self, operation, ctx, *call)
        if operation.protocol == "doput":
            return run_put(self, operation, ctx, call)
        return run_action(self, operation, ctx, call)

    # --- what every operation shares ----------------------------------------------------------

    def table(self, ctx: Context, schema_name: str, table_name: str) -> Table:
        """Look a table up; the lookup errors of the contract (protocol §1.6)."""
        try:
            schema = self.catalog.schema(ctx, schema_name)
        except AirportError:
            raise
        except Exception as exc:
            raise SchemaLookupFailed(error=exc) from exc
        if schema is None:
            raise SchemaNotFound(schema=schema_name)
        try:
            table = schema.table(ctx, table_name)
        except AirportError:
            raise
        except Exception as exc:
            raise TableLookupFailed(error=exc) from exc
        if table is None:
            raise TableNotFound(schema=schema_name, table=table_name)
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
        self._check_row_ids(row, row_ids)
        return table_rowid

    def _check_row_ids(self, row: OperationRow, row_ids: Sequence[int]) -> None:
        if "row_ids_not_empty" in row.validation and not row_ids:
            raise validation.rule_error("row_ids_not_empty", row.name)()
        if (
            "row_ids_within_limit" in row.validation
            and self.max_row_ids is not None
            and len(row_ids) > self.max_row_ids
        ):
            raise validation.rule_error("row_ids_within_limit", row.name)(
                count=len(row_ids), limit=self.max_row_ids
            )

    def _aborting_on_failure(
        self, ctx: Context, transaction_id: str, events: Iterator[ExchangeEvent]
    ) -> Generator[ExchangeEvent, None, None]:
        """events, aborting the statement's transaction if the statement fails before its
        statement scope opened (a lookup or a validation error); StatementRun aborts it
        afterwards. A client that goes away (GeneratorExit) is StatementRun's to handle:
        after the final metadata that is no failure."""
        try:
            yield from events
        except Exception:
            self._abort_transaction(ctx, transaction_id)
            raise

    def _abort_transaction(self, ctx: Context, transaction_id: str) -> None:
        if transaction_id and self.transactions is not None:
            abort_transaction(self.transactions, ctx, transaction_id)
