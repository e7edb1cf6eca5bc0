"""DuckDB's filter pushdown (the `json_filters` of an `endpoints` request, handed to a scan as
ScanOptions.filter) turned into predicates a backend can evaluate: pyarrow expressions for
the memory backend, Spark columns for Spark, SQL text for delta-rs (DataFusion).

DuckDB applies its filters again to whatever a scan returns, so a scan may return more rows
than the filter allows, never fewer. Hence the rule: translate what is understood, widen
what is not. In an AND an unknown child is dropped (the result is wider); an OR or a NOT is
kept only when everything under it was translated exactly, because dropping part of an OR
would widen and dropping part of something under NOT would narrow. Malformed JSON gives no
predicate at all: the scan returns every row and DuckDB filters.

The JSON is DuckDB's serialization of bound expressions: {"filters": [...],
"column_binding_names_by_index": [...]}, each filter with "expression_class" and "type".
Only comparisons, IN / NOT IN, BETWEEN, IS [NOT] NULL, AND, OR and NOT over plain columns
and constants of boolean, integer and VARCHAR types are translated, and a constant only where
it matches its column's type (so no backend has to cast, which Spark's ANSI mode would turn
into a runtime error). Floating-point columns are never filtered: DuckDB orders NaN above
every number and pyarrow's comparisons are false for NaN, so a pushed-down `x > 5` would
lose the NaN rows DuckDB keeps.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

# DuckDB logical type ids whose JSON constants are plain JSON scalars with the same meaning.
_SCALAR_TYPES = frozenset(
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
_COMPARISONS = {
    "COMPARE_EQUAL": "==",
    "COMPARE_NOTEQUAL": "!=",
    "COMPARE_LESSTHAN": "<",
    "COMPARE_GREATERTHAN": ">",
    "COMPARE_LESSTHANOREQUALTO": "<=",
    "COMPARE_GREATERTHANOREQUALTO": ">=",
}
_FLIPPED = {"==": "==", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}


# --- the predicate tree ---------------------------------------------------------------------


@dataclass(frozen=True)
class Compare:
    column: str
    op: str  # one of _OPERATORS
    value: Any


@dataclass(frozen=True)
class In:
    column: str
    values: tuple[Any, ...]
    negated: bool


@dataclass(frozen=True)
class IsNull:
    column: str
    negated: bool


@dataclass(frozen=True)
class Between:
    column: str
    lower: Any
    upper: Any
    lower_inclusive: bool
    upper_inclusive: bool


@dataclass(frozen=True)
class And:
    children: tuple[Predicate, ...]


@dataclass(frozen=True)
class Or:
    children: tuple[Predicate, ...]


@dataclass(frozen=True)
class Not:
    child: Predicate


Predicate = Compare | In | IsNull | Between | And | Or | Not


class _Unsupported(Exception):
    """An expression this module does not translate."""


# --- parsing --------------------------------------------------------------------------------


def parse(data: bytes | str | None, schema: pa.Schema) -> Predicate | None:
    """The widest-safe predicate for DuckDB's filter JSON over a table with this schema, or
    None when nothing can be pushed down."""
    if not data:
        return None
    try:
        document = json.loads(data)
        names = document["column_binding_names_by_index"]
        filters = document["filters"]
        if not isinstance(names, list) or not isinstance(filters, list):
            return None
        reader = _Reader(names, {f.name: f.type for f in schema})
        predicate, _ = reader.conjunction(filters)
        return predicate
    except (ValueError, TypeError, KeyError, RecursionError):  # RecursionError: absurd nesting
        return None


class _Reader:
    def __init__(self, names: list[Any], columns: dict[str, pa.DataType]) -> None:
        self.names = names
        self.columns = columns

    def conjunction(self, children: list[Any]) -> tuple[Predicate | None, bool]:
        """AND of children: the translatable ones (exact only if all were)."""
        kept, exact = [], True
        for child in children:
            try:
                predicate, child_exact = self.expression(child)
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

    def expression(self, node: dict[str, Any]) -> tuple[Predicate | None, bool]:
        kind, kind_type = node["expression_class"], node["type"]
        if kind == "BOUND_CONJUNCTION" and kind_type == "CONJUNCTION_AND":
            return self.conjunction(node["children"])
        if kind == "BOUND_CONJUNCTION" and kind_type == "CONJUNCTION_OR":
            children = [self.exact(child) for child in node["children"]]
            return Or(tuple(children)), True
        if kind == "BOUND_COMPARISON" and kind_type in _COMPARISONS:
            return self.comparison(_COMPARISONS[kind_type], node["left"], node["right"]), True
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
        if kind == "BOUND_OPERATOR":
            children = node["children"]
            if kind_type in ("OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL") and len(children) == 1:
                return IsNull(self.column(children[0]), kind_type == "OPERATOR_IS_NOT_NULL"), True
            if kind_type in ("COMPARE_IN", "COMPARE_NOT_IN") and len(children) >= 2:
                column = self.column(children[0])
                values = tuple(self.constant(child, column) for child in children[1:])
                return In(column, values, kind_type == "COMPARE_NOT_IN"), True
            if kind_type == "OPERATOR_NOT" and len(children) == 1:
                return Not(self.exact(children[0])), True
        raise _Unsupported(kind_type)

    def exact(self, node: dict[str, Any]) -> Predicate:
        """A translation that dropped nothing (required under OR and NOT)."""
        predicate, exact = self.expression(node)
        if predicate is None or not exact:
            raise _Unsupported("inexact")
        return predicate

    def comparison(self, op: str, left: dict[str, Any], right: dict[str, Any]) -> Predicate:
        if left["expression_class"] == "BOUND_COLUMN_REF":
            column = self.column(left)
            return Compare(column, op, self.constant(right, column))
        column = self.column(right)
        return Compare(column, _FLIPPED[op], self.constant(left, column))

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
        if value["type"]["id"] not in _SCALAR_TYPES or value.get("is_null"):
            raise _Unsupported("constant")
        scalar = value["value"]
        if not _fits(scalar, self.columns[column]):
            raise _Unsupported("constant type")
        return scalar


def _fits(value: Any, column: pa.DataType) -> bool:
    if isinstance(value, bool):
        return bool(pa.types.is_boolean(column))
    if isinstance(value, int):
        return bool(pa.types.is_integer(column)) and -(2**63) <= value < 2**63
    if isinstance(value, str):
        return bool(pa.types.is_string(column) or pa.types.is_large_string(column))
    return False  # floats: see the module docstring


# --- translation ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Translator:
    """How a backend spells the predicate tree: column reference, literal, and the boolean
    combinators of its expression language."""

    column: Callable[[str], Any]
    literal: Callable[[Any], Any]
    is_null: Callable[[Any], Any]
    is_in: Callable[[Any, list[Any]], Any]
    both: Callable[[Any, Any], Any]
    either: Callable[[Any, Any], Any]
    negate: Callable[[Any], Any]


def translate(predicate: Predicate, to: Translator) -> Any:
    if isinstance(predicate, Compare):
        return _OPERATORS[predicate.op](to.column(predicate.column), to.literal(predicate.value))
    if isinstance(predicate, In):
        found = to.is_in(to.column(predicate.column), list(predicate.values))
        return to.negate(found) if predicate.negated else found
    if isinstance(predicate, IsNull):
        null = to.is_null(to.column(predicate.column))
        return to.negate(null) if predicate.negated else null
    if isinstance(predicate, Between):
        column = to.column(predicate.column)
        low = (operator.ge if predicate.lower_inclusive else operator.gt)(
            column, to.literal(predicate.lower)
        )
        high = (operator.le if predicate.upper_inclusive else operator.lt)(
            column, to.literal(predicate.upper)
        )
        return to.both(low, high)
    if isinstance(predicate, Not):
        return to.negate(translate(predicate.child, to))
    combine = to.both if isinstance(predicate, And) else to.either
    result = translate(predicate.children[0], to)
    for child in predicate.children[1:]:
        result = combine(result, translate(child, to))
    return result


def arrow_expression(predicate: Predicate) -> Any:
    """The predicate as a pyarrow.compute.Expression (for Table.filter)."""
    import pyarrow.compute as pc

    return translate(
        predicate,
        Translator(
            column=pc.field,
            literal=pc.scalar,
            is_null=lambda c: c.is_null(),
            is_in=lambda c, values: c.isin(pa.array(values)),
            both=operator.and_,
            either=operator.or_,
            negate=operator.invert,
        ),
    )


def spark_column(predicate: Predicate, frame: Any) -> Any:
    """The predicate as a Column of frame. Columns come from the DataFrame itself and
    literals stay plain Python values, so this works for classic Spark and Spark Connect
    alike (pyspark.sql.functions picks one mode per process)."""
    return translate(
        predicate,
        Translator(
            column=frame.__getitem__,
            literal=lambda value: value,
            is_null=lambda c: c.isNull(),
            is_in=lambda c, values: c.isin(values),
            both=operator.and_,
            either=operator.or_,
            negate=operator.invert,
        ),
    )


class _SqlText:
    """SQL text that builds larger SQL text with Python's comparison operators, so the one
    `translate` walk serves SQL as it serves pyarrow and Spark expressions."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def _binary(self, op: str, other: _SqlText) -> _SqlText:
        return _SqlText(f"({self.text} {op} {other.text})")

    def __eq__(self, other: object) -> _SqlText:  # type: ignore[override]
        assert isinstance(other, _SqlText)
        return self._binary("=", other)

    def __ne__(self, other: object) -> _SqlText:  # type: ignore[override]
        assert isinstance(other, _SqlText)
        return self._binary("<>", other)

    def __lt__(self, other: _SqlText) -> _SqlText:
        return self._binary("<", other)

    def __gt__(self, other: _SqlText) -> _SqlText:
        return self._binary(">", other)

    def __le__(self, other: _SqlText) -> _SqlText:
        return self._binary("<=", other)

    def __ge__(self, other: _SqlText) -> _SqlText:
        return self._binary(">=", other)

    __hash__ = None  # type: ignore[assignment]


