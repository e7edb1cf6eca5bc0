"""The predicate tree a DuckDB filter becomes: comparisons, IN, IS NULL, BETWEEN, LIKE and
the boolean combinators over plain columns and constants."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Compare:
    column: str
    op: str  # ==, !=, <, >, <= or >=
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
class Like:
    """column LIKE pattern, the pattern as patterns.py writes it (`\\` escapes)."""

    column: str
    pattern: str


@dataclass(frozen=True)
class And:
    children: tuple[Predicate, ...]


@dataclass(frozen=True)
class Or:
    children: tuple[Predicate, ...]


@dataclass(frozen=True)
class Not:
    child: Predicate


Predicate = Compare | In | IsNull | Between | Like | And | Or | Not


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


def keeping(predicate: Predicate, keep: Callable[[Predicate], bool]) -> Predicate | None:
    """predicate without the terms keep refuses, widened as the parser widens: an AND drops
    them, an OR or a NOT that holds one goes whole (None when nothing is left)."""
    if isinstance(predicate, And):
        kept = [k for k in (keeping(child, keep) for child in predicate.children) if k is not None]
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else And(tuple(kept))
    return predicate if _all_kept(predicate, keep) else None


def _all_kept(predicate: Predicate, keep: Callable[[Predicate], bool]) -> bool:
    if isinstance(predicate, And | Or):
        return all(_all_kept(child, keep) for child in predicate.children)
    if isinstance(predicate, Not):
        return _all_kept(predicate.child, keep)
    return keep(predicate)
