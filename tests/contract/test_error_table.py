"""The generated error classes agree with the contract's error table."""

from __future__ import annotations

import pytest

import airport_contracts
from airport_contracts import ERRORS, ERRORS_BY_ID, AirportError, StatusCode
from airport_contracts.contract import ERROR_TABLE, ErrorRow


@pytest.mark.parametrize("row", ERROR_TABLE, ids=lambda r: r.id)
def test_every_row_has_a_class_with_its_code_and_message(row: ErrorRow) -> None:
    cls = ERRORS_BY_ID[row.id]
    assert cls.__name__ == row.cls and getattr(airport_contracts, row.cls) is cls
    assert cls.code is StatusCode[row.code]
    values = {p: f"<{p}>" for p in row.params}
    error = cls(**values)
    assert isinstance(error, AirportError)
    assert str(error) == row.message.format(**values)
    for p in row.params:
        assert getattr(error, p) == f"<{p}>"


def test_classes_and_rows_are_one_to_one() -> None:
    assert [e.id for e in ERRORS] == [r.id for r in ERROR_TABLE]
    assert len({e.__name__ for e in ERRORS}) == len(ERRORS)


def test_status_codes_match_grpc() -> None:
    import grpc

    for code in StatusCode:
        assert grpc.StatusCode[code.name].value[0] == code.value
