"""arrow_convert: the conversions pyarrow has no cast for, exact both ways."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pyairport.backends.arrow_convert import INTERVAL_PARTS, convert

MDN = pa.MonthDayNano


def test_an_interval_and_its_parts_convert_both_ways_with_nulls_and_offsets() -> None:
    interval = pa.array(
        [MDN([1, 2, 3]), None, MDN([-1, 0, 5_000_000_000]), MDN([0, -3, -1])],
        pa.month_day_nano_interval(),
    )
    for column in (interval, interval.slice(1), pa.chunked_array([interval, interval.slice(2)])):
        parts = convert(column, INTERVAL_PARTS)
        assert parts.type == INTERVAL_PARTS
        back = convert(parts, pa.month_day_nano_interval())
        assert back.to_pylist() == column.to_pylist()
    assert convert(interval, INTERVAL_PARTS)[0].as_py() == {
        "months": 1,
        "days": 2,
        "nanoseconds": 3,
    }


def test_an_extension_type_converts_to_and_from_what_stores_it() -> None:
    ids = pa.ExtensionArray.from_storage(
        pa.uuid(), pa.array([b"0123456789abcdef", None], pa.binary(16))
    )
    stored = convert(ids, pa.binary())
    assert stored.type == pa.binary() and stored.to_pylist() == [b"0123456789abcdef", None]
    assert convert(stored, pa.uuid()).to_pylist() == ids.to_pylist()
    flags = convert(pa.array([True, False, None]), pa.bool8())
    assert flags.type == pa.bool8() and convert(flags, pa.bool_()).to_pylist() == [
        True,
        False,
        None,
    ]


def test_a_value_that_does_not_fit_is_an_error_not_a_wrapped_value() -> None:
    with pytest.raises(pa.ArrowInvalid):
        convert(pa.array([-1], pa.int16()), pa.uint8())
    with pytest.raises(pa.ArrowInvalid):
        convert(pa.array([b"toolong"], pa.binary()), pa.uuid())
