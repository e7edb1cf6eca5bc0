"""DuckDB filter pushdown: what is translated, what is widened, and — for random filter
trees with parts the server cannot understand — that a filtered memory scan never loses a
row the whole filter keeps (DuckDB re-applies the filter, so extra rows are harmless)."""

from __future__ import annotations

import itertools
import json
import re
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from airport_contracts import Context, ScanOptions
from pyairport import filters
from pyairport.backends.memory import memory_table

from ..filter_json import Node, column, function
from ..filter_json import comparison as cmp
from ..filter_json import conjunction as conj
from ..filter_json import constant as const
from ..filter_json import document as json_filters
from ..filter_json import operator as op

COLUMNS = pa.schema(
    [
        ("rowid", pa.int64()),
        ("id", pa.int64()),
        ("name", pa.string()),
        ("day", pa.date32()),
        ("price", pa.decimal128(15, 4)),
        ("huge", pa.decimal128(38, 10)),
        ("at", pa.timestamp("us", tz="UTC")),  # Spark's TIMESTAMP: an instant
        ("wall", pa.timestamp("us")),  # TIMESTAMP_NTZ: a wall clock
    ]
)
# DuckDB's order need not be the table's
NAMES = ["id", "name", "rowid", "day", "price", "huge", "at", "wall"]


def col(name: str, type_id: str = "BIGINT") -> Node:
    return column(NAMES.index(name), type_id)


def decimal_const(serialized: Any, width: int, scale: int) -> Node:
    """A DECIMAL constant as DuckDB writes it: its unscaled value (a hugeint's halves past
    18 digits), the width and scale in the type."""
    info = {"type": "DECIMAL_TYPE_INFO", "alias": "", "width": width, "scale": scale}
    return const(serialized, "DECIMAL", info)


def unknown() -> Node:
    """A filter the server does not translate: length(name) > 3 (a function call)."""
    return cmp("GREATERTHAN", function("length", col("name", "VARCHAR")), const(3))


def document(*expressions: Node) -> bytes:
    return json_filters(NAMES, *expressions).encode()


def parse(*expressions: dict[str, Any]) -> filters.Predicate | None:
    return filters.parse(document(*expressions), COLUMNS)


def test_comparisons_in_either_order() -> None:
    assert parse(cmp("EQUAL", col("id"), const(42))) == filters.Compare("id", "==", 42)
    assert parse(cmp("LESSTHAN", const(5), col("id"))) == filters.Compare("id", ">", 5)


def test_a_document_is_parsed_once_per_table_shape() -> None:
    """Every endpoint of a scan and its DoGet carry the same filter: the second parse is the
    first's predicate; another column type is parsed again, as its own."""
    text = document(cmp("EQUAL", col("id"), const(42)))
    assert filters.parse(text, COLUMNS) is filters.parse(text, COLUMNS)
    as_text = pa.schema([("rowid", pa.int64()), ("id", pa.string()), ("name", pa.string())])
    assert filters.parse(text, as_text) != filters.parse(text, COLUMNS)


def test_in_between_and_null_tests() -> None:
    assert parse(op("COMPARE_IN", col("id"), const(1), const(2))) == filters.In("id", (1, 2), False)
    assert parse(op("COMPARE_NOT_IN", col("id"), const(1))) == filters.In("id", (1,), True)
    assert parse(op("OPERATOR_IS_NOT_NULL", col("name"))) == filters.IsNull("name", True)
    between = {
        "expression_class": "BOUND_BETWEEN",
        "type": "COMPARE_BETWEEN",
        "alias": "",
        "input": col("id"),
        "lower": const(1),
        "upper": const(9),
        "lower_inclusive": True,
        "upper_inclusive": False,
    }
    assert parse(between) == filters.Between("id", 1, 9, True, False)


def test_unknown_parts_widen_and_never_narrow() -> None:
    known = cmp("EQUAL", col("id"), const(1))
    assert parse(known, unknown()) == filters.Compare("id", "==", 1)  # top-level AND
    assert parse(conj("AND", known, unknown())) == filters.Compare("id", "==", 1)
    assert parse(conj("OR", known, unknown())) is None  # an OR cannot drop a branch
    assert parse(op("OPERATOR_NOT", conj("AND", known, unknown()))) is None  # would narrow
    assert parse(op("OPERATOR_NOT", known)) == filters.Not(filters.Compare("id", "==", 1))


