"""How the client streams a DML call: its input as batches (dictionaries decoded), sent
through a bounded outbox while gRPC sends them, the answer collected on a thread of its own
as it comes (pipelined), or read batch by batch in lock-step (the caller's)."""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

import grpc
import pyarrow as pa

from ..wire.ipc import encode_batch
from .errors import remote_error

END = object()
"""Put in the outbox after the last message: the input ends."""
_OUTBOX_MESSAGES = 4  # serialized batches waiting for gRPC to send them
_Result = TypeVar("_Result")


def input_batches(
    data: pa.Table | pa.RecordBatch | pa.RecordBatchReader | Iterable[pa.RecordBatch],
    max_rows: int | None,
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """What a DML call sends: the schema, and the batches (a table's cut at max_rows)."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        return _without_dictionaries(data.schema, iter(data.to_batches(max_chunksize=max_rows)))
    if isinstance(data, pa.RecordBatchReader):
        return _without_dictionaries(data.schema, iter(data))
    batches = iter(data)
    first = next(batches, None)  # the schema; the rest streams as the call goes
    if first is None:
        raise ValueError("no batches and no schema: pass a pa.Table to send an empty input")
    return _without_dictionaries(first.schema, itertools.chain([first], batches))


def _without_dictionaries(
    schema: pa.Schema, batches: Iterator[pa.RecordBatch]
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """Dictionary-encoded columns (pandas categoricals, say) sent as their values: Airport
    DML streams carry no dictionary batches, so a server could not decode them."""
    encoded = [i for i, field in enumerate(schema) if pa.types.is_dictionary(field.type)]
    if not encoded:
        return schema, batches
    for i in encoded:
        schema = schema.set(i, schema.field(i).with_type(schema.field(i).type.value_type))

    def decoded() -> Iterator[pa.RecordBatch]:
        for batch in batches:
            columns = list(batch.columns)
            for i in encoded:
                columns[i] = columns[i].dictionary_decode()
            yield pa.RecordBatch.from_arrays(columns, schema=schema)

    return schema, decoded()


@contextlib.contextmanager
def streaming_call(
    method: Callable[..., Any], first: bytes, metadata: list[tuple[str, str]]
) -> Iterator[tuple[Any, queue.Queue[object]]]:
    """Start a client-streaming call whose first message is first: (its responses, the outbox
    the caller puts the rest of its messages in, then END). A gRPC error leaves the block as
    a RemoteError; any other exception (the caller's data failed, or the caller was
    interrupted, half way) cancels the call, as ending the input would have the server commit
    the batches it already has."""
    # Bounded: a caller streaming more data than fits in memory has it serialized only as
    # fast as gRPC sends it.
    outbox: queue.Queue[object] = queue.Queue(maxsize=_OUTBOX_MESSAGES)

    def requests() -> Iterator[bytes]:
        while (item := outbox.get()) is not END:
            assert isinstance(item, bytes)
            yield item

    outbox.put(first)
    responses = method(requests(), metadata=metadata)
    try:
        yield responses, outbox
    except grpc.RpcError as error:
        raise remote_error(error) from None
    except BaseException:
        responses.cancel()
        raise
    finally:
        # Wakes gRPC's sending thread if it waits for a message; a full outbox means it is
        # not waiting, and it stops by itself once the call has ended.
        with contextlib.suppress(queue.Full):
            outbox.put_nowait(END)


def pipelined(
    responses: Iterator[Any],
    outbox: queue.Queue[object],
    batches: Iterator[pa.RecordBatch],
    collect: Callable[[Iterator[Any]], _Result],
) -> _Result:
    """Send every batch while a thread collects the answer as it comes (RETURNING batches, the
    final metadata, or an early error that makes sending the rest pointless)."""
    answer = _Answer(responses, collect)
    for batch in itertools.chain(map(encode_batch, batches), [END]):
        if not answer.put(outbox, batch):
            break  # the server has ended the call: its status is the answer
    return answer.result()


class _Answer(Generic[_Result]):
    """Collects a call's answer on its own thread while the caller keeps sending."""

    def __init__(
        self, responses: Iterator[Any], collect: Callable[[Iterator[Any]], _Result]
    ) -> None:
        self.done = threading.Event()
        self._answer: _Result | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._collect, args=(responses, collect), name="airport-answer", daemon=True
        )
        self._thread.start()

    def _collect(
        self, responses: Iterator[Any], collect: Callable[[Iterator[Any]], _Result]
    ) -> None:
        try:
            self._answer = collect(responses)
        except BaseException as error:  # an RpcError, or an answer that does not decode
            self._error = error
        finally:
            self.done.set()

    def put(self, outbox: queue.Queue[object], message: object) -> bool:
        """Queue message for sending unless the call ends first (then nothing sends it)."""
        while not self.done.is_set():
            try:
                outbox.put(message, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def result(self) -> _Result:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._answer is not None
        return self._answer
