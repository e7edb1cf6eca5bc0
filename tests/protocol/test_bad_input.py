"""Input that does not fit the table is the client's mistake: INVALID_ARGUMENT with spec 004's
`schema mismatch: {details}` (deviation client_input_is_invalid_argument), never INTERNAL,
on DoExchange and DoPut, memory and Spark alike, and no table changes."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pyarrow as pa
import pytest

from pyairport.client import AirportClient, RemoteError
from pyairport.wire.ipc import batch_message, schema_message

from .conftest import Running, users

ROWID = pa.array([1], pa.int64())
OVERLONG = "x" * 500


def _duplicate_id() -> pa.Table:
    return pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["id", "id"])


def _good_then_overflowing() -> list[pa.RecordBatch]:
    """The second batch holds a uint64 that int64 cannot: the first must not stay either."""
    schema = pa.schema([("id", pa.uint64()), ("name", pa.string())])
    return [
        pa.record_batch([pa.array([7], pa.uint64()), pa.array(["ok"])], schema=schema),
        pa.record_batch([pa.array([2**64 - 1], pa.uint64()), pa.array(["big"])], schema=schema),
    ]


def _strings(offsets: list[int], data: bytes) -> pa.Array:
    """A string column as a client's buffers may hold it: checked by nothing but Arrow's
    cheap validation (offsets within the data), which pyarrow runs here."""
    buffer = pa.py_buffer(pa.array(offsets, pa.int32()).buffers()[1])
    return pa.Array.from_buffers(pa.string(), len(offsets) - 1, [None, buffer, pa.py_buffer(data)])


NOT_UTF8 = _strings([0, 2], b"\xff\xfe")
BACKWARDS = _strings([0, 3, 1], b"abc")  # the second string ends before it starts


# (what is sent, details of the answer)
EXCHANGE_CASES: dict[str, tuple[Callable[[AirportClient, str], object], str]] = {
    "insert an unknown column": (
        lambda c, s: c.insert(s, "users", pa.table({"zzz": [1]})),
        "input column 'zzz' (int64) is not a column of the table",
    ),
    "insert a string into an int64 column": (
        lambda c, s: c.insert(s, "users", pa.table({"id": ["éé" * 200]})),
        "input column 'id' is string, the table's column is int64",
    ),
    "update a column named ''": (
        lambda c, s: c.update(s, "users", pa.table({"": ["x"], "rowid": ROWID})),
        "input column '' (string) is not a column of the table",
    ),
    "update an unknown column": (
        lambda c, s: c.update(s, "users", pa.table({"nickname": ["x"], "rowid": ROWID})),
        "input column 'nickname' (string) is not a column of the table",
    ),
    "update with a value of another kind": (
        lambda c, s: c.update(s, "users", pa.table({"id": [True], "rowid": ROWID})),
        "input column 'id' is bool, the table's column is int64",
    ),
    "insert a column twice": (
        lambda c, s: c.insert(s, "users", _duplicate_id()),
        "input column 'id' is given twice",
    ),
    "insert a nested type": (
        lambda c, s: c.insert(s, "users", pa.table({"name": pa.array([[1, 2]])})),
        "input column 'name' is list<item: int64>, the table's column is string",
    ),
    "insert an overlong column name": (
        lambda c, s: c.insert(s, "users", pa.table({OVERLONG: [1]})),
        f"input column '{'x' * 64}…' (int64) is not a column of the table",
    ),
    "insert a value that does not convert, in the second batch": (
        lambda c, s: c.insert(s, "users", _good_then_overflowing(), returning=True),
        "input column 'id' (uint64) has a value that does not convert to int64",
    ),
    "insert a fraction into an int64 column": (
        lambda c, s: c.insert(s, "users", pa.table({"id": [1.5]})),
        "input column 'id' (double) has a value that does not convert to int64",
    ),
    "insert a string that is not UTF-8": (
        lambda c, s: c.insert(s, "users", pa.table({"id": [1], "name": NOT_UTF8})),
        "input column 'name' (string) holds a string that is not UTF-8",
    ),
    "insert offsets out of order": (
        lambda c, s: c.insert(s, "users", pa.table({"name": BACKWARDS, "id": [1, 2]})),
        "input column 'name' (string) holds data that is not valid Arrow",
    ),
    "update with a string that is not UTF-8": (
        lambda c, s: c.update(s, "users", pa.table({"email": NOT_UTF8, "rowid": ROWID})),
        "input column 'email' (string) holds a string that is not UTF-8",
    ),
}

PUT_CASES: dict[str, tuple[Callable[[AirportClient, str], object], str]] = {
    "put an unknown column": (
        lambda c, s: c.put_insert(s, "users", pa.table({"id": [1], "name": ["a"], "zzz": ["b"]})),
        "column 2 is 'zzz' (string), table has 'email' (string)",
    ),
    "put a string into an int64 column": (
        lambda c, s: c.put_update(
            s, "users", [1], pa.table({"id": ["1"], "name": ["a"], "email": ["b"]})
        ),
        "column 0 is 'id' (string), table has 'id' (int64)",
    ),
    "put an overlong column name": (
        lambda c, s: c.put_insert(
            s, "users", pa.table({"id": [1], "name": ["a"], OVERLONG: ["b"]})
        ),
        f"column 2 is '{'x' * 64}…' (string), table has 'email' (string)",
    ),
    "put a string that is not UTF-8": (
        lambda c, s: c.put_insert(
            s, "users", pa.table({"id": [1], "name": ["a"], "email": NOT_UTF8})
        ),
        "input column 'email' (string) holds a string that is not UTF-8",
    ),
    "put offsets out of order": (
        lambda c, s: c.put_update(
            s, "users", [1, 2], pa.table({"id": [1, 2], "name": BACKWARDS, "email": ["b", "c"]})
        ),
        "input column 'name' (string) holds data that is not valid Arrow",
    ),
}


@pytest.mark.parametrize("schema", ["dml_schema", "batch_schema"])
def test_bad_input_is_invalid_argument_and_changes_nothing(any_srv: Running, schema: str) -> None:
    srv = any_srv
    srv.client.insert(schema, "users", users([1, 2], ["Ann", "Bo"]))
    before = sorted(srv.rows(schema), key=lambda r: r["rowid"])
    cases = {**EXCHANGE_CASES, **(PUT_CASES if schema == "dml_schema" else {})}
    answers = {}
    for name, (send, _) in cases.items():
        with pytest.raises(RemoteError) as err:
            send(srv.client, schema)
        answers[name] = (err.value.code, err.value.message)
    assert answers == {
        name: (grpc.StatusCode.INVALID_ARGUMENT, f"schema mismatch: {details}")
        for name, (_, details) in cases.items()
    }
    assert sorted(srv.rows(schema), key=lambda r: r["rowid"]) == before


def test_input_of_the_same_kind_is_still_stored(any_srv: Running) -> None:
    """int32 ids, large strings and dictionary-encoded names fit int64 and string columns."""
    srv = any_srv
    rows = pa.table(
        {
            "id": pa.array([5], pa.int32()),
            "name": pa.array(["Dee"]).dictionary_encode(),
            "email": pa.array(["d@x"], pa.large_string()),
        }
    )
    assert srv.client.insert("dml_schema", "users", rows).total_changed == 1
    assert [(r["id"], r["name"], r["email"]) for r in srv.rows("dml_schema")] == [(5, "Dee", "d@x")]


@pytest.mark.parametrize(
    ("operation", "columns"),
    [
        ("insert", [("name", pa.dictionary(pa.int32(), pa.string()))]),
        # INSERT ignores a column named like the table's rowid, but it could not be read
        ("insert", [("id", pa.int64()), ("rowid", pa.dictionary(pa.int8(), pa.int64()))]),
        # DELETE reads only the rowid; an extra column could not be read either
        ("delete", [("rowid", pa.int64()), ("name", pa.dictionary(pa.int32(), pa.string()))]),
    ],
)
def test_a_dictionary_encoded_column_is_refused_before_any_batch(
    srv: Running, operation: str, columns: list[tuple[str, pa.DataType]]
) -> None:
    """Airport DML streams carry no dictionary batches, so such a column could never be read:
    refused at the schema, before the stream's batches (another client's; AirportClient sends
    the values instead)."""
    schema = pa.schema(columns)
    headers = [("airport-flight-path", "dml_schema/users"), ("airport-operation", operation)]
    with pytest.raises(grpc.RpcError) as err:
        list(srv.client.stub.DoExchange(iter([schema_message(schema)]), metadata=headers))
    name, data_type = next((n, t) for n, t in columns if pa.types.is_dictionary(t))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert err.value.details() == (  # type: ignore[attr-defined]
        f"schema mismatch: input column '{name}' is dictionary-encoded ({data_type});"
        " the stream carries no dictionaries"
    )


def test_data_that_is_not_valid_arrow_is_refused_on_every_dml_exchange(srv: Running) -> None:
    """A DELETE's batch is checked too, its extra columns included (the table reads only the
    rowid, but Arrow's own reading of the batch may touch them)."""
    srv.client.insert("dml_schema", "users", users([1, 2], ["Ann", "Bo"]))
    before = srv.rows("dml_schema")
    batch = pa.record_batch({"rowid": pa.array([1, 2], pa.int64()), "name": BACKWARDS})
    headers = [("airport-flight-path", "dml_schema/users"), ("airport-operation", "delete")]
    messages = [schema_message(batch.schema), batch_message(batch)]
    with pytest.raises(grpc.RpcError) as err:
        list(srv.client.stub.DoExchange(iter(messages), metadata=headers))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert err.value.details() == (  # type: ignore[attr-defined]
        "schema mismatch: input column 'name' (string) holds data that is not valid Arrow"
    )
    assert srv.rows("dml_schema") == before
