"""DoAction DML: spec 002's actions that change rows by rowid (DELETE), for any DoAction
operation with interfaces: rowids from the request, no input stream, one Result body."""

from __future__ import annotations

import pyarrow as pa

from airport_contracts import Context, DMLResult, TransactionManager
from airport_support.rows import OperationRow

from .events import ActionCall
from .payloads import returning_data_bytes
from .statement import StatementRun
from .tables import Tables


def run_action_dml(
    tables: Tables,
    transactions: TransactionManager | None,
    row: OperationRow,
    ctx: Context,
    call: ActionCall,
) -> bytes:
    """One DML action of the operation `row`."""
    assert row.request is not None and row.response is not None
    request = call.request if call.request is not None else row.request.decode(call.body)
    table = tables.table(ctx, request.schema_name, request.table_name)
    method = tables.interface(row, table, request.table_name)
    table_schema = table.arrow_schema(None)
    table_rowid = tables.rowid_for_row_ids(row, table_schema, request.table_name, request.row_ids)
    opts = tables.options(table_schema, request.returning)
    row_ids = pa.array(request.row_ids, type=pa.int64())
    run = StatementRun(transactions, ctx, row.protocol, row.statement, call.transaction_id)
    call_table = getattr(table, method.method)
    result: DMLResult | None
    with run.committed():
        if method.takes_row_ids:
            result = run.call(None, call_table, row_ids, opts)
        else:
            rowids = pa.RecordBatch.from_arrays(
                [row_ids], schema=pa.schema([table_schema.field(table_rowid)])
            )
            reader = pa.RecordBatchReader.from_batches(rowids.schema, [rowids])
            result = run.call(None, call_table, reader, opts)
        returning_data = returning_data_bytes(result) if request.returning else None
    answer: bytes = row.response(
        status="success", affected_rows=run.affected_rows(result), returning_data=returning_data
    ).encode()
    return answer
