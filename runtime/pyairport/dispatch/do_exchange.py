"""DoExchange: DuckDB's DML protocol (protocol §1), for any operation of the protocol: the
output schema first, one RETURNING batch per input batch, then the final metadata. Events
are produced lazily: the next input batch is read only after the previous batch's answer was
taken, which is the lock-step DuckDB relies on (protocol §1.12)."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import Any

import pyarrow as pa

from airport_contracts import (
    AirportError,
    Context,
    DMLOptions,
    DMLResult,
    ReaderCreationFailed,
    TransactionManager,
    find_rowid_column,
    project_schema,
)
from airport_support.rows import CapabilityMethod, OperationRow
from airport_support.vocabulary import (
    CapabilityCheck,
    RowidSource,
    RulePhase,
    TotalChanged,
)
from airport_support.vocabulary import (
    OutputSchema as OutputSchemaKind,
)

from . import validation
from .events import (
    ExchangeCall,
    ExchangeEvent,
    ExchangeInput,
    ExchangeRequest,
    OutputBatch,
    OutputSchema,
    final_metadata,
)
from .statement import Feed, StatementRun
from .tables import Tables


def read_schema(stream: ExchangeInput) -> pa.Schema | None:
    try:
        return stream.read_schema()
    except AirportError:
        raise
    except Exception as exc:
        raise ReaderCreationFailed(error=exc) from exc


def run_exchange(
    tables: Tables,
    transactions: TransactionManager | None,
    row: OperationRow,
    ctx: Context,
    call: ExchangeCall,
) -> Generator[ExchangeEvent, None, None]:
    """One DoExchange statement of the operation `row`."""
    request, stream = call.request, call.stream
    statement = row.statement
    table = tables.table(ctx, request.schema_name, request.table_name)
    method: CapabilityMethod | None = None
    if row.capability_check is CapabilityCheck.BEFORE_READ:
        method = tables.interface(row, table, request.table_name)
    input_schema = read_schema(stream)
    if input_schema is None:
        yield final_metadata(0)
        return
    table_schema = table.arrow_schema(None)
    facts = validation.Facts(row, input_schema, table_schema)
    validation.check(RulePhase.INPUT_SCHEMA, facts)
    rowid_index = -1
    if row.rowid is RowidSource.INPUT_ROWID_COLUMN:
        rowid_index = find_rowid_column(input_schema)
        facts = replace(facts, input_rowid=rowid_index)
        # UPDATE checks the rowid before the interface (protocol §1.11), DELETE after it.
        rowid_first = row.capability_check is CapabilityCheck.AFTER_ROWID_CHECK
        if rowid_first:
            validation.check(RulePhase.ROWID_COLUMN, facts)
        method = tables.interface(row, table, request.table_name)
        if not rowid_first:
            validation.check(RulePhase.ROWID_COLUMN, facts)
        validation.check(RulePhase.ROWID_TYPE, facts)
    elif method is None:
        method = tables.interface(row, table, request.table_name)
    check = validation.check(RulePhase.INPUT_BATCHES, facts)
    opts = tables.options(table_schema, request.returning)
    if row.output_schema is OutputSchemaKind.INPUT:
        output_schema = input_schema
    elif request.returning:
        output_schema = project_schema(table_schema, opts.returning_columns)
    else:
        output_schema = table_schema
    run = StatementRun(transactions, ctx, row.protocol, statement, request.transaction_id)
    feed = Feed(run.ctx, stream.batches(), statement, check)
    result: DMLResult | None = None
    total = 0
    with run.committed():
        yield OutputSchema(output_schema)
        table_call = getattr(table, method.method)
        if method.takes_row_ids:
            yield from _by_row_ids(
                run, feed, table_call, method, rowid_index, opts, request, output_schema
            )
            total = feed.rows
        elif request.returning:
            for batch in feed:
                result = run.call(feed, table_call, _one_batch(batch), opts)
                yield OutputBatch(run.answer(result, output_schema))
            total = feed.rows
        else:
            reader = pa.RecordBatchReader.from_batches(input_schema, iter(feed))
            result = run.call(feed, table_call, reader, opts)
            feed.drain()
            total = feed.rows
    by_affected = TotalChanged.AFFECTED_ROWS_OR_INPUT_ROWS_WITH_RETURNING
    if row.total_changed is by_affected and not request.returning:
        total = run.affected_rows(result)  # known once the statement has committed
    yield final_metadata(total)


def _by_row_ids(
    run: StatementRun,
    feed: Feed,
    call: Any,
    method: CapabilityMethod,
    rowid_index: int,
    opts: DMLOptions,
    request: ExchangeRequest,
    output_schema: pa.Schema,
) -> Generator[OutputBatch, None, None]:
    """A legacy interface, batch by batch: the rowids apart, the rowid column stripped."""
    for batch in feed:
        row_ids = _rowid_values(batch, rowid_index)
        result: DMLResult | None
        if method.takes_rows:
            rows = _one_batch(_strip_column(batch, rowid_index))
            result = run.call(None, call, row_ids, rows, opts)
        else:  # Go calls the legacy Delete only for batches that have rows.
            result = run.call(None, call, row_ids, opts) if batch.num_rows else None
        if request.returning:
            yield OutputBatch(run.answer(result, output_schema))


def _strip_column(batch: pa.RecordBatch, index: int) -> pa.RecordBatch:
    """The batch without column index; schema metadata is dropped, as Go does. The row
    count stays, also when the rowid was the only column (an UPDATE that sets nothing)."""
    return batch.remove_column(index).replace_schema_metadata(None)


def _rowid_values(batch: pa.RecordBatch, index: int) -> pa.Int64Array:
    """The batch's rowids as int64 (uint64 above 2**63-1 wraps, as in Go)."""
    column = batch.column(index)
    if not column.type.equals(pa.int64()):
        column = column.cast(pa.int64(), safe=False)
    return column


def _one_batch(batch: pa.RecordBatch) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(batch.schema, [batch])