def test_dates_and_decimals_as_duckdb_writes_them() -> None:
    """A DATE is its days since 1970; a DECIMAL its unscaled integer with the type's scale,
    a hugeint's upper and lower 64 bits past 18 digits (as DuckDB 1.4 sends them)."""
    day = col("day", "DATE")
    assert parse(cmp("GREATERTHANOREQUALTO", day, const(8766, "DATE"))) == filters.Compare(
        "day", ">=", date(1994, 1, 1)
    )
    assert parse(cmp("LESSTHAN", day, const(-719162, "DATE"))) == filters.Compare(
        "day", "<", date(1, 1, 1)
    )
    between = {
        "expression_class": "BOUND_BETWEEN",
        "type": "COMPARE_BETWEEN",
        "input": col("price", "DECIMAL"),
        "lower": decimal_const(500, 15, 4),
        "upper": decimal_const(-700, 15, 4),
        "lower_inclusive": True,
        "upper_inclusive": False,
    }
    assert parse(between) == filters.Between(
        "price", Decimal("0.0500"), Decimal("-0.0700"), True, False
    )
    largest = 10**38 - 1
    halves = {"upper": largest >> 64, "lower": largest & (2**64 - 1)}
    negative = {"upper": -1, "lower": 2**64 - 17500000000}  # -1.75
    assert parse(
        op(
            "COMPARE_IN",
            col("huge", "DECIMAL"),
            decimal_const(halves, 38, 10),
            decimal_const(negative, 38, 10),
        )
    ) == filters.In(
        "huge",
        (Decimal("9999999999999999999999999999.9999999999"), Decimal("-1.7500000000")),
        False,
    )


def test_timestamps_as_duckdb_writes_them() -> None:
    """A TIMESTAMP is its wall clock's microseconds since 1970, a TIMESTAMP WITH TIME ZONE its
    instant's (as DuckDB 1.4 sends them; DuckDB casts the constant to the column's type)."""
    at = col("at", "TIMESTAMP WITH TIME ZONE")
    wall = col("wall", "TIMESTAMP")
    assert parse(
        cmp("GREATERTHAN", at, const(1577836800500000, "TIMESTAMP WITH TIME ZONE"))
    ) == filters.Compare("at", ">", datetime(2020, 1, 1, 0, 0, 0, 500000, tzinfo=UTC))
    assert parse(
        op(
            "COMPARE_IN",
            wall,
            const(1704067200123456, "TIMESTAMP"),
            const(-62135596800000000, "TIMESTAMP"),
        )
    ) == filters.In("wall", (datetime(2024, 1, 1, 0, 0, 0, 123456), datetime(1, 1, 1)), False)
    assert parse(cmp("LESSTHAN", wall, const(253402300799999999, "TIMESTAMP"))) == (
        filters.Compare("wall", "<", datetime(9999, 12, 31, 23, 59, 59, 999999))
    )


def test_timestamps_that_do_not_fit_are_left_to_duckdb() -> None:
    at, wall = col("at", "TIMESTAMP WITH TIME ZONE"), col("wall", "TIMESTAMP")
    # DuckDB's infinities (±(2**63 - 1)) and times past Python's
    assert parse(cmp("GREATERTHAN", wall, const(-(2**63) + 1, "TIMESTAMP"))) is None
    assert parse(cmp("LESSTHAN", wall, const(2**63 - 1, "TIMESTAMP"))) is None
    assert parse(cmp("LESSTHAN", wall, const(253402300800000000, "TIMESTAMP"))) is None
    assert parse(cmp("EQUAL", wall, const("2024-01-01", "TIMESTAMP"))) is None
    # an instant against a wall clock and back, nanoseconds, a date against a timestamp
    assert parse(cmp("EQUAL", wall, const(0, "TIMESTAMP WITH TIME ZONE"))) is None
    assert parse(cmp("EQUAL", at, const(0, "TIMESTAMP"))) is None
    assert parse(cmp("EQUAL", wall, const(0, "TIMESTAMP_NS"))) is None
    assert parse(cmp("EQUAL", wall, const(0, "DATE"))) is None
    assert parse(cmp("EQUAL", col("day", "DATE"), const(0, "TIMESTAMP"))) is None
    nanos = pa.schema([("wall", pa.timestamp("ns"))])
    document_ns = json.dumps(
        {
            "filters": [cmp("EQUAL", col("wall", "TIMESTAMP_NS"), const(0, "TIMESTAMP"))],
            "column_binding_names_by_index": NAMES,
        }
    )
    assert filters.parse(document_ns, nanos) is None


