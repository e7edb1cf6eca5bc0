"""An in-out function's answers, framed per input batch (protocol §6.5, deviation
in_out_one_call_per_stream).

DuckDB sends one batch of its rows, then reads the answer up to a batch marked
chunk_finished before it sends the next. The function gets every row as one reader, so the
answer to a batch is what it returns until it asks for the next batch: the function runs in a
thread of its own, and the reader it reads marks the end of an answer when it is asked for
the next batch (or finds the input ended), before waiting for the client. What the function
returns after the input ended is one more answer, which DuckDB reads when it finishes.
"""

from __future__ import annotations

import collections
import queue
import threading
from collections.abc import Callable, Iterator

import pyarrow as pa

from airport_contracts.dispatch import FUNCTION_WIRE

_ANSWERED = object()  # the answer to an input batch is complete
_DONE = object()  # the function returned and the input is drained
_POLL = 0.1  # seconds between looks at whether the call is over, while the queue is full


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def in_out_answers(
    run: Callable[[pa.RecordBatchReader], pa.RecordBatchReader],
    input_schema: pa.Schema,
    batches: Iterator[pa.RecordBatch],
    output_schema: pa.Schema,
) -> Iterator[tuple[pa.RecordBatch, bytes]]:
    """(batch, app_metadata) pairs to send: the function's batches marked chunk_continues,
    each answer ended by an empty batch marked chunk_finished. run(rows) calls the function."""
    events: queue.Queue[object] = queue.Queue(maxsize=4)
    over = threading.Event()

    def put(event: object) -> None:
        while not over.is_set():
            try:
                events.put(event, timeout=_POLL)
                return
            except queue.Full:
                continue

    def rows() -> Iterator[pa.RecordBatch]:
        started = False
        while not over.is_set():
            if started:  # asked for the next batch: the last one's answer is complete
                put(_ANSWERED)
            batch = next(batches, None)
            if batch is None:
                return
            started = True
            yield batch

    def work() -> None:
        reader = pa.RecordBatchReader.from_batches(input_schema, rows())
        try:
            for batch in run(reader):
                if over.is_set():
                    return
                put(batch)
            collections.deque(reader, maxlen=0)  # rows it did not read still get their answers
        except BaseException as exc:  # reaches the client as the function's failure
            put(_Failure(exc))
            return
        put(_DONE)

    worker = threading.Thread(target=work, name="in-out function", daemon=True)
    worker.start()
    finished = pa.RecordBatch.from_pylist([], schema=output_schema)
    try:
        while True:
            event = events.get()
            if event is _DONE:
                yield finished, FUNCTION_WIRE.chunk_finished
                return
            if event is _ANSWERED:
                yield finished, FUNCTION_WIRE.chunk_finished
            elif isinstance(event, _Failure):
                raise event.error
            else:
                assert isinstance(event, pa.RecordBatch)
                yield _fitted(event, output_schema), FUNCTION_WIRE.chunk_continues
    finally:
        over.set()


def _fitted(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """batch in the announced schema: the same columns and types, or a failure."""
    if batch.schema.equals(schema):
        return batch
    if batch.schema.names == schema.names and all(
        have.type.equals(want.type) for have, want in zip(batch.schema, schema, strict=True)
    ):
        return pa.RecordBatch.from_arrays(batch.columns, schema=schema)
    raise ValueError(
        f"the function returned rows of schema ({_list(batch.schema)}), not ({_list(schema)})"
    )


def _list(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name} {f.type}" for f in schema)
