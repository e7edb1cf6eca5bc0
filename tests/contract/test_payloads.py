"""Payload codecs: byte layout, round trips, and rejections that name the field."""

from __future__ import annotations

import contextlib
import json

import msgpack
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from airport_contracts import (
    CreateTransactionResponse,
    DeleteAction,
    DeleteActionResult,
    DMLResponse,
    FinalMetadata,
    GetTransactionStatusResponse,
    InsertDescriptor,
    InvalidPayload,
    UpdateDescriptor,
)

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
NAMES = st.text(max_size=20)


def test_final_metadata_is_the_go_24_bytes() -> None:
    data = FinalMetadata(total_changed=3).to_msgpack()
    assert data.hex() == "81ad746f74616c5f6368616e676564cf0000000000000003"
    assert FinalMetadata.from_msgpack(data).total_changed == 3


def test_create_transaction_without_manager_is_identifier_nil() -> None:
    assert (
        CreateTransactionResponse(identifier=None).to_msgpack().hex()
        == "81aa6964656e746966696572c0"
    )


def test_dml_response_uses_fixed_width_int64_and_bin() -> None:
    data = DMLResponse(status="success", affected_rows=4, returning_data=b"\x01").to_msgpack()
    assert (
        data
        == b"\x83\xa6status\xa7success\xadaffected_rows\xd3"
        + (4).to_bytes(8, "big")
        + b"\xaereturning_data\xc4\x01\x01"
    )
    assert msgpack.unpackb(data) == {
        "status": "success",
        "affected_rows": 4,
        "returning_data": b"\x01",
    }


def test_omitempty_fields_are_left_out() -> None:
    assert msgpack.unpackb(DMLResponse(status="success", affected_rows=0).to_msgpack()) == {
        "status": "success",
        "affected_rows": 0,
    }
    assert json.loads(InsertDescriptor(schema_name="a", table_name="b").to_json()) == {
        "operation": "insert",
        "schema_name": "a",
        "table_name": "b",
    }


def test_delete_result_base64_returning_data() -> None:
    body = DeleteActionResult(
        status="success", affected_rows=1, returning_data=b"\xff\x00"
    ).to_json()
    assert json.loads(body)["returning_data"] == "/wA="
    assert DeleteActionResult.from_json(body).returning_data == b"\xff\x00"


@given(schema=NAMES, table=NAMES, row_ids=st.lists(INT64, max_size=50), returning=st.booleans())
def test_update_descriptor_round_trip(
    schema: str, table: str, row_ids: list[int], returning: bool
) -> None:
    d = UpdateDescriptor(schema_name=schema, table_name=table, row_ids=row_ids, returning=returning)
    assert UpdateDescriptor.from_json(d.to_json()) == d


@given(
    affected=INT64,
    data=st.one_of(st.none(), st.binary(min_size=1, max_size=64)),
    error=st.one_of(st.none(), st.text(min_size=1, max_size=30)),
)
def test_dml_response_round_trip(affected: int, data: bytes | None, error: str | None) -> None:
    r = DMLResponse(
        status="success", affected_rows=affected, returning_data=data, error_message=error
    )
    assert DMLResponse.from_msgpack(r.to_msgpack()) == r


@given(status=st.sampled_from(["", "active", "committed", "aborted"]), exists=st.booleans())
def test_transaction_status_round_trip(status: str, exists: bool) -> None:
    r = GetTransactionStatusResponse(status=status, exists=exists)
    assert GetTransactionStatusResponse.from_msgpack(r.to_msgpack()) == r


@pytest.mark.parametrize(
    ("payload", "body", "message"),
    [
        (
            InsertDescriptor,
            b"{",
            "invalid InsertDescriptor: not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        ),
        (InsertDescriptor, b"[]", "invalid InsertDescriptor: expected a JSON object, got list"),
        (
            InsertDescriptor,
            b'{"operation":"insert","table_name":"t"}',
            "invalid InsertDescriptor: missing field 'schema_name'",
        ),
        (
            InsertDescriptor,
            b'{"operation":"update","schema_name":"s","table_name":"t"}',
            'invalid InsertDescriptor: field \'operation\' must be "insert", got "update"',
        ),
        (
            InsertDescriptor,
            b'{"operation":"insert","schema_name":1,"table_name":"t"}',
            "invalid InsertDescriptor: field 'schema_name' must be a string, got integer",
        ),
        (
            InsertDescriptor,
            b'{"operation":"insert","schema_name":"s","table_name":"t","returning":"yes"}',
            "invalid InsertDescriptor: field 'returning' must be a boolean, got string",
        ),
        (
            UpdateDescriptor,
            b'{"operation":"update","schema_name":"s","table_name":"t"}',
            "invalid UpdateDescriptor: missing field 'row_ids'",
        ),
        (
            UpdateDescriptor,
            b'{"operation":"update","schema_name":"s","table_name":"t","row_ids":[1,true]}',
            "invalid UpdateDescriptor: field 'row_ids[1]' must be an integer, got boolean",
        ),
        (
            UpdateDescriptor,
            b'{"operation":"update","schema_name":"s","table_name":"t","row_ids":[9223372036854775808]}',
            "invalid UpdateDescriptor: field 'row_ids[0]' is out of int64 range",
        ),
        (
            DeleteAction,
            b'{"schema_name":"s","table_name":"t","row_ids":"1,2"}',
            "invalid DeleteAction: field 'row_ids' must be a list of integers, got string",
        ),
    ],
)
def test_bad_json_payloads_are_refused_with_the_field_named(
    payload: type, body: bytes, message: str
) -> None:
    with pytest.raises(InvalidPayload) as err:
        payload.from_json(body)
    assert err.value.code.name == "INVALID_ARGUMENT"
    assert str(err.value) == message


def test_bad_msgpack_is_refused() -> None:
    # a body that is not a map: vmihailenco/msgpack's wording, as airport-go sends it
    with pytest.raises(
        InvalidPayload,
        match=r"^invalid FinalMetadata: msgpack: unexpected code=1 decoding map length$",
    ):
        FinalMetadata.from_msgpack(msgpack.packb(1))
    with pytest.raises(
        InvalidPayload,
        match=r"^invalid FinalMetadata: msgpack: unexpected code=c1 decoding map length$",
    ):
        FinalMetadata.from_msgpack(b"\xc1")
    with pytest.raises(InvalidPayload, match=r"^invalid FinalMetadata: not valid msgpack"):
        FinalMetadata.from_msgpack(b"\x81\xa1")  # a map cut short
    with pytest.raises(
        InvalidPayload, match=r"^invalid FinalMetadata: expected a msgpack map, got null$"
    ):
        FinalMetadata.from_msgpack(b"\xc0")


@given(st.binary(max_size=64))
@example(b"\x84[\xd4n\xab\x90) \x93")  # a map whose key is a list: found by this test
@example(b"[" * 100_000)  # nesting deeper than the JSON parser's recursion limit
def test_arbitrary_bytes_never_escape_as_anything_but_invalid_payload(data: bytes) -> None:
    for decode in (
        InsertDescriptor.from_json,
        DeleteAction.from_json,
        DMLResponse.from_msgpack,
        FinalMetadata.from_msgpack,
    ):
        with contextlib.suppress(InvalidPayload):  # anything else fails the test
            decode(data)
