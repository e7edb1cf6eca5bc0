"""arrow_convert: the conversions pyarrow has no cast for, exact both ways."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pyairport.backends.arrow_convert import (
    INTERVAL_PARTS,
    convert,
    digits_fit,
    misplaced_null,
    relaxed,
)

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


def test_a_decimal128_narrows_to_the_decimal64_of_its_values_exactly() -> None:
    """Every scan of a Delta DECIMAL(p <= 18) narrows it (spark/stored_types.served_type):
    exact at the type's ends, with nulls and offsets, chunk by chunk, and back."""
    top = decimal.Decimal("9" * 16 + ".99")
    wide = pa.array([top, None, -top, decimal.Decimal("-0.01"), 0], pa.decimal128(18, 2))
    for column in (wide, wide.slice(1), wide.slice(2, 2), pa.chunked_array([wide, wide[3:]])):
        narrow = convert(column, pa.decimal64(18, 2))
        assert narrow.type == pa.decimal64(18, 2)
        assert narrow.to_pylist() == column.to_pylist()
        assert convert(narrow, pa.decimal128(18, 2)).to_pylist() == column.to_pylist()


def test_a_null_slot_holding_anything_still_narrows_to_a_null() -> None:
    """A writer may leave any bytes under a null (here a value past 64 bits): still a null."""
    values = np.array([5, 0, 2**70 % 2**64, 7], dtype=np.int64)  # slot 1's high word: 2**6
    words = np.zeros(8, dtype=np.int64)
    words[0::2], words[3] = values, 64
    validity = pa.array([True, False, True, True]).buffers()[1]
    column = pa.Array.from_buffers(
        pa.decimal128(18, 0), 4, [validity, pa.py_buffer(words)], null_count=1
    )
    assert convert(column, pa.decimal64(18, 0)).to_pylist() == column.to_pylist()


def test_a_decimal128_value_past_the_decimal64_is_refused_not_cut() -> None:
    """A file may hold a value its DECIMAL(18)'s precision does not (2**64 + 5): its high
    word is more than a sign, and the cast refuses it."""
    words = np.array([5, 1], dtype=np.int64)
    column = pa.Array.from_buffers(pa.decimal128(18, 0), 1, [None, pa.py_buffer(words)])
    with pytest.raises(pa.ArrowInvalid):
        convert(column, pa.decimal64(18, 0))
    with pytest.raises(pa.ArrowInvalid):
        convert(pa.array([decimal.Decimal(2**64 + 5)], pa.decimal128(20, 0)), pa.decimal64(18, 0))


_EDGES = (0, 1, -1, 10**15 - 1, 10**15, -(10**15), 10**18 - 1, 10**18, -(10**18) + 1)
_PAST_64_BITS = (2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 2**64 + 5, -(2**64), 2**70)


@pytest.mark.parametrize("precision", [1, 9, 15, 18])
@pytest.mark.parametrize("beside", [0, 5, -5])
def test_narrowing_keeps_or_refuses_exactly_what_pyarrows_cast_does(
    precision: int, beside: int
) -> None:
    """The narrowing reads the words itself (faster than pyarrow's cast, value by value): at
    every edge of the precision and of 64 bits, beside a value of either sign or zero, it
    gives what the cast gives or refuses what the cast refuses (a value within 64 bits but
    past the precision too)."""
    for value in _EDGES + _PAST_64_BITS:
        values = [decimal.Decimal(value), decimal.Decimal(beside)]
        wide = pa.array(values, pa.decimal128(38, 0)).cast(pa.decimal128(precision, 0), safe=False)
        to = pa.decimal64(precision, 0)
        try:
            expected: object = pc.cast(wide, to).to_pylist()
        except pa.ArrowInvalid:
            expected = pa.ArrowInvalid
        try:
            got: object = convert(wide, to).to_pylist()
        except pa.ArrowInvalid:
            got = pa.ArrowInvalid
        assert got == expected, value


def _decimal64(values: list[int], precision: int, valid: list[bool] | None = None) -> pa.Array:
    """A decimal64 column of these integers as they are, as another engine's cast leaves it."""
    validity = None if valid is None else pa.array(valid).buffers()[1]
    nulls = 0 if valid is None else valid.count(False)
    data = pa.py_buffer(np.array(values, dtype=np.int64))
    return pa.Array.from_buffers(
        pa.decimal64(precision, 0), len(values), [validity, data], null_count=nulls
    )


