"""What goes into a statement and what comes out: the input stream, the calls the
dispatcher hands each protocol's runner (typed, one per protocol), and the events a
DoExchange answers with."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from airport_contracts import FinalMetadata


class ExchangeInput(Protocol):
    """The client's half of a stream: an Arrow schema, then record batches."""

    def read_schema(self) -> pa.Schema | None:
        """The input schema, or None when the client closed the stream before sending one."""
        ...

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The input batches, read lazily from the client."""
        ...


class StaticInput:
    """An ExchangeInput over batches already in memory (tests, benchmarks)."""

    def __init__(self, schema: pa.Schema | None, batches: Iterable[pa.RecordBatch] = ()) -> None:
        self._schema = schema
        self._batches = list(batches)

    def read_schema(self) -> pa.Schema | None:
        return self._schema

    def batches(self) -> Iterator[pa.RecordBatch]:
        return iter(self._batches)


@dataclass(frozen=True)
class ExchangeRequest:
    """A DoExchange DML request as its headers describe it (protocol §1.1)."""

    operation: str
    schema_name: str
    table_name: str
    returning: bool
    transaction_id: str


@dataclass(frozen=True)
class ExchangeCall:
    """A DoExchange statement: its request and the client's stream."""

    request: ExchangeRequest
    stream: ExchangeInput


@dataclass(frozen=True)
class PutCall:
    """A DoPut statement: its decoded descriptor (the operation's request payload), the
    call's transaction id and the client's stream."""

    descriptor: Any
    transaction_id: str
    stream: ExchangeInput


@dataclass(frozen=True)
class ActionCall:
    """A DoAction: its body and the call's transaction id ("" for actions that are not DML),
    and the body as its operation's request payload where the caller decoded it already."""

    body: bytes
    transaction_id: str
    request: Any = None


@dataclass(frozen=True)
class OutputSchema:
    """The output schema message: sent before any input batch is processed."""

    schema: pa.Schema
    app_metadata: bytes = b""


@dataclass(frozen=True)
class OutputBatch:
    """One answer batch: with RETURNING exactly one per input batch; an in-out function's
    carry its chunk markers (protocol §6.5)."""

    batch: pa.RecordBatch
    app_metadata: bytes = b""


@dataclass(frozen=True)
class OutputFinal:
    """The final message: app_metadata only, the FinalMetadata payload."""

    app_metadata: bytes
    total_changed: int


ExchangeEvent = OutputSchema | OutputBatch | OutputFinal


def final_metadata(total_changed: int) -> OutputFinal:
    return OutputFinal(FinalMetadata(total_changed=total_changed).to_msgpack(), total_changed)