def test_likes_as_duckdb_writes_them() -> None:
    """Every form becomes one pattern with `\\` escapes: affix functions' text and `~~`'s
    backslash (a plain character there) escaped, `like_escape`'s own escape rewritten."""
    name = col("name", "VARCHAR")

    def text(value: str) -> dict[str, Any]:
        return const(value, "VARCHAR")

    assert parse(function("prefix", name, text("a%b"))) == filters.Like("name", "a\\%b%")
    assert parse(function("starts_with", name, text("_"))) == filters.Like("name", "\\_%")
    assert parse(function("suffix", name, text("\\"))) == filters.Like("name", "%\\\\")
    assert parse(function("ends_with", name, text("é"))) == filters.Like("name", "%é")
    assert parse(function("contains", name, text(""))) == filters.Like("name", "%%")
    assert parse(function("~~", name, text("a_\\%"))) == filters.Like("name", "a_\\\\%")
    assert parse(function("!~~", name, text("%x"))) == filters.Not(filters.Like("name", "%x"))
    assert parse(function("like_escape", name, text("a!%!!b!c\\%"), text("!"))) == (
        filters.Like("name", "a\\%!bc\\\\%")
    )
    assert parse(function("not_like_escape", name, text("1\\_"), text("\\"))) == (
        filters.Not(filters.Like("name", "1\\_"))
    )
    assert parse(function("like_escape", name, text("a%"), text(""))) == filters.Like("name", "a%")
    # under NOT and OR, exact
    assert parse(op("OPERATOR_NOT", function("contains", name, text("q")))) == filters.Not(
        filters.Like("name", "%q%")
    )
    either = conj("OR", function("prefix", name, text("a")), op("OPERATOR_IS_NULL", name))
    assert parse(either) == filters.Or((filters.Like("name", "a%"), filters.IsNull("name", False)))


def test_likes_that_do_not_fit_are_left_to_duckdb() -> None:
    name = col("name", "VARCHAR")
    assert parse(function("~~*", name, const("A%", "VARCHAR"))) is None  # ILIKE: case folding
    assert parse(function("prefix", col("id"), const("1", "VARCHAR"))) is None  # not a string
    assert parse(function("prefix", name, const(1))) is None
    assert (
        parse(
            function(
                "prefix",
                name,
                {
                    **const("", "VARCHAR"),
                    "value": {"type": {"id": "VARCHAR"}, "is_null": True, "value": None},
                },
            )
        )
        is None
    )
    assert parse(function("prefix", name, col("name", "VARCHAR"))) is None  # column to column
    assert parse(function("prefix", const("a", "VARCHAR"), name)) is None
    assert parse(function("prefix", name, const("a", "VARCHAR"), const("b", "VARCHAR"))) is None
    assert parse(function("~~", name)) is None
    # an escape at the pattern's end (DuckDB matches nothing), an escape of two characters
    assert (
        parse(function("like_escape", name, const("a!", "VARCHAR"), const("!", "VARCHAR"))) is None
    )
    assert (
        parse(function("like_escape", name, const("a", "VARCHAR"), const("!!", "VARCHAR"))) is None
    )
    assert parse(function("regexp_matches", name, const("a", "VARCHAR"))) is None
    assert parse(function("contains", name, const("\ud800", "VARCHAR"))) is None


def test_a_string_no_engine_can_hold_is_left_to_duckdb() -> None:
    """JSON can carry a lone surrogate, which no UTF-8 string holds: the filter is not
    pushed down (it was, and failed the scan)."""
    empty = parse(cmp("EQUAL", col("name", "VARCHAR"), const("", "VARCHAR")))
    assert empty == filters.Compare("name", "==", "")
    assert parse(cmp("EQUAL", col("name", "VARCHAR"), const("\ud800", "VARCHAR"))) is None
    assert (
        parse(
            op(
                "COMPARE_IN",
                col("name", "VARCHAR"),
                const("a", "VARCHAR"),
                const("\udfff", "VARCHAR"),
            )
        )
        is None
    )


def test_dates_and_decimals_that_do_not_fit_are_left_to_duckdb() -> None:
    price, huge, day = col("price", "DECIMAL"), col("huge", "DECIMAL"), col("day", "DATE")
    # DuckDB's infinite dates, and days past Python's
    assert parse(cmp("GREATERTHAN", day, const(2**31 - 1, "DATE"))) is None
    assert parse(cmp("GREATERTHAN", day, const(-(2**31) + 1, "DATE"))) is None
    assert parse(cmp("EQUAL", day, const("2024-01-01", "DATE"))) is None
    # another scale than the column's, wider than its type, or than the column's
    assert parse(cmp("EQUAL", price, decimal_const(5, 15, 2))) is None
    assert parse(cmp("EQUAL", price, decimal_const(10**5, 4, 2))) is None
    assert parse(cmp("EQUAL", price, decimal_const(10**16, 18, 4))) is None
    assert parse(cmp("EQUAL", price, decimal_const(5, 39, 4))) is None
    # a hugeint's halves out of their 64 bits, or not integers
    assert parse(cmp("EQUAL", huge, decimal_const({"upper": 0, "lower": 2**64}, 38, 10))) is None
    assert parse(cmp("EQUAL", huge, decimal_const({"upper": 0, "lower": 1.5}, 38, 10))) is None
    # a date against a decimal, a decimal against an integer column
    assert parse(cmp("EQUAL", price, const(8766, "DATE"))) is None
    assert parse(cmp("EQUAL", col("id"), decimal_const(5, 15, 0))) is None


