"""The transaction actions (protocol §2.2-2.3) and what a failed statement does to the
transaction it named. Each action answers exactly one Result body."""

from __future__ import annotations

import logging
from typing import Any

from airport_contracts import (
    Context,
    CreateTransactionFailed,
    InvalidActionParameters,
    InvalidPayload,
    TransactionManager,
    TransactionState,
)
from airport_support.rows import OperationRow

from .events import ActionCall

log = logging.getLogger("pyairport.dispatch")


def _parameters(row: OperationRow, call: ActionCall) -> Any:
    """An action's body as its request (as routing decoded it, else decoded here); a bad
    body is the actions' own error row."""
    assert row.request is not None
    if call.request is not None:
        return call.request
    try:
        return row.request.decode(call.body)
    except InvalidPayload as exc:
        raise InvalidActionParameters(error=exc.problem) from None


def _answer(row: OperationRow, **fields: object) -> bytes:
    assert row.response is not None
    body: bytes = row.response(**fields).encode()
    return body


def create_transaction(
    transactions: TransactionManager | None, row: OperationRow, ctx: Context, call: ActionCall
) -> bytes:
    """protocol §2.2: {identifier: nil} without a manager."""
    assert row.response is not None
    if call.body:
        _parameters(row, call)
    if transactions is None:
        return _answer(row, identifier=None)
    try:
        tx_id = transactions.begin_transaction(ctx)
    except Exception as exc:
        log.error("begin_transaction failed", exc_info=exc)
        raise CreateTransactionFailed(error=exc) from exc
    return _answer(row, identifier=tx_id)


def transaction_status(
    transactions: TransactionManager | None, row: OperationRow, ctx: Context, call: ActionCall
) -> bytes:
    """protocol §2.3: {"", false} without a manager."""
    assert row.request is not None and row.response is not None
    request = _parameters(row, call) if call.body else row.request()
    if transactions is None:
        return _answer(row, status="", exists=False)
    state, exists = transactions.get_transaction_status(ctx, request.transaction_id)
    status = TransactionState(state).value if exists and state is not None else ""
    return _answer(row, status=status, exists=exists)


def abort_transaction(manager: TransactionManager, ctx: Context, transaction_id: str) -> None:
    """A failed statement aborts the transaction it named (deviation
    transaction_spans_statements); later statements under it are refused."""
    try:
        manager.rollback_transaction(ctx, transaction_id)
    except Exception as exc:  # Go logs a failed rollback and keeps the original error
        log.error("rollback of transaction %s failed", transaction_id, exc_info=exc)