def _sql_literal(value: Any) -> _SqlText:
    """A constant the parser admitted (boolean, integer or string) as a SQL literal."""
    if isinstance(value, bool):
        return _SqlText("TRUE" if value else "FALSE")
    if isinstance(value, int):
        return _SqlText(str(value))
    if isinstance(value, str):
        return _SqlText("'" + value.replace("'", "''") + "'")
    raise TypeError(f"no SQL literal for {type(value).__name__}")


def sql_identifier(name: str) -> str:
    """A column name as a quoted SQL identifier (exactly that name, case kept)."""
    return '"' + name.replace('"', '""') + '"'


def sql_text(predicate: Predicate) -> str:
    """The predicate as SQL (quoted identifiers, standard literals), as delta-rs's DataFusion
    engine takes it in a WHERE clause: it keeps exactly the matching rows."""
    return str(
        translate(
            predicate,
            Translator(
                column=lambda name: _SqlText(sql_identifier(name)),
                literal=_sql_literal,
                is_null=lambda c: _SqlText(f"({c.text} IS NULL)"),
                # not `c IN (…)` bare: DataFusion rewrites `c NOT IN (a) OR c NOT IN (b)` to
                # `c NOT IN ()`, true for a NULL c (three-valued SQL says NULL); the CASE keeps
                # the NULL where SQL has it and the lists apart
                is_in=lambda c, values: _SqlText(
                    f"(CASE WHEN {c.text} IS NULL THEN NULL"
                    f" ELSE {c.text} IN ({', '.join(_sql_literal(v).text for v in values)}) END)"
                ),
                both=lambda a, b: _SqlText(f"({a.text} AND {b.text})"),
                either=lambda a, b: _SqlText(f"({a.text} OR {b.text})"),
                negate=lambda a: _SqlText(f"(NOT {a.text})"),
            ),
        ).text
    )


