"""The predicate tree written as DuckDB's `json_filters`: what a client sends in an
`endpoints` request (AirportClient's scans), and what the parser reads back."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from . import constants, patterns
from .model import And, Between, Compare, In, IsNull, Like, Not, Predicate
from .parser import COMPARISONS

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
    (pa.types.is_date32, lambda t: "DATE"),
    (
        lambda t: pa.types.is_timestamp(t) and t.unit == "us",
        lambda t: constants.TIMESTAMP if t.tz is None else constants.TIMESTAMP_TZ,
    ),
    (
        lambda t: pa.types.is_decimal32(t) or pa.types.is_decimal64(t) or pa.types.is_decimal128(t),
        lambda t: "DECIMAL",  # DuckDB's, whatever its width
    ),
)


def to_json(predicate: Predicate, schema: pa.Schema) -> str:
    """The predicate as DuckDB's `json_filters` over a table with this schema: what DuckDB's
    Airport extension sends in an `endpoints` request, and what `parse` reads back. A top-level
    AND becomes separate filters, as DuckDB writes them. Columns of other types than boolean,
    integer, floating point, string, date, microsecond timestamp and decimal cannot be
    written (ValueError), nor a LIKE of another column than a string or whose pattern's `\\`
    escapes anything but `%`, `_` or `\\`."""
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
            "return_type": self.logical_type(name),
            "binding": {"table_index": 0, "column_index": self.names.index(name)},
            "depth": 0,
        }

    def logical_type(self, column: str) -> dict[str, Any]:
        type_id = self.type_id(column)
        data_type = self.columns[column]
        if type_id != "DECIMAL":
            return {"id": type_id, "type_info": None}
        shape = {"width": data_type.precision, "scale": data_type.scale}
        return {"id": type_id, "type_info": {"type": "DECIMAL_TYPE_INFO", **shape}}

    def constant(self, value: Any, column: str) -> dict[str, Any]:
        logical = self.logical_type(column)
        serialized = value
        if logical["id"] == "DATE":
            serialized = constants.serialized_date(value)
        elif logical["id"] in (constants.TIMESTAMP, constants.TIMESTAMP_TZ):
            serialized = constants.serialized_timestamp(value)
        elif logical["id"] == "DECIMAL":
            info = logical["type_info"]
            serialized = constants.serialized_decimal(value, info["width"], info["scale"])
        return {
            "expression_class": "BOUND_CONSTANT",
            "type": "VALUE_CONSTANT",
            "alias": "",
            "value": {"type": logical, "is_null": value is None, "value": serialized},
        }

    def operator(self, kind: str, children: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "expression_class": "BOUND_OPERATOR",
            "type": kind,
            "alias": "",
            "return_type": {"id": "BOOLEAN", "type_info": None},
            "children": children,
        }

    def like(self, predicate: Like) -> dict[str, Any]:
        """DuckDB's `~~` where the pattern escapes nothing, else its `like_escape` with the
        pattern's own escape character (which means the same there)."""
        if self.type_id(predicate.column) != "VARCHAR":
            raise ValueError(f"cannot match column {predicate.column!r}: it is not a string")
        pattern = patterns.check(predicate.pattern)
        texts = [pattern] if patterns.ESCAPE not in pattern else [pattern, patterns.ESCAPE]
        varchar = {"id": "VARCHAR", "type_info": None}
        return {
            "expression_class": "BOUND_FUNCTION",
            "type": "BOUND_FUNCTION",
            "alias": "",
            "return_type": {"id": "BOOLEAN", "type_info": None},
            "children": [
                self.column(predicate.column),
                *(self.constant(text, predicate.column) for text in texts),
            ],
            "name": "~~" if len(texts) == 1 else "like_escape",
            "arguments": [varchar] * (1 + len(texts)),
            "original_arguments": [],
            "catalog_name": "system",
            "schema_name": "main",
            "has_serialize": False,
            "is_operator": len(texts) == 1,
        }

    def expression(self, predicate: Predicate) -> dict[str, Any]:
        if isinstance(predicate, Compare):
            kind = next(k for k, op in COMPARISONS.items() if op == predicate.op)
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
        if isinstance(predicate, Like):
            return self.like(predicate)
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
