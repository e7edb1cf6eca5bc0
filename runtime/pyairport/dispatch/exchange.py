"""DoExchange, DuckDB's DML protocol (protocol §1), for any operation of the protocol: the
output schema first, one RETURNING batch per input batch, then the final metadata. Events
are produced lazily: the next input batch is read only after the previous batch's answer was
taken, which is the lock-step DuckDB relies on (protocol §1.12)."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airport_contracts import (
    AirportError,
    Context,
    DMLOptions,
    DMLResult,
    ReaderCreationFailed,
    find_rowid_column,
    project_schema,
)
from airport_contracts.dispatch import CapabilityMethod, OperationRow

from . import validation
from .events import (
    ExchangeEvent,
    ExchangeInput,
    ExchangeRequest,
    OutputBatch,
    OutputSchema,
    final_metadata,
)
from .statement import BatchCheck, Feed, StatementRun

if TYPE_CHECKING:
    from .dispatcher import Dispatcher


def read_schema(stream: ExchangeInput) -> pa.Schema | None:
    try:
        return stream.read_schema()
    except AirportError:
        raise
    except Exception as exc:
        raise ReaderCreationFailed(error=exc) from exc


def _both(first: BatchCheck, second: BatchCheck | None) -> BatchCheck:
    if second is None:
        return first

    def check(batch: pa.RecordBatch) -> None:
        first(batch)
        second(batch)

    return check


def run_exchange(
    dispatcher: Dispatcher,
    row: OperationRow,
    ctx: Context,
    request: ExchangeRequest,
    stream: ExchangeInput,
) -> Generator[ExchangeEvent, None, None]:
    """One DoExchange statement of the operation `row`."""
    statement = row.statement
    table = dispatcher.table(ctx, request.schema_name, request.table_name)
    method: CapabilityMethod | None = None
    if row.capability_check == "before_read":
        method = dispatcher.interface(row, table, request.table_name)
    input_schema = read_schema(stream)
    if input_schema is None:
        yield final_metadata(0)
        return
    table_schema = table.arrow_schema(None)
    if "no_dictionary_columns" in row.validation:
        validation.no_dictionary_columns(input_schema, row.name)
    rowid_index = -1
    check: BatchCheck | None = None
    if row.rowid == "input_rowid_column":
        rowid_index = find_rowid_column(input_schema)
        # UPDATE checks the rowid before the interface (protocol §1.11), DELETE after it.
        rowid_first = row.capability_check == "after_rowid_check"
        if rowid_first and "VR-001" in row.validation:
            validation.rowid_present(rowid_index, row.name)
        method = dispatcher.interface(row, table, request.table_name)
        if not rowid_first and "VR-001" in row.validation:
            validation.rowid_present(rowid_index, row.name)
        if "VR-002" in row.validation:
            validation.rowid_type(input_schema, rowid_index, row.name)
        if "input_columns_fit_table" in row.validation:
            check = validation.columns_fit(input_schema, table_schema, rowid_index, row.name)
        if "VR-NULL" in row.validation:
            check = _both(validation.no_null_rowids(rowid_index, row.name), check)
    else:
        if method is None:
            method = dispatcher.interface(row, table, request.table_name)
        if "input_columns_fit_table" in row.validation:
            check = validation.columns_fit(input_schema, table_schema, None, row.name)
    opts = dispatcher.options(table_schema, request.returning)
    if row.output_schema == "input":
        output_schema = input_schema
    elif request.returning:
        output_schema = project_schema(table_schema, opts.returning_columns)
    else:
        output_schema = table_schema
    run = StatementRun(dispatcher, ctx, row.protocol, statement, request.transaction_id)
    feed = Feed(run.ctx, stream.batches(), statement, check)
    result: DMLResult | None = None
    total = 0
    with run.committed():
        yield OutputSchema(output_schema)
        call = getattr(table, method.method)
        if method.takes_row_ids:
            yield from _by_row_ids(
                run, feed, call, method, rowid_index, opts, request, output_schema
            )
            total = feed.rows
        elif request.returning:
            for batch in feed:
                result = run.call(feed, call, _one_batch(batch), opts)
                yield OutputBatch(run.answer(result, output_schema))
            total = feed.rows
        else:
            reader = pa.RecordBatchReader.from_batches(input_schema, iter(feed))
            result = run.call(feed, call, reader, opts)
            feed.drain()
            total = feed.rows
    if row.total_changed == "affected_rows_or_input_rows_with_returning" and not request.returning:
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