# --- writing (clients) -----------------------------------------------------------------------


def columns_of(predicate: Predicate) -> list[str]:
    """The columns a predicate reads, in the order it names them: a scan must ask for these
    too, since a server may leave the columns it was not asked for empty."""
    if isinstance(predicate, And | Or):
        found: list[str] = []
        for child in predicate.children:
            found += [name for name in columns_of(child) if name not in found]
        return found
    if isinstance(predicate, Not):
        return columns_of(predicate.child)
    return [predicate.column]


# The DuckDB logical type a constant of an Arrow column's type is written as.
_DUCKDB_TYPES: tuple[tuple[Callable[[pa.DataType], bool], Callable[[pa.DataType], str]], ...] = (
    (pa.types.is_boolean, lambda t: "BOOLEAN"),
    (
        pa.types.is_integer,
        lambda t: (
            ("U" if pa.types.is_unsigned_integer(t) else "")
            + {8: "TINYINT", 16: "SMALLINT", 32: "INTEGER", 64: "BIGINT"}[t.bit_width]
        ),
    ),
    (pa.types.is_float32, lambda t: "FLOAT"),
    (pa.types.is_float64, lambda t: "DOUBLE"),
    (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t), lambda t: "VARCHAR"),
)


def to_json(predicate: Predicate, schema: pa.Schema) -> str:
    """The predicate as DuckDB's `json_filters` over a table with this schema: what DuckDB's
    Airport extension sends in an `endpoints` request, and what `parse` reads back. A top-level
    AND becomes separate filters, as DuckDB writes them. Columns of other types than boolean,
    integer, floating point and string cannot be written (ValueError)."""
    names = schema.names
    columns = {f.name: f.type for f in schema}
    writer = _Writer(names, columns)
    parts = predicate.children if isinstance(predicate, And) else (predicate,)
    return json.dumps(
        {
            "filters": [writer.expression(part) for part in parts],
            "column_binding_names_by_index": names,
        }
    )