def test_what_is_never_pushed_down() -> None:
    assert filters.parse(b"not json", COLUMNS) is None
    assert filters.parse(b"", COLUMNS) is None
    assert filters.parse(b'{"filters": 3}', COLUMNS) is None
    no_id = pa.schema([("rowid", pa.int64()), ("name", pa.string())])
    assert filters.parse(document(cmp("EQUAL", col("id"), const(1))), no_id) is None
    # a constant that does not fit its column is left to DuckDB (no backend casts)
    assert parse(cmp("EQUAL", col("id"), const("7", "VARCHAR"))) is None
    assert parse(cmp("EQUAL", col("name", "VARCHAR"), const(7))) is None
    assert parse(cmp("EQUAL", col("id"), const(2**64 - 1, "UBIGINT"))) is None


def test_float_columns_are_left_to_duckdb() -> None:
    """DuckDB sorts NaN above every number; pyarrow compares NaN as false: pushing
    `x > 5` down would lose NaN rows DuckDB keeps."""
    schema = pa.schema([("rowid", pa.int64()), ("x", pa.float64())])
    document = json.dumps(
        {
            "filters": [
                cmp("GREATERTHAN", {**col("id"), "binding": {"column_index": 0}}, const(5))
            ],
            "column_binding_names_by_index": ["x"],
        }
    )
    assert filters.parse(document, schema) is None


def test_absurd_nesting_is_not_pushed_down() -> None:
    not_ = '{"expression_class": "BOUND_OPERATOR", "type": "OPERATOR_NOT", "children": ['
    leaf = json.dumps(cmp("EQUAL", col("id"), const(1)))
    deep = not_ * 5000 + leaf + "]}" * 5000
    text = f'{{"filters": [{deep}], "column_binding_names_by_index": {json.dumps(NAMES)}}}'
    assert filters.parse(text, COLUMNS) is None
    assert parse(cmp("EQUAL", col("id"), col("rowid"))) is None  # column against column


def test_a_filter_past_what_the_engines_take_is_cut_to_it() -> None:
    """DataFusion and pyarrow recurse over a filter's tree and its IN lists, and crashed the
    server's process on 10,000 ANDed comparisons or an IN of 10,000 values: what is pushed
    down holds at most MAX_TERMS terms and MAX_LISTED listed values, nests at most MAX_DEPTH
    deep, and is wider than the filter, never narrower."""
    from pyairport.filters.parser import MAX_DEPTH, MAX_LISTED, MAX_TERMS

    many = [cmp("NOTEQUAL", col("id"), const(-k)) for k in range(10_000)]
    cut = parse(*many)
    assert isinstance(cut, filters.And) and len(cut.children) == MAX_TERMS
    assert cut.children[-1] == filters.Compare("id", "!=", -(MAX_TERMS - 1))
    assert parse(conj("OR", *many[: MAX_TERMS + 1])) is None  # an OR is whole or nothing
    # an IN past the budget: the range of its values
    values = [const(k) for k in range(5, 6 + MAX_LISTED)]
    assert parse(op("COMPARE_IN", col("id"), *values)) == filters.Between(
        "id", 5, 5 + MAX_LISTED, True, True
    )
    assert parse(op("COMPARE_NOT_IN", col("id"), *values)) is None
    listed = op("COMPARE_IN", col("id"), *values[:MAX_LISTED])
    assert isinstance(parse(listed), filters.In)
    # within an OR the range is not the IN: the OR is left to DuckDB
    assert parse(conj("OR", op("COMPARE_IN", col("id"), *values), many[0])) is None
    # two INs share the budget: the second becomes a range, the AND keeps both
    first = filters.In("id", tuple(range(5, 5 + MAX_LISTED)), False)
    both = parse(listed, op("COMPARE_IN", col("id"), *values[:2]))
    assert both == filters.And((first, filters.Between("id", 5, 6, True, True)))
    # nesting: MAX_DEPTH levels are pushed, one more is not
    nested = cmp("EQUAL", col("id"), const(1))
    for level in range(MAX_DEPTH):
        nested = conj("OR" if level % 2 else "AND", nested, cmp("EQUAL", col("id"), const(2)))
    assert parse(nested) is not None
    assert parse(conj("OR", nested, cmp("EQUAL", col("id"), const(3)))) is None
    # the SQL delta-rs parses nests log2(n) deep, not n (its parser refuses 50 levels)
    text = filters.sql_text(cut)
    depth = max(itertools.accumulate(1 if c == "(" else -1 if c == ")" else 0 for c in text))
    assert depth <= 12


