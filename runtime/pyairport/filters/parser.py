"""DuckDB's `json_filters` read into the predicate tree (pyairport.filters says what is
translated and why the rest is dropped)."""

from __future__ import annotations

import functools
import json
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa

from . import constants, patterns
from .model import And, Between, Compare, In, IsNull, Like, Not, Or, Predicate

# DuckDB logical type ids whose JSON constants are plain JSON scalars with the same meaning.
SCALAR_TYPES = frozenset(
    {
        "BOOLEAN",
        "TINYINT",
        "SMALLINT",
        "INTEGER",
        "BIGINT",
        "UTINYINT",
        "USMALLINT",
        "UINTEGER",
        "UBIGINT",
        "FLOAT",
        "DOUBLE",
        "VARCHAR",
    }
)
COMPARISONS = {
    "COMPARE_EQUAL": "==",
    "COMPARE_NOTEQUAL": "!=",
    "COMPARE_LESSTHAN": "<",
    "COMPARE_GREATERTHAN": ">",
    "COMPARE_LESSTHANOREQUALTO": "<=",
    "COMPARE_GREATERTHANOREQUALTO": ">=",
}
"""DuckDB's comparison expression types, by the operator they compare with."""
AFFIXES = {
    "prefix": "{}%",
    "starts_with": "{}%",
    "suffix": "%{}",
    "ends_with": "%{}",
    "contains": "%{}%",
}
"""DuckDB's string functions that are a LIKE of plain text (DuckDB makes them of `LIKE 'ab%'`,
`'%ab'` and `'%ab%'`), by the pattern they are."""
LIKES = {"~~": False, "!~~": True, "like_escape": False, "not_like_escape": True}
"""DuckDB's LIKE functions (its NOT LIKE are their own functions), by whether they negate; the
`escape` ones take the escape character as a third argument."""
_FLIPPED = {"==": "==", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
MAX_TERMS = 256
"""The most terms (comparisons, INs, LIKEs, IS NULLs) a pushed-down predicate holds, and
MAX_LISTED the most values its INs list together. The engines that run a predicate recurse
over its tree and its IN lists: measured with delta-rs 1.6 and pyarrow 26, an IN of 10,000
integers crashed the process (a stack overflow in DataFusion), and so did 10,000 ANDed
comparisons in pyarrow; DataFusion plans 256 ANDed comparisons in 0.07 s, 1,024 in 0.85 s.
An AND keeps its children until the budget is spent and leaves the rest to DuckDB; an IN
past it is kept as the range of its values."""
MAX_LISTED = 2_048
MAX_DEPTH = 8
"""The most ANDs, ORs and NOTs a pushed-down predicate nests (DuckDB's own nest a few): one
nested deeper is left to DuckDB."""


class _Unsupported(Exception):
    """An expression this module does not translate."""


def parse(data: bytes | str | None, schema: pa.Schema) -> Predicate | None:
    """The widest-safe predicate for DuckDB's filter JSON over a table with this schema, or
    None when nothing can be pushed down. A scan's filter is parsed once: its endpoints and
    each of their DoGets carry the same document, whose predicate (immutable) is kept."""
    if not data:
        return None
    columns = tuple((f.name, f.type) for f in schema)
    if len(data) > _KEPT_DOCUMENT_BYTES:  # a long IN list: not worth keeping
        return _read(data, columns)
    return _kept(data, columns)


_KEPT_DOCUMENT_BYTES = 64 * 1024


def _read(data: bytes | str, columns: tuple[tuple[str, pa.DataType], ...]) -> Predicate | None:
    try:
        document = json.loads(data)
        names = document["column_binding_names_by_index"]
        filters = document["filters"]
        if not isinstance(names, list) or not isinstance(filters, list):
            return None
        reader = _Reader(names, dict(columns))
        predicate, _ = reader.conjunction(filters, 0)
        return predicate
    except (ValueError, TypeError, KeyError, RecursionError):  # RecursionError: absurd nesting
        return None


_kept = functools.lru_cache(maxsize=256)(_read)


class _Reader:
    def __init__(self, names: list[Any], columns: dict[str, pa.DataType]) -> None:
        self.names = names
        self.columns = columns
        self.terms = 0  # of MAX_TERMS, spent by the terms read so far
        self.listed = 0  # of MAX_LISTED, by the IN lists kept so far

    def conjunction(self, children: list[Any], depth: int) -> tuple[Predicate | None, bool]:
        """AND of children: the translatable ones (exact only if all were)."""
        kept, exact = [], True
        for child in children:
            try:
                predicate, child_exact = self.expression(child, depth)
            except (_Unsupported, KeyError, TypeError, ValueError, IndexError):
                exact = False
                continue
            if predicate is None:
                exact = False
                continue
            kept.append(predicate)
            exact = exact and child_exact
        if not kept:
            return None, False
        return (kept[0] if len(kept) == 1 else And(tuple(kept))), exact

    def expression(self, node: dict[str, Any], depth: int) -> tuple[Predicate | None, bool]:
        kind, kind_type = node["expression_class"], node["type"]
        if kind == "BOUND_CONJUNCTION" and kind_type == "CONJUNCTION_AND":
            return self.conjunction(node["children"], self.nested(depth))
        if kind == "BOUND_CONJUNCTION" and kind_type == "CONJUNCTION_OR":
            inner = self.nested(depth)
            children = [self.exact(child, inner) for child in node["children"]]
            return Or(tuple(children)), True
        self.spend(1)
        if kind == "BOUND_COMPARISON" and kind_type in COMPARISONS:
            return self.comparison(COMPARISONS[kind_type], node["left"], node["right"]), True
        if kind == "BOUND_BETWEEN":
            column = self.column(node["input"])
            return (
                Between(
                    column,
                    self.constant(node["lower"], column),
                    self.constant(node["upper"], column),
                    bool(node["lower_inclusive"]),
                    bool(node["upper_inclusive"]),
                ),
                True,
            )
        if kind == "BOUND_FUNCTION":
            return self.function(node["name"], node["children"]), True
        if kind == "BOUND_OPERATOR":
            children = node["children"]
            if kind_type in ("OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL") and len(children) == 1:
                return IsNull(self.column(children[0]), kind_type == "OPERATOR_IS_NOT_NULL"), True
            if kind_type in ("COMPARE_IN", "COMPARE_NOT_IN") and len(children) >= 2:
                return self.in_list(children, kind_type == "COMPARE_NOT_IN")
            if kind_type == "OPERATOR_NOT" and len(children) == 1:
                return Not(self.exact(children[0], self.nested(depth))), True
        raise _Unsupported(kind_type)

    def in_list(self, children: list[Any], negated: bool) -> tuple[Predicate, bool]:
        """column [NOT] IN (values); past MAX_LISTED, an IN as the range of its values (wider,
        so inexact), a NOT IN left to DuckDB."""
        column = self.column(children[0])
        values = [self.constant(child, column) for child in children[1:]]
        if self.listed + len(values) <= MAX_LISTED:
            self.listed += len(values)
            return In(column, tuple(values), negated), True
        if negated:
            raise _Unsupported("NOT IN too long")
        return Between(column, min(values), max(values), True, True), False

    def exact(self, node: dict[str, Any], depth: int) -> Predicate:
        """A translation that dropped nothing (required under OR and NOT)."""
        predicate, exact = self.expression(node, depth)
        if predicate is None or not exact:
            raise _Unsupported("inexact")
        return predicate

    def spend(self, terms: int) -> None:
        self.terms += terms
        if self.terms > MAX_TERMS:
            raise _Unsupported("too many terms")

    @staticmethod
    def nested(depth: int) -> int:
        if depth >= MAX_DEPTH:
            raise _Unsupported("nested too deep")
        return depth + 1

    def comparison(self, op: str, left: dict[str, Any], right: dict[str, Any]) -> Predicate:
        if left["expression_class"] == "BOUND_COLUMN_REF":
            column = self.column(left)
            return Compare(column, op, self.constant(right, column))
        column = self.column(right)
        return Compare(column, _FLIPPED[op], self.constant(left, column))

    def function(self, name: Any, children: list[Any]) -> Predicate:
        """A LIKE, however DuckDB wrote it, of a string column and VARCHAR constants."""
        if name in AFFIXES and len(children) == 2:
            column = self.string_column(children[0])
            return Like(column, AFFIXES[name].format(patterns.literal(self.text(children[1]))))
        if name in LIKES and len(children) == (3 if name.endswith("escape") else 2):
            column = self.string_column(children[0])
            escape = self.text(children[2]) if len(children) == 3 else ""
            like = Like(column, patterns.from_duckdb(self.text(children[1]), escape))
            return Not(like) if LIKES[name] else like
        raise _Unsupported("function")

    def string_column(self, node: dict[str, Any]) -> str:
        column = self.column(node)
        if not _is_string(self.columns[column]):
            raise _Unsupported("not a string column")
        return column

    def text(self, node: dict[str, Any]) -> str:
        """A VARCHAR constant's text."""
        if node["expression_class"] != "BOUND_CONSTANT":
            raise _Unsupported(node["expression_class"])
        value = node["value"]
        text = value["value"]
        if value["type"]["id"] != "VARCHAR" or value.get("is_null"):
            raise _Unsupported("text")
        if not isinstance(text, str) or not _utf8(text):
            raise _Unsupported("text")
        return text

    def column(self, node: dict[str, Any]) -> str:
        if node["expression_class"] != "BOUND_COLUMN_REF":
            raise _Unsupported(node["expression_class"])
        index = node["binding"]["column_index"]
        if not isinstance(index, int) or not 0 <= index < len(self.names):
            raise _Unsupported("binding")
        name = self.names[index]
        if name not in self.columns:
            raise _Unsupported("column")
        return str(name)

    def constant(self, node: dict[str, Any], column: str) -> Any:
        """A constant compared with column, when its value fits the column's type."""
        if node["expression_class"] != "BOUND_CONSTANT":
            raise _Unsupported(node["expression_class"])
        value = node["value"]
        type_id = value["type"]["id"]
        if value.get("is_null"):
            raise _Unsupported("constant")
        if type_id in SCALAR_TYPES:
            scalar = value["value"]
        elif type_id == "DATE":
            scalar = constants.date_value(value["value"])
        elif type_id in (constants.TIMESTAMP, constants.TIMESTAMP_TZ):
            scalar = constants.timestamp_value(value["value"], type_id == constants.TIMESTAMP_TZ)
        elif type_id == "DECIMAL":
            scalar = constants.decimal_value(value["value"], value["type"]["type_info"])
        else:
            raise _Unsupported("constant")
        if not _fits(scalar, self.columns[column]):
            raise _Unsupported("constant type")
        return scalar


def _fits(value: Any, column: pa.DataType) -> bool:
    if isinstance(value, bool):
        return bool(pa.types.is_boolean(column))
    if isinstance(value, int):
        return bool(pa.types.is_integer(column)) and -(2**63) <= value < 2**63
    if isinstance(value, str):
        return _is_string(column) and _utf8(value)
    if isinstance(value, datetime):  # before date: a datetime is a date too
        # microseconds, as DuckDB's TIMESTAMP and Delta's; an instant only against a zoned
        # column, a wall clock only against one without a zone (DuckDB casts the constant)
        return bool(
            pa.types.is_timestamp(column)
            and column.unit == "us"
            and (column.tz is None) == (value.tzinfo is None)
        )
    if isinstance(value, date):
        return bool(pa.types.is_date32(column))
    if isinstance(value, Decimal):  # DuckDB casts the constant to the column's type
        return bool(
            pa.types.is_decimal128(column)  # as DuckDB reads DECIMAL; other widths: DuckDB filters
            and constants.scale_of(value) == column.scale
            and constants.digits_of(value) <= column.precision
        )
    return False  # floats: see the module docstring


def _is_string(column: pa.DataType) -> bool:
    return bool(pa.types.is_string(column) or pa.types.is_large_string(column))


def _utf8(text: str) -> bool:
    """Whether UTF-8 can hold text: JSON can carry a lone surrogate, which no engine can
    compare (a filter with one is left to DuckDB)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True
