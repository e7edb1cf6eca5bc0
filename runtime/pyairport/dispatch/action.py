"""DoAction: spec 002's DML actions (any operation of the protocol with interfaces), and the
transaction actions (protocol §2.2-2.3). Each answers exactly one Result body."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airport_contracts import (
    Context,
    CreateTransactionFailed,
    DMLResult,
    InvalidActionParameters,
    InvalidPayload,
    TransactionState,
)
from airport_contracts.dispatch import OperationRow

from .payloads import decode, encode, returning_data_bytes
from .statement import StatementRun

if TYPE_CHECKING:
    from .dispatcher import Dispatcher

log = logging.getLogger("pyairport.dispatch")


def run_action(
    dispatcher: Dispatcher, row: OperationRow, ctx: Context, call: tuple[bytes, str]
) -> bytes:
    """One action of the operation `row`: call is (the body, the transaction id)."""
    body, transaction_id = call
    if row.interfaces:
        return _dml(dispatcher, row, ctx, body, transaction_id)
    return TRANSACTION_ACTIONS[row.name](dispatcher, row, ctx, body)


def _dml(
    dispatcher: Dispatcher, row: OperationRow, ctx: Context, body: bytes, transaction_id: str
) -> bytes:
    """A DML action by rowid (spec 002 DELETE): rowids from the request, no input stream."""
    assert row.request is not None and row.response is not None
    request = decode(row.request, body)
    statement = row.statement
    table = dispatcher.table(ctx, request.schema_name, request.table_name)
    method = dispatcher.interface(row, table, request.table_name)
    table_schema = table.arrow_schema(None)
    table_rowid = dispatcher.rowid_for_row_ids(
        row, table_schema, request.table_name, request.row_ids
    )
    opts = dispatcher.options(table_schema, request.returning)
    row_ids = pa.array(request.row_ids, type=pa.int64())
    run = StatementRun(dispatcher, ctx, row.protocol, statement, transaction_id)
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
    return encode(
        row.response(
            status="success", affected_rows=run.affected_rows(result), returning_data=returning_data
        )
    )


def _parameters(payload: type, body: bytes) -> Any:
    """An action's body; a bad body is the actions' own error row."""
    try:
        return decode(payload, body)
    except InvalidPayload as exc:
        raise InvalidActionParameters(error=exc.problem) from None


def _create_transaction(
    dispatcher: Dispatcher, row: OperationRow, ctx: Context, body: bytes
) -> bytes:
    """protocol §2.2: {identifier: nil} without a manager."""
    assert row.request is not None and row.response is not None
    if body:
        _parameters(row.request, body)
    if dispatcher.transactions is None:
        return encode(row.response(identifier=None))
    try:
        tx_id = dispatcher.transactions.begin_transaction(ctx)
    except Exception as exc:
        log.error("begin_transaction failed", exc_info=exc)
        raise CreateTransactionFailed(error=exc) from exc
    return encode(row.response(identifier=tx_id))


def _transaction_status(
    dispatcher: Dispatcher, row: OperationRow, ctx: Context, body: bytes
) -> bytes:
    """protocol §2.3: {"", false} without a manager."""
    assert row.request is not None and row.response is not None
    request = _parameters(row.request, body) if body else row.request()
    if dispatcher.transactions is None:
        return encode(row.response(status="", exists=False))
    state, exists = dispatcher.transactions.get_transaction_status(ctx, request.transaction_id)
    status = TransactionState(state).value if exists and state is not None else ""
    return encode(row.response(status=status, exists=exists))


TRANSACTION_ACTIONS: dict[str, Callable[[Dispatcher, OperationRow, Context, bytes], bytes]] = {
    "create_transaction": _create_transaction,
    "get_transaction_status": _transaction_status,
}
"""The actions that are not DML: what each asks of the TransactionManager."""
