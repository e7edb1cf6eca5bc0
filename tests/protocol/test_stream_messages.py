"""The messages the catalog's DoGet sends for a stream's batches (wire/compression.BatchEncoder):
plain, compressed, and with dictionary columns (wire/dictionaries.py), whose values go in
messages of their own before the batch that brings them. Read back by Arrow's own stream
reader, they are the batches that were encoded, each with its own dictionary."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airport_contracts import flight_pb2
from pyairport.wire.compression import BatchEncoder
from pyairport.wire.dictionaries import declared, encoded
from pyairport.wire.ipc import read_message

ROWID = {b"is_rowid": b"1"}


def _rows() -> pa.RecordBatchReader:
    schema = pa.schema(
        [
            pa.field("note", pa.string()),
            pa.field("long_note", pa.large_string()),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("n", pa.int64()),
            pa.field("key", pa.string(), metadata=ROWID),
        ]
    )
    batches = [
        pa.record_batch(
            [
                pa.array(["a", None, "a", "b"]),
                pa.array(["x" * 20, "x" * 20, None, "y"], pa.large_string()),
                pa.array([["t"], None, [], ["t", "u"]]),
                pa.array([1, 2, 3, 4]),
                pa.array(["k1", "k2", "k3", "k4"]),
            ],
            schema=schema,
        ),
        pa.record_batch(
            [
                pa.array(["c", "d"]),
                pa.array([None, "z"], pa.large_string()),
                pa.array([None, ["v"]]),
                pa.array([5, 6]),
                pa.array(["k5", "k6"]),
            ],
            schema=schema,
        ),
    ]
    return pa.RecordBatchReader.from_batches(schema, batches)


def test_top_level_strings_but_the_rowid_are_declared_dictionaries() -> None:
    schema = declared(_rows().schema)
    assert [field.type for field in schema] == [
        pa.dictionary(pa.int32(), pa.string()),
        pa.dictionary(pa.int32(), pa.large_string()),
        pa.list_(pa.string()),  # nested strings are read as stored
        pa.int64(),
        pa.string(),  # the rowid
    ]
    assert schema.field("key").metadata == ROWID
    no_strings = pa.schema([pa.field("n", pa.int64())])
    assert declared(no_strings) is no_strings


@pytest.mark.parametrize("codec", [None, "lz4", "zstd"])
def test_each_batch_brings_its_dictionaries_and_reads_back_exactly(codec: str | None) -> None:
    rows = encoded(_rows())
    assert rows.schema == declared(_rows().schema)
    encoder = BatchEncoder(rows.schema, codec)
    messages: list[pa.ipc.Message] = []
    for i, batch in enumerate(rows):
        sent = [
            flight_pb2.FlightData.FromString(data) for data in encoder.encode(batch, b"p%d" % i)
        ]
        # a message per dictionary column, then the batch, which alone carries app_metadata
        assert [data.app_metadata for data in sent] == [b"", b"", b"p%d" % i]
        messages += [read_message(data) for data in sent]
    assert [m.type for m in messages] == ["dictionary", "dictionary", "record batch"] * 2
    stream = rows.schema.serialize().to_pybytes() + b"".join(
        m.serialize().to_pybytes() for m in messages
    )
    got = pa.ipc.open_stream(stream).read_all()
    assert got.schema == rows.schema
    assert got.cast(_rows().schema).equals(_rows().read_all())
    assert got.column("note").chunk(1).dictionary.to_pylist() == ["c", "d"]  # its own


def test_a_stream_without_dictionaries_is_one_message_a_batch() -> None:
    batch = pa.record_batch([pa.array([1])], names=["n"])
    for codec in (None, "zstd"):
        encoder = BatchEncoder(batch.schema, codec)
        (data,) = encoder.encode(batch, b"m")
        assert flight_pb2.FlightData.FromString(data).app_metadata == b"m"
