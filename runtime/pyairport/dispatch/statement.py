"""One statement: its input feed, its transaction and statement scope, the table call and the
answer to each input batch. Written once for every operation (deviation statement_atomic:
one commit per statement, a rollback on any failure)."""

from __future__ import annotations

import collections
import contextlib
import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from airport_contracts import (
    AirportError,
    Canceled,
    Context,
    ContextError,
    DMLResult,
    OperationFailed,
    ReturningTypeMismatch,
    ReturningTypeUnconvertible,
    StatementCanceled,
    StatementDeadlineExceeded,
    TransactionManager,
    TransactionNotActive,
    TransactionNotFound,
    TransactionState,
    with_transaction_id,
)
from airport_contracts.dispatch import PROTOCOLS
from airport_support.vocabulary import TableErrors

from ..backends.arrow_convert import relaxed
from ..statement_scope import Statement, with_statement
from .transactions import abort_transaction

log = logging.getLogger("pyairport.dispatch")

BatchCheck = Callable[[pa.RecordBatch], None]


def context_error(operation: str, error: ContextError) -> AirportError:
    if isinstance(error, Canceled):
        return StatementCanceled(operation=operation)
    return StatementDeadlineExceeded(operation=operation)


class Feed:
    """The input batches of one statement, pulled lazily: checks the context before each
    batch, applies per-batch validation, counts rows, and remembers the error it raised so
    a table that was reading it does not get blamed for it."""

    def __init__(
        self,
        ctx: Context,
        source: Iterator[pa.RecordBatch],
        operation: str,
        check: BatchCheck | None = None,
    ) -> None:
        self._ctx = ctx
        self._source = source
        self._operation = operation
        self._check = check
        self.rows = 0
        self.error: BaseException | None = None

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        while True:
            try:
                self._ctx.raise_if_done()
                batch = next(self._source, None)
                if batch is None:
                    return
                if self._check is not None:
                    self._check(batch)
            except ContextError as exc:
                self.error = context_error(self._operation, exc)
                raise self.error from None
            except AirportError as exc:
                self.error = exc
                raise
            except Exception as exc:  # the client's stream broke mid-statement
                self.error = OperationFailed(operation=self._operation, error=exc)
                raise self.error from exc
            self.rows += batch.num_rows
            yield batch

    def drain(self) -> None:
        """Read what the table left unread: those rows still count and are still checked."""
        collections.deque(self, maxlen=0)