def test_spark_is_given_only_the_likes_it_matches_in_linear_time() -> None:
    """Spark matches a LIKE it does not simplify by backtracking, in time the string's length
    to the power of the pattern's `%`s (twelve: over a minute on 40 characters): those are
    left to DuckDB, widened as the parser widens."""
    like, one = filters.Like, filters.Compare("id", "==", 1)
    for pattern in ("ab%", "%ab", "a%b", "%ab%", "a_b%", "_%_", "%", "%%", "a\\%b%", "ab"):
        assert filters.spark_safe(like("name", pattern)) == like("name", pattern), pattern
    for pattern in ("%a%b%", "%a_%", "%a\\%%", "a%b%c", "%a%a%a%a%a%a%a%a%a%a%a%b"):
        assert filters.spark_safe(like("name", pattern)) is None, pattern
    slow = like("name", "%a%b%")
    assert filters.spark_safe(filters.And((slow, one))) == one
    assert filters.spark_safe(filters.Or((slow, one))) is None
    assert filters.spark_safe(filters.Not(slow)) is None
    either = filters.Or((one, like("name", "ab%")))
    assert filters.spark_safe(filters.And((either, filters.And((slow, one))))) == filters.And(
        (either, one)
    )


# --- random filter trees against a reference evaluation --------------------------------------

ROWS = pa.table(
    {
        "id": pa.array([1, 2, 3, None, 5, 6, 7, 8], pa.int64()),
        "name": ["a", "bb", None, "dddd", "eeeee", "f", "gg", "hh\\hh"],
    }
)


def _truth(node: dict[str, Any], row: dict[str, Any]) -> bool | None:
    """SQL three-valued evaluation of the JSON filter (the function is length(name) > 3)."""
    kind = node["type"]
    if kind == "CONJUNCTION_AND":
        values = [_truth(c, row) for c in node["children"]]
        return False if False in values else (None if None in values else True)
    if kind == "CONJUNCTION_OR":
        values = [_truth(c, row) for c in node["children"]]
        return True if True in values else (None if None in values else False)
    if kind == "OPERATOR_NOT":
        inner = _truth(node["children"][0], row)
        return None if inner is None else not inner
    if kind in ("OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL"):
        is_null = row[NAMES[node["children"][0]["binding"]["column_index"]]] is None
        return is_null if kind == "OPERATOR_IS_NULL" else not is_null
    if kind == "BOUND_FUNCTION":  # a LIKE of name, as DuckDB evaluates it
        value, text = row["name"], node["children"][1]["value"]["value"]
        if value is None:
            return None
        return {
            "prefix": value.startswith(text),
            "suffix": value.endswith(text),
            "contains": text in value,
            "~~": _duckdb_like(value, text),
            "!~~": not _duckdb_like(value, text),
        }[node["name"]]
    if node["expression_class"] == "BOUND_COMPARISON":
        left, right = node["left"], node["right"]
        if left["expression_class"] == "BOUND_FUNCTION":
            name = row["name"]
            value: Any = None if name is None else len(name)
        else:
            value = row[NAMES[left["binding"]["column_index"]]]
        constant = right["value"]["value"]
        if value is None:
            return None
        return {
            "COMPARE_EQUAL": value == constant,
            "COMPARE_NOTEQUAL": value != constant,
            "COMPARE_LESSTHAN": value < constant,
            "COMPARE_GREATERTHAN": value > constant,
        }[kind]
    raise AssertionError(kind)


def _duckdb_like(value: str, pattern: str) -> bool:
    """DuckDB's `~~`: `%` any characters, `_` one, no escape character."""
    regex = "".join({"%": ".*", "_": "."}.get(c, re.escape(c)) for c in pattern)
    return re.fullmatch(regex, value, re.DOTALL) is not None


