"""DoPut: spec 002's INSERT and UPDATE, for any operation of the protocol: a JSON descriptor,
the batches, one PutResult whose app_metadata is the operation's response payload."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace

import pyarrow as pa

from airport_contracts import Context, DMLResult, InvalidPayload, TransactionManager
from airport_support.rows import OperationRow
from airport_support.vocabulary import RowidSource, RulePhase

from . import validation
from .do_exchange import read_schema
from .events import PutCall
from .payloads import returning_data_bytes
from .statement import Feed, StatementRun
from .tables import Tables


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
    tables: Tables,
    transactions: TransactionManager | None,
    row: OperationRow,
    ctx: Context,
    call: PutCall,
) -> bytes:
    """One DoPut statement of the operation `row`."""
    descriptor, stream = call.descriptor, call.stream
    statement = row.statement
    table = tables.table(ctx, descriptor.schema_name, descriptor.table_name)
    method = tables.interface(row, table, descriptor.table_name)
    table_schema = table.arrow_schema(None)
    table_rowid = -1
    by_row_ids = row.rowid is RowidSource.DESCRIPTOR_ROW_IDS
    if by_row_ids:
        table_rowid = tables.rowid_for_row_ids(
            row, table_schema, descriptor.table_name, descriptor.row_ids
        )
    opts = tables.options(table_schema, descriptor.returning)
    run = StatementRun(transactions, ctx, row.protocol, statement, call.transaction_id)
    with run.committed():
        input_schema = read_schema(stream)
        if input_schema is None:
            input_schema = validation.data_schema(table_schema)
        facts = validation.Facts(row, input_schema, table_schema)
        validation.check(RulePhase.INPUT_SCHEMA, facts)
        check = validation.check(RulePhase.INPUT_BATCHES, facts)
        call_table = getattr(table, method.method)
        result: DMLResult | None
        if by_row_ids:
            feed = Feed(run.ctx, stream.batches(), statement, check)
            batches = list(feed)
            read = replace(facts, row_ids=descriptor.row_ids, rows=feed.rows, run=run, table=table)
            validation.check(RulePhase.ROWS_READ, read)
            row_ids = pa.array(descriptor.row_ids, type=pa.int64())
            rowid_field = table_schema.field(table_rowid)
            rows = pa.Table.from_batches(batches, schema=input_schema).combine_chunks()
            if method.takes_row_ids:
                reader = pa.RecordBatchReader.from_batches(input_schema, rows.to_batches())
                result = run.call(None, call_table, row_ids, reader, opts)
            else:
                with_ids = rows.append_column(rowid_field, row_ids)
                reader = pa.RecordBatchReader.from_batches(with_ids.schema, with_ids.to_batches())
                result = run.call(None, call_table, reader, opts)
        else:
            feed = Feed(run.ctx, stream.batches(), statement, check)
            reader = pa.RecordBatchReader.from_batches(input_schema, iter(feed))
            result = run.call(feed, call_table, reader, opts)
            feed.drain()
        returning_data = returning_data_bytes(result) if descriptor.returning else None
    assert row.response is not None
    answer: bytes = row.response(
        status="success", affected_rows=run.affected_rows(result), returning_data=returning_data
    ).encode()
    return answer