class StatementRun:
    """One statement: validates its transaction, opens the statement scope, commits once
    at the end or rolls back on any failure."""

    def __init__(
        self, transactions: TransactionManager | None, ctx: Context, protocol: str,
        operation: str, transaction_id: str,
    ) -> None:  # fmt: skip
        self.operation = operation
        self.transaction_id = transaction_id
        self.manager = transactions if transaction_id else None
        row = PROTOCOLS[protocol]
        if transaction_id:
            if self.manager is None:
                if row.no_manager is not None:
                    raise row.no_manager()
            else:
                self.require_open(ctx)
            ctx = with_transaction_id(ctx, transaction_id)
        self.statement = Statement(transaction_id or uuid.uuid4().hex)
        self.ctx = with_statement(ctx, self.statement)
        self.table_errors = row.table_errors

    def require_open(self, ctx: Context) -> None:
        """The statement's transaction is known and not aborted, or its contract error.

        A committed transaction takes further statements (deviation transaction_spans_statements):
        DuckDB sends one id with every statement of a BEGIN … COMMIT."""
        assert self.manager is not None
        state, exists = self.manager.get_transaction_status(ctx, self.transaction_id)
        if not exists or state is None:
            raise TransactionNotFound(tx_id=self.transaction_id)
        if TransactionState(state) is TransactionState.ABORTED:
            raise TransactionNotActive(
                tx_id=self.transaction_id, state=TransactionState(state).value
            )

    def call(
        self, feed: Feed | None, method: Callable[..., DMLResult | None], *args: Any
    ) -> DMLResult | None:
        """Call the table's method with the statement's context and args; map what it raises
        to the contract's errors."""
        try:
            return method(self.ctx, *args)
        except BaseException as exc:
            if feed is not None and feed.error is not None:
                raise feed.error from None
            raise self.table_error(exc) from exc

    def _passes(self, exc: BaseException) -> bool:
        """Whether a table's error reaches the client as it is (the protocol row's
        table_errors, or an error the contract marks from_tables), not as operation_failed."""
        return isinstance(exc, AirportError) and (
            exc.from_tables or self.table_errors is TableErrors.PASS_CONTRACT_ERRORS
        )

    def table_error(self, exc: BaseException) -> BaseException:
        if isinstance(exc, ContextError):
            return context_error(self.operation, exc)
        if self._passes(exc):
            return exc
        if isinstance(exc, Exception):
            log.error("%s on a table failed", self.operation, exc_info=exc)
            return OperationFailed(operation=self.operation, error=exc)
        return exc  # KeyboardInterrupt, GeneratorExit, SystemExit: not ours to rename

    @contextlib.contextmanager
    def committed(self) -> Iterator[None]:
        """The statement's work: committed when the block ends, rolled back (and the
        transaction aborted) when it raises — a client that went away included."""
        try:
            yield
            self.commit()
        except ContextError as exc:
            self.rollback()
            raise context_error(self.operation, exc) from None
        except BaseException:
            self.rollback()
            raise

    def commit(self) -> None:
        # A client that went away (or a deadline that passed) gets nothing committed.
        self.ctx.raise_if_done()
        if self.manager is not None:
            # The transaction may have been aborted while the table worked (rolled back, or
            # the manager gave up on it): refuse before anything is applied (the caller rolls
            # back).
            self.require_open(self.ctx)
        try:
            self.statement.commit()
            if self.manager is not None:
                self.manager.commit_transaction(self.ctx, self.transaction_id)
        except Exception as exc:
            self.rollback()
            if self._passes(exc):  # a table's refusal the client sees as it is
                raise
            log.error("%s commit failed", self.operation, exc_info=exc)
            raise OperationFailed(operation=self.operation, error=exc) from exc

    def rollback(self) -> None:
        for error in self.statement.rollback():
            log.error("%s rollback hook failed", self.operation, exc_info=error)
        if self.manager is not None:
            abort_transaction(self.manager, self.ctx, self.transaction_id)

    def affected_rows(self, result: DMLResult | None) -> int:
        """The rows the committed statement changed: what the tables counted at commit when
        they did (Statement.changed_rows), else what the table call returned."""
        if self.statement.changed_rows is not None:
            return self.statement.changed_rows
        return result.affected_rows if result is not None else 0

    def answer(self, result: DMLResult | None, schema: pa.Schema) -> pa.RecordBatch:
        """Exactly one RETURNING batch for one input batch (deviation answer_every_batch)."""
        if result is None or result.returning_data is None:
            return empty_batch(schema)
        try:
            batches = [adapt(b, schema, self.operation) for b in result.returning_data]
        except AirportError:
            raise
        except ContextError as exc:
            raise context_error(self.operation, exc) from None
        except Exception as exc:
            raise OperationFailed(operation=self.operation, error=exc) from exc
        if not batches:
            return empty_batch(schema)
        if len(batches) == 1:
            return batches[0]
        return pa.concat_batches(batches)


def empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)


def _fields_equal(a: pa.Schema, b: pa.Schema) -> bool:
    """Arrow schema equality as arrow-go's IPC writer checks it: field names, types,
    nullability and field metadata; schema metadata is not compared."""
    return len(a) == len(b) and all(
        a.field(i).equals(b.field(i), check_metadata=True) for i in range(len(a))
    )


def adapt(batch: pa.RecordBatch, target: pa.Schema, operation: str) -> pa.RecordBatch:
    """Fit a RETURNING batch to the output schema by column name (protocol §1.8)."""
    if _fields_equal(batch.schema, target):
        return batch
    names = batch.schema.names
    columns = []
    for target_field in target:
        if target_field.name not in names:
            columns.append(pa.nulls(batch.num_rows, target_field.type))
            continue
        column = batch.column(names.index(target_field.name))
        if column.type.equals(target_field.type):
            columns.append(column)
        elif target_field.type.equals(relaxed(column.type)):
            # a table's NOT NULL struct field (or list element, map value) where the client's
            # are nullable, as DuckDB's always are: the same values, no transformation
            columns.append(column.cast(target_field.type))
        elif pa.types.is_timestamp(target_field.type):
            if not pa.types.is_timestamp(column.type):
                raise ReturningTypeUnconvertible(
                    operation=operation, source=column.type, target=target_field.type
                )
            columns.append(column.cast(target_field.type))
        else:
            raise ReturningTypeMismatch(
                operation=operation, source=column.type, target=target_field.type
            )
    return pa.RecordBatch.from_arrays(columns, schema=target)