leaves = st.one_of(
    st.builds(
        lambda kind, value: cmp(kind, col("id"), const(value)),
        st.sampled_from(["EQUAL", "NOTEQUAL", "LESSTHAN", "GREATERTHAN"]),
        st.integers(0, 9),
    ),
    st.builds(lambda kind: op(kind, col("name")), st.sampled_from(["OPERATOR_IS_NULL"])),
    st.builds(
        lambda name, text: function(name, col("name", "VARCHAR"), const(text, "VARCHAR")),
        st.sampled_from(["prefix", "suffix", "contains", "~~", "!~~"]),
        st.sampled_from(["", "a", "b", "h", "%", "_", "d%", "%h_", "_b", "\\"]),
    ),
    st.just(unknown()),
)
trees = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.builds(lambda cs: conj("AND", *cs), st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda cs: conj("OR", *cs), st.lists(inner, min_size=2, max_size=3)),
        st.builds(lambda c: op("OPERATOR_NOT", c), inner),
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(trees, min_size=1, max_size=3))
def test_a_filtered_scan_keeps_every_row_the_filter_keeps(tree: list[dict[str, Any]]) -> None:
    table = memory_table("t", ROWS.schema, rows=ROWS)
    scanned = table.scan(Context.background(), ScanOptions(filter=document(*tree))).read_all()
    returned = {r["rowid"] for r in scanned.to_pylist()}
    for row in table.to_table().to_pylist():
        if all(_truth(node, row) is True for node in tree):
            assert row["rowid"] in returned, (row, tree)
    # and when every part was understood, nothing extra comes back either
    if '"length"' not in json.dumps(tree):
        expected = {
            r["rowid"]
            for r in table.to_table().to_pylist()
            if all(_truth(node, r) is True for node in tree)
        }
        assert returned == expected


# --- writing: what a client sends (filters.to_json) -------------------------------------------

