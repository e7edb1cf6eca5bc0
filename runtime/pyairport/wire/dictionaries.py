"""String columns served as Arrow dictionaries (`pyairport serve --string-dictionaries`).

Compressing a `string` column's buffers one by one leaves its offsets, four bytes a value that
ZSTD barely shrinks: TPC-H's one-letter flags still take 2.6 bytes a value. As a dictionary
each batch sends its distinct values once and an index a row, which compresses to almost
nothing (docs/benchmarks.md, "compression"). DuckDB reads a dictionary column as VARCHAR,
but only when the catalog declares it one: it decodes a stream by the types it bound, so the
listing, every FlightInfo and every stream of a table must agree (a dictionary stream under
a declared `string` is read as its indices, a wrong answer and no error). Hence one setting
for the server, and a stream's schema made by the same rule as the schema it declared.

Writes are unchanged: clients send strings, and the tables store them (protocol §1.3's
no_dictionary_columns refuses a dictionary in a write).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from .column_ids import hidden_by_duckdb

_INDEX = pa.int32()


def _served_as_dictionary(field: pa.Field) -> bool:
    """A top-level string column (nested strings stay as they are: DuckDB's struct and list
    readers take them as stored), other than the rowid."""
    if not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)):
        return False
    return not hidden_by_duckdb(field)


def has_dictionaries(schema: pa.Schema) -> bool:
    """Whether a stream of schema needs dictionary messages before its batches."""
    return any(pa.types.is_dictionary(field.type) for field in schema)


def declared(schema: pa.Schema) -> pa.Schema:
    """schema with its string columns declared as dictionaries of their strings."""
    if not any(_served_as_dictionary(field) for field in schema):
        return schema
    return pa.schema(
        [
            field.with_type(pa.dictionary(_INDEX, field.type))
            if _served_as_dictionary(field)
            else field
            for field in schema
        ],
        metadata=schema.metadata,
    )


def encoded(reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
    """reader with each batch's string columns dictionary-encoded (the batch's own
    dictionary: Arrow's stream format replaces a field's dictionary when it changes), in the
    schema declared() makes of reader's."""
    schema = declared(reader.schema)
    if schema is reader.schema:
        return reader
    encode = [i for i, field in enumerate(reader.schema) if _served_as_dictionary(field)]

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            columns = list(batch.columns)
            for i in encode:
                columns[i] = pc.dictionary_encode(columns[i])
            yield pa.RecordBatch.from_arrays(columns, schema=schema)

    return pa.RecordBatchReader.from_batches(schema, batches())
