"""DoPut, spec 002's INSERT and UPDATE, for any operation of the protocol: a JSON descriptor,
the batches, one PutResult whose app_metadata is the operation's response payload."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airport_contracts import (
    Context,
    DMLResult,
    InvalidPayload,
)
from airport_contracts.dispatch import OperationRow

from . import validation
from .events import ExchangeInput
from .exchange import read_schema
from .payloads import encode, returning_data_bytes
from .statement import Feed, StatementRun

if TYPE_CHECKING:
    from .dispatcher import Dispatcher


def json_command(command: bytes) -> Mapping[str, object]:
    """The DoPut descriptor's JSON object (its operation decides which payload it is)."""
    try:
        obj = json.loads(command)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidPayload(payload="descriptor", problem=f"not valid JSON: {exc}") from None
    except RecursionError:
        raise InvalidPayload(
            payload="descriptor", problem="not valid JSON: nested too deeply"
        ) from None
    if not isinstance(obj, dict):
        raise InvalidPayload(payload="descriptor", problem="expected a JSON object")
    return obj


def run_put(
    dispatcher: Dispatcher, row: OperationRow, ctx: Context, call: tuple[Any, str, ExchangeInput]
) -> bytes:
    """One DoPut statement of the operation `row`: call is (the decoded descriptor, the
    transaction id, the input stream)."""
    descriptor, transaction_id, stream = call
    statement = row.statement
    table = dispatcher.table(ctx, descriptor.schema_name, descriptor.table_name)
    method = dispatcher.interface(row, table, descriptor.table_name)
    table_schema = table.arrow_schema(None)
    table_rowid = -1
    if row.rowid == "descriptor_row_ids":
        table_rowid = dispatcher.rowid_for_row_ids(
            row, table_schema, descriptor.table_name, descriptor.row_ids
        )
    opts = dispatcher.options(table_schema, descriptor.returning)
    run = StatementRun(dispatcher, ctx, row.protocol, statement, transaction_id)
    with run.committed():
        input_schema = read_schema(stream)
        if input_schema is None:
            input_schema = validation.data_schema(table_schema)
        if "schema_matches_table" in row.validation:
            validation.schema_matches(input_schema, table_schema)
        call_table = getattr(table, method.method)
        result: DMLResult | None
        if row.rowid == "descriptor_row_ids":
            feed = Feed(run.ctx, stream.batches(), statement)
            batches = list(feed)
            if "row_count_matches" in row.validation and feed.rows != len(descriptor.row_ids):
                raise validation.rule_error("row_count_matches", row.name)(
                    row_ids=len(descriptor.row_ids), rows=feed.rows
                )
            row_ids = pa.array(descriptor.row_ids, type=pa.int64())
            rowid_field = table_schema.field(table_rowid)
            if "row_ids_exist" in row.validation:
                validation.row_ids_exist(run, table, rowid_field.name, row_ids, row.name)
            rows = pa.Table.from_batches(batches, schema=input_schema).combine_chunks()
            if method.takes_row_ids:
                reader = pa.RecordBatchReader.from_batches(input_schema, rows.to_batches())
                result = run.call(None, call_table, row_ids, reader, opts)
            else:
                with_ids = rows.append_column(rowid_field, row_ids)
                reader = pa.RecordBatchReader.from_batches(with_ids.schema, with_ids.to_batches())
                result = run.call(None, call_table, reader, opts)
        else:
            feed = Feed(run.ctx, stream.batches(), statement)
            reader = pa.RecordBatchReader.from_batches(input_schema, iter(feed))
            result = run.call(feed, call_table, reader, opts)
            feed.drain()
        returning_data = returning_data_bytes(result) if descriptor.returning else None
    assert row.response is not None
    return encode(
        row.response(
            status="success", affected_rows=run.affected_rows(result), returning_data=returning_data
        )
    )
