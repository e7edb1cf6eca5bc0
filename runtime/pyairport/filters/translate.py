"""One walk of the predicate tree for every backend's expression language: a Translator
says how the language spells a column, a literal and the combinators."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .model import And, Between, Compare, In, IsNull, Like, Not, Predicate

_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}


@dataclass(frozen=True)
class Translator:
    """How a backend spells the predicate tree: column reference, literal, IS NULL, IN,
    LIKE (of a pattern as patterns.py writes it) and the boolean combinators of its
    expression language."""

    column: Callable[[str], Any]
    literal: Callable[[Any], Any]
    is_null: Callable[[Any], Any]
    is_in: Callable[[Any, list[Any]], Any]
    like: Callable[[Any, str], Any]
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
    if isinstance(predicate, Like):
        return to.like(to.column(predicate.column), predicate.pattern)
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
    return _balanced([translate(child, to) for child in predicate.children], combine)


def _balanced(items: list[Any], combine: Callable[[Any, Any], Any]) -> Any:
    """items combined pairwise into a tree of depth log2(n), not a chain of depth n: the
    engines recurse over an expression's depth (DataFusion's SQL parser refuses more than 50
    levels, and deeper trees overflow pyarrow's stack)."""
    if len(items) == 1:
        return items[0]
    middle = len(items) // 2
    return combine(_balanced(items[:middle], combine), _balanced(items[middle:], combine))
