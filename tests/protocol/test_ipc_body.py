"""What a client's compressed batch decompresses to, read from its message before Arrow
decompresses it (wire/ipc_body.py), against the batch's own buffers."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pyairport.wire.ipc_body import decompressed_size

ROWS = pa.table(
    {
        "name": pa.array(["x" * 100_000, None, "é"]),
        "id": pa.array([1, None, 3], pa.int64()),
        "tags": pa.array([[1, 2], None, []], pa.list_(pa.int32())),
        "empty": pa.array([None, None, None], pa.string()),
    }
)


def _messages(compression: str | None) -> list[pa.ipc.Message]:
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_stream(sink, ROWS.schema, options=options) as writer:
        writer.write_table(ROWS)
    return list(pa.ipc.MessageReader.open_stream(sink.getvalue()))


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_a_compressed_batch_declares_its_buffers_sizes(codec: str) -> None:
    schema, batch = _messages(codec)
    assert decompressed_size(schema.metadata, b"") is None  # not a record batch
    in_memory = sum(
        buffer.size
        for column in ROWS.columns
        for buffer in column.chunk(0).buffers()
        if buffer is not None
    )
    assert decompressed_size(batch.metadata, batch.body) == in_memory
    assert batch.body.size < in_memory // 10


def test_an_uncompressed_batch_is_its_own_size() -> None:
    _, batch = _messages(None)
    assert decompressed_size(batch.metadata, batch.body) is None


def test_a_buffer_placed_outside_the_body_is_left_to_arrow() -> None:
    """The flatbuffer's verifier does not know the body: a buffer placed past it (here: a body
    cut short) is not read here; Arrow's reader refuses the message itself."""
    _, batch = _messages("zstd")
    assert decompressed_size(batch.metadata, b"") == 0
    cut = decompressed_size(batch.metadata, batch.body.to_pybytes()[:16])
    assert cut is not None and 0 < cut < 100  # only the first buffer's prefix is in the cut


def test_a_compressed_dictionary_declares_its_values_sizes() -> None:
    values = pa.array(["y" * 50_000, "z"])
    table = pa.table({"d": pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int32()), values)})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(
        sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")
    ) as writer:
        writer.write_table(table)
    _, dictionary, batch = pa.ipc.MessageReader.open_stream(sink.getvalue())
    assert dictionary.type == "dictionary"
    assert decompressed_size(dictionary.metadata, dictionary.body) == sum(
        b.size for b in values.buffers() if b is not None
    )
    assert decompressed_size(batch.metadata, batch.body) == 3 * 4  # the indices