dates = st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31))
prices = st.decimals(-(10**11) + 1, 10**11 - 1, places=4)  # DECIMAL(15, 4)
huge_values = st.decimals(-(10**28) + 1, 10**28 - 1, places=10)  # DECIMAL(38, 10): a hugeint
walls = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59))
instants = walls.map(lambda wall: wall.replace(tzinfo=UTC))
# patterns as filters.Like holds them: wildcards, escaped wildcards and backslashes, quotes,
# a line break, a character of two bytes, against SQL_ROWS' names
like_patterns = st.lists(
    st.sampled_from(["a", "A", "b", "z", "t", "ü", "'", '"', "\n", "%", "_", "\\%", "\\_", "\\\\"]),
    max_size=5,
).map("".join)
predicate_leaves = st.one_of(
    st.builds(
        filters.Compare,
        st.sampled_from(["id", "rowid"]),
        st.sampled_from(["==", "!=", "<", ">", "<=", ">="]),
        st.integers(-(2**63), 2**63 - 1),
    ),
    st.builds(filters.Compare, st.just("name"), st.sampled_from(["==", "<"]), st.text()),
    st.builds(
        filters.In,
        st.just("id"),
        st.lists(st.integers(-5, 5), min_size=1, max_size=3).map(tuple),
        st.booleans(),
    ),
    st.builds(filters.IsNull, st.sampled_from(["id", "name"]), st.booleans()),
    st.builds(
        filters.Between,
        st.just("id"),
        st.integers(-(2**63), 2**63 - 1),
        st.integers(-(2**63), 2**63 - 1),
        st.booleans(),
        st.booleans(),
    ),
    st.builds(filters.Compare, st.just("day"), st.sampled_from(["==", "<", ">="]), dates),
    st.builds(filters.Between, st.just("day"), dates, dates, st.booleans(), st.booleans()),
    st.builds(filters.Compare, st.just("price"), st.sampled_from(["==", "!=", ">"]), prices),
    st.builds(
        filters.In,
        st.just("price"),
        st.lists(prices, min_size=1, max_size=3).map(tuple),
        st.booleans(),
    ),
    st.builds(filters.Compare, st.just("huge"), st.sampled_from(["<=", "=="]), huge_values),
    st.builds(filters.Compare, st.just("at"), st.sampled_from(["<", ">=", "!="]), instants),
    st.builds(filters.Between, st.just("wall"), walls, walls, st.booleans(), st.booleans()),
    st.builds(
        filters.In,
        st.just("at"),
        st.lists(instants, min_size=1, max_size=3).map(tuple),
        st.booleans(),
    ),
    st.builds(filters.Compare, st.just("wall"), st.sampled_from(["==", ">"]), walls),
    st.builds(filters.Like, st.just("name"), like_patterns),
)
predicates = st.recursive(
    predicate_leaves,
    lambda inner: st.one_of(
        st.builds(filters.And, st.lists(inner, min_size=2, max_size=3).map(tuple)),
        st.builds(filters.Or, st.lists(inner, min_size=2, max_size=3).map(tuple)),
        st.builds(filters.Not, inner),
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(predicates)
def test_what_a_client_writes_the_server_reads_back(predicate: filters.Predicate) -> None:
    written = filters.to_json(predicate, COLUMNS)
    assert filters.parse(written, COLUMNS) == predicate


def test_a_filter_on_a_column_the_json_cannot_carry_is_refused() -> None:
    schema = pa.schema([("at", pa.timestamp("ns")), ("id", pa.int64())])
    with pytest.raises(ValueError, match="cannot filter column 'at' of type timestamp"):
        filters.to_json(filters.IsNull("at", False), schema)
    with pytest.raises(ValueError, match="the table has no such column"):
        filters.to_json(filters.IsNull("nope", False), schema)
    with pytest.raises(ValueError, match="cannot match column 'id': it is not a string"):
        filters.to_json(filters.Like("id", "1%"), schema)
    for pattern in ("a\\", "\\a", "100\\%\\"):  # an escape of nothing, or of a plain "a"
        with pytest.raises(ValueError, match="not a LIKE pattern"):
            filters.to_json(filters.Like("name", pattern), COLUMNS)


# --- the SQL delta-rs evaluates ----------------------------------------------------------------

SQL_ROWS = pa.table(
    {
        "rowid": pa.array(range(10), pa.int64()),
        "id": pa.array([1, -2, 3, None, 2**63 - 1, -(2**63), 0, 8, 5, -5], pa.int64()),
        "name": ["a", "it's", None, "", "ü", '"q"', "a\\b", "zz", "A", "%_"],
        "day": pa.array(
            [date(1970, 1, 1), date(1, 1, 1), date(9999, 12, 31), None, date(1969, 12, 31)]
            + [date(1994, 1, 1), date(2000, 2, 29), date(1994, 1, 2), date(2024, 6, 1), None],
            pa.date32(),
        ),
        "price": pa.array(
            [Decimal(v) if v else None for v in ["0.0500", "-0.0700", "0.0000", None, "24.0000"]]
            + [
                Decimal(v) for v in ["99999999999.9999", "-99999999999.9999", "0.0001", "7", "0.05"]
            ],
            pa.decimal128(15, 4),
        ),
        "huge": pa.array(
            [Decimal("9999999999999999999999999999.9999999999"), None, Decimal("-1.75")]
            + [Decimal("-9999999999999999999999999999.9999999999"), Decimal("0")] * 2
            + [Decimal("1e-10"), Decimal("123456789012345678.5")]
            + [None],
            pa.decimal128(38, 10),
        ),
        "at": pa.array(
            [datetime(1970, 1, 1, tzinfo=UTC), datetime(1, 1, 1, tzinfo=UTC), None]
            + [datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)]
            + [
                datetime(2024, 2, 29, 12, 0, 0, 5, tzinfo=UTC),
                datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            ]
            + [datetime(1500, 6, 1, 12, tzinfo=UTC), datetime(2024, 2, 29, 12, 0, 0, 6, tzinfo=UTC)]
            + [datetime(2262, 4, 12, tzinfo=UTC), None],
            pa.timestamp("us", tz="UTC"),
        ),
        "wall": pa.array(
            [datetime(2024, 2, 29, 12), None, datetime(1, 1, 1, 0, 0, 0, 1)]
            + [datetime(9999, 12, 31, 23, 59, 59, 999999), datetime(1970, 1, 1)]
            + [datetime(1677, 9, 21), datetime(2024, 2, 29, 12, 0, 0, 1), None]
            + [datetime(1969, 12, 31, 23, 59, 59), datetime(3000, 1, 1)],
            pa.timestamp("us"),
        ),
    }
)


@pytest.fixture(scope="module")
def delta_rows(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from deltalake import DeltaTable, write_deltalake

    folder = tmp_path_factory.mktemp("sql-rows")
    write_deltalake(str(folder), SQL_ROWS)
    return DeltaTable(str(folder))


def _sql_truth(predicate: filters.Predicate, row: dict[str, Any]) -> bool | None:
    """SQL's three-valued evaluation of a predicate on one row (pyarrow's `is_in` answers
    false for a null, not null, so pyarrow is no reference here)."""
    if isinstance(predicate, filters.And | filters.Or):
        values = [_sql_truth(c, row) for c in predicate.children]
        decisive = isinstance(predicate, filters.Or)
        if decisive in values:
            return decisive
        return None if None in values else not decisive
    if isinstance(predicate, filters.Not):
        inner = _sql_truth(predicate.child, row)
        return None if inner is None else not inner
    value = row[predicate.column]
    if isinstance(predicate, filters.IsNull):
        return (value is None) != predicate.negated
    if value is None:
        return None
    if isinstance(predicate, filters.Like):
        return _like(value, predicate.pattern)
    if isinstance(predicate, filters.In):
        return (value in predicate.values) != predicate.negated
    if isinstance(predicate, filters.Between):
        low = value >= predicate.lower if predicate.lower_inclusive else value > predicate.lower
        high = value <= predicate.upper if predicate.upper_inclusive else value < predicate.upper
        return low and high
    assert isinstance(predicate, filters.Compare)
    return bool(
        {
            "==": value == predicate.value,
            "!=": value != predicate.value,
            "<": value < predicate.value,
            ">": value > predicate.value,
            "<=": value <= predicate.value,
            ">=": value >= predicate.value,
        }[predicate.op]
    )


def _like(value: str, pattern: str) -> bool:
    """SQL's LIKE with `\\` as its escape: `%` any characters, `_` one."""
    regex, characters = [], iter(pattern)
    for c in characters:
        if c == "\\":
            regex.append(re.escape(next(characters)))
        else:
            regex.append({"%": ".*", "_": "."}.get(c, re.escape(c)))
    return re.fullmatch("".join(regex), value, re.DOTALL) is not None


@settings(max_examples=200, deadline=None)
@given(predicates)
@example(filters.Compare("at", "<", datetime(1, 1, 1, 0, 0, 0, 1, tzinfo=UTC)))
def test_pyarrow_keeps_every_row_the_filter_keeps(predicate: filters.Predicate) -> None:
    """filters.arrow_expression (the memory backend; a Delta table's parts read by pyarrow)
    on the same rows keeps every row SQL keeps: instants against a zoned column, wall clocks
    against one without (pyarrow's `is_in` is false for a null where SQL says null, so a NOT
    over it may keep more, which DuckDB filters again)."""
    kept = SQL_ROWS.filter(filters.arrow_expression(predicate)).column("rowid").to_pylist()
    expected = [r["rowid"] for r in SQL_ROWS.to_pylist() if _sql_truth(predicate, r) is True]
    assert set(expected) <= set(kept)


@pytest.mark.spark  # delta-rs comes with the [spark] extra
@settings(max_examples=200, deadline=None)
@given(predicates)
# DataFusion's simplifier once took `id NOT IN (0) OR id NOT IN (1)` for true on a NULL id
# (it joins the lists, and NOT IN of nothing is true): an IN is written so it cannot
@example(filters.Or((filters.In("id", (0,), True), filters.In("id", (1,), True))))
@example(filters.Or((filters.In("id", (0, 1), True), filters.In("id", (-1, 2), True))))
@example(filters.Or((filters.Like("name", "a"), filters.Like("name", "a\\\\b"))))
@example(filters.Not(filters.Like("name", "\\%\\_")))
@example(filters.And((filters.Like("name", "_"), filters.Like("name", "%'%"))))
def test_the_sql_delta_rs_runs_keeps_exactly_the_rows_the_filter_keeps(
    delta_rows: Any, predicate: filters.Predicate
) -> None:
    """filters.sql_text, as delta-rs's DataFusion evaluates it, against SQL's evaluation of
    the same predicate row by row: the same rows, quotes, NULLs and the 64-bit edges included."""
    kept = pa.RecordBatchReader.from_stream(
        delta_rows.scan(columns=["rowid"], predicate=filters.sql_text(predicate))
    ).read_all()
    expected = [r["rowid"] for r in SQL_ROWS.to_pylist() if _sql_truth(predicate, r) is True]
    assert sorted(kept.column("rowid").to_pylist()) == expected


@pytest.fixture(scope="module")
def spark_rows(spark_backend: Any) -> Any:
    return spark_backend.spark.createDataFrame(SQL_ROWS)


@pytest.mark.spark
@settings(max_examples=40, deadline=None)
@given(predicates)
@example(filters.Between("price", Decimal("-0.0700"), Decimal("0.0500"), True, False))
@example(filters.In("day", (date(1, 1, 1), date(9999, 12, 31)), negated=True))
@example(filters.Compare("huge", "<=", Decimal("-1.7500000000")))
@example(filters.Compare("at", ">=", datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)))
@example(filters.Between("wall", datetime(1, 1, 1), datetime(1970, 1, 1), False, True))
@example(filters.Or((filters.Like("name", "a"), filters.Like("name", "a\\\\b"))))
@example(filters.Not(filters.Like("name", "\\%\\_")))
@example(filters.And((filters.Like("name", "_"), filters.Like("name", "%'%"))))
def test_spark_keeps_exactly_the_rows_the_filter_keeps(
    spark_rows: Any, predicate: filters.Predicate
) -> None:
    """filters.spark_column (scans Spark serves: a timestamp time point, a remote lake) on
    the same rows: dates, timestamps and decimals compared as Spark's own types, exactly."""
    kept = spark_rows.where(filters.spark_column(predicate, spark_rows)).select("rowid")
    expected = [r["rowid"] for r in SQL_ROWS.to_pylist() if _sql_truth(predicate, r) is True]
    assert sorted(r["rowid"] for r in kept.collect()) == expected