@pytest.mark.parametrize("precision", [1, 9, 15, 18])
@pytest.mark.parametrize("beside", [0, 5, -5])
def test_a_decimal64_fits_its_digits_where_pyarrows_cast_keeps_it(
    precision: int, beside: int
) -> None:
    """DataFusion's cast to decimal64 (spark/direct.py) keeps a value past the precision:
    digits_fit accepts exactly what pyarrow's cast from the decimal128 keeps, at every edge."""
    for value in _EDGES + (2**63 - 1, -(2**63)):
        wide = pa.array([decimal.Decimal(value), decimal.Decimal(beside)], pa.decimal128(38, 0))
        try:
            pc.cast(wide.cast(pa.decimal128(precision, 0), safe=False), pa.decimal64(precision, 0))
            kept = True
        except pa.ArrowInvalid:
            kept = False
        assert digits_fit(_decimal64([value, beside], precision)) is kept, value


def test_a_wide_value_under_a_null_or_outside_the_slice_fits() -> None:
    """Only the values a column shows count: a null slot's bytes and a slice's neighbours
    are anything."""
    wide = 10**18
    assert not digits_fit(_decimal64([1, wide, 2], 18))
    assert digits_fit(_decimal64([1, wide, 2], 18, [True, False, True]))
    assert not digits_fit(_decimal64([1, wide, -wide], 18, [True, False, True]))
    assert digits_fit(_decimal64([1, wide, 2, 3], 18).slice(2))
    assert not digits_fit(_decimal64([1, wide, 2, 3], 18).slice(1, 2))
    assert digits_fit(_decimal64([wide], 18, [False]))
    assert digits_fit(_decimal64([], 18))


TIGHT = pa.struct(
    [
        pa.field("a", pa.int64(), nullable=False),
        pa.field("s", pa.struct([pa.field("z", pa.string(), nullable=False)]), nullable=False),
        pa.field("b", pa.string()),
    ]
)


def test_a_struct_whose_fields_are_not_null_takes_what_duckdb_sends_exactly() -> None:
    """DuckDB's struct fields are always nullable, and a NULL struct's fields are null too:
    Arrow's cast refuses both, though no value is lost. Converted to the table's type, null
    parents stay null, their fields hold a placeholder (Parquet's writers refuse a null in a
    NOT NULL field even there), and the values are the ones sent, sliced or not."""
    sent = pa.array(
        [None, {"a": 1, "s": {"z": "q"}, "b": None}, {"a": 2, "s": {"z": ""}, "b": "x"}],
        type=pa.struct([pa.field("a", pa.int32()), *list(relaxed(TIGHT))[1:]]),  # widened too
    )
    for start in range(3):
        part = sent.slice(start)
        stored = convert(part, TIGHT)
        stored.validate(full=True)
        assert stored.type == TIGHT
        assert stored.to_pylist() == part.to_pylist()
        assert misplaced_null(stored, TIGHT, "st") is None
        assert stored.field("a").null_count == 0  # what Parquet's writer checks
    assert relaxed(TIGHT).field("s").type.field("z").nullable


def test_a_null_in_a_not_null_field_under_a_value_is_found_by_its_path() -> None:
    def sent(rows: list[object], data_type: pa.DataType) -> pa.Array:
        return convert(pa.array(rows, type=relaxed(data_type)), data_type)

    assert misplaced_null(sent([{"a": None, "s": {"z": "q"}}], TIGHT), TIGHT, "st") == "st.a"
    assert misplaced_null(sent([{"a": 1, "s": {"z": None}}], TIGHT), TIGHT, "st") == "st.s.z"
    assert misplaced_null(sent([{"a": 1, "s": None}], TIGHT), TIGHT, "st") == "st.s"
    elements = pa.list_(pa.field("item", pa.int64(), nullable=False))
    assert misplaced_null(sent([[1, None]], elements), elements, "xs") == "xs[]"
    assert misplaced_null(sent([None, [], [2]], elements), elements, "xs") is None
    values = pa.map_(pa.string(), pa.field("value", pa.int64(), nullable=False))
    maps = sent([[("k", 1)], None, [("j", None)]], values)
    assert misplaced_null(maps, values, "m") == "m{}"
    assert misplaced_null(maps.slice(0, 2), values, "m") is None
    deep = pa.list_(pa.field("item", TIGHT, nullable=False))
    assert misplaced_null(sent([[{"a": None, "s": {"z": "q"}}]], deep), deep, "l") == "l[].a"