class _Writer:
    def __init__(self, names: list[str], columns: dict[str, pa.DataType]) -> None:
        self.names = names
        self.columns = columns

    def type_id(self, column: str) -> str:
        data_type = self.columns[column]
        for matches, name in _DUCKDB_TYPES:
            if matches(data_type):
                return name(data_type)
        raise ValueError(f"cannot filter column {column!r} of type {data_type}")

    def column(self, name: str) -> dict[str, Any]:
        if name not in self.columns:
            raise ValueError(f"cannot filter column {name!r}: the table has no such column")
        return {
            "expression_class": "BOUND_COLUMN_REF",
            "type": "BOUND_COLUMN_REF",
            "alias": "",
            "return_type": {"id": self.type_id(name), "type_info": None},
            "binding": {"table_index": 0, "column_index": self.names.index(name)},
            "depth": 0,
        }

    def constant(self, value: Any, column: str) -> dict[str, Any]:
        data_type = {"id": self.type_id(column), "type_info": None}
        return {
            "expression_class": "BOUND_CONSTANT",
            "type": "VALUE_CONSTANT",
            "alias": "",
            "value": {"type": data_type, "is_null": value is None, "value": value},
        }

    def operator(self, kind: str, children: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "expression_class": "BOUND_OPERATOR",
            "type": kind,
            "alias": "",
            "return_type": {"id": "BOOLEAN", "type_info": None},
            "children": children,
        }

    def expression(self, predicate: Predicate) -> dict[str, Any]:
        if isinstance(predicate, Compare):
            kind = next(k for k, op in _COMPARISONS.items() if op == predicate.op)
            return {
                "expression_class": "BOUND_COMPARISON",
                "type": kind,
                "alias": "",
                "left": self.column(predicate.column),
                "right": self.constant(predicate.value, predicate.column),
            }
        if isinstance(predicate, In):
            values = [self.constant(v, predicate.column) for v in predicate.values]
            kind = "COMPARE_NOT_IN" if predicate.negated else "COMPARE_IN"
            return self.operator(kind, [self.column(predicate.column), *values])
        if isinstance(predicate, IsNull):
            kind = "OPERATOR_IS_NOT_NULL" if predicate.negated else "OPERATOR_IS_NULL"
            return self.operator(kind, [self.column(predicate.column)])
        if isinstance(predicate, Between):
            return {
                "expression_class": "BOUND_BETWEEN",
                "type": "COMPARE_BETWEEN",
                "alias": "",
                "input": self.column(predicate.column),
                "lower": self.constant(predicate.lower, predicate.column),
                "upper": self.constant(predicate.upper, predicate.column),
                "lower_inclusive": predicate.lower_inclusive,
                "upper_inclusive": predicate.upper_inclusive,
            }
        if isinstance(predicate, Not):
            return self.operator("OPERATOR_NOT", [self.expression(predicate.child)])
        kind = "CONJUNCTION_AND" if isinstance(predicate, And) else "CONJUNCTION_OR"
        return {
            "expression_class": "BOUND_CONJUNCTION",
            "type": kind,
            "alias": "",
            "children": [self.expression(child) for child in predicate.children],
        }
