"""DuckDB's pushed-down filters as the Airport extension sends them (its json_filters, captured
from DuckDB 1.4.4 and 1.5.5): the expression nodes the tests build filters of, in one home."""

from __future__ import annotations

import json
from typing import Any

Node = dict[str, Any]


def column(index: int, type_id: str = "BIGINT", alias: str = "") -> Node:
    """The column at index of the document's column_binding_names_by_index."""
    return {
        "expression_class": "BOUND_COLUMN_REF",
        "type": "BOUND_COLUMN_REF",
        "alias": alias,
        "return_type": {"id": type_id, "type_info": None},
        "binding": {"table_index": 0, "column_index": index},
        "depth": 0,
    }


def constant(value: Any, type_id: str = "BIGINT", type_info: Node | None = None) -> Node:
    return {
        "expression_class": "BOUND_CONSTANT",
        "type": "VALUE_CONSTANT",
        "alias": "",
        "value": {
            "type": {"id": type_id, "type_info": type_info},
            "is_null": False,
            "value": value,
        },
    }


def comparison(kind: str, left: Node, right: Node) -> Node:
    """kind: DuckDB's comparison without its prefix (EQUAL, GREATERTHAN, …)."""
    return {
        "expression_class": "BOUND_COMPARISON",
        "type": f"COMPARE_{kind}",
        "alias": "",
        "left": left,
        "right": right,
    }


def conjunction(kind: str, *children: Node) -> Node:
    """kind: AND or OR."""
    return {
        "expression_class": "BOUND_CONJUNCTION",
        "type": f"CONJUNCTION_{kind}",
        "alias": "",
        "children": list(children),
    }


def operator(kind: str, *children: Node) -> Node:
    """kind: DuckDB's operator type (OPERATOR_NOT, OPERATOR_IS_NULL, COMPARE_IN, …)."""
    return {
        "expression_class": "BOUND_OPERATOR",
        "type": kind,
        "alias": "",
        "return_type": {"id": "BOOLEAN", "type_info": None},
        "children": list(children),
    }


def function(name: str, *children: Node) -> Node:
    """A call of one of DuckDB's functions, as its LIKEs arrive: `LIKE 'ab%'` as prefix,
    `'%ab'` suffix, `'%ab%'` contains, others `~~`."""
    return {
        "expression_class": "BOUND_FUNCTION",
        "type": "BOUND_FUNCTION",
        "alias": "",
        "return_type": {"id": "BOOLEAN", "type_info": None},
        "children": list(children),
        "name": name,
    }


def document(names: list[str], *filters: Node) -> str:
    """The json_filters of a scan whose bound columns are names."""
    return json.dumps({"filters": list(filters), "column_binding_names_by_index": names})
