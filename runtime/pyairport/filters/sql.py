"""The predicate as SQL text, as delta-rs' DataFusion engine takes it in a WHERE clause."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from . import constants
from .model import Predicate
from .translate import Translator, translate


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
    """A constant the parser admitted (boolean, integer, string, date, timestamp or decimal)
    as a SQL literal. A decimal is cast from its exact text: DataFusion reads `0.05` as a
    double. A timestamp is its microseconds cast to Delta's type as delta-rs reads it (an
    instant in UTC, or a wall clock): DataFusion folds the cast, and skips files by it."""
    if isinstance(value, bool):
        return _SqlText("TRUE" if value else "FALSE")
    if isinstance(value, int):
        return _SqlText(str(value))
    if isinstance(value, str):
        return _SqlText("'" + value.replace("'", "''") + "'")
    if isinstance(value, datetime):  # before date: a datetime is a date too
        zone = 'Some("UTC")' if value.tzinfo is not None else "None"
        micros = constants.serialized_timestamp(value)
        return _SqlText(f"arrow_cast({micros}, 'Timestamp(Microsecond, {zone})')")
    if isinstance(value, date):
        return _SqlText(f"DATE '{value.isoformat()}'")
    if isinstance(value, Decimal):
        scale = constants.scale_of(value)
        width = max(constants.digits_of(value), scale, 1)
        return _SqlText(f"CAST('{value:f}' AS DECIMAL({width}, {scale}))")
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
                like=lambda c, pattern: _SqlText(f"({c.text} LIKE {_sql_literal(pattern).text})"),
                both=lambda a, b: _SqlText(f"({a.text} AND {b.text})"),
                either=lambda a, b: _SqlText(f"({a.text} OR {b.text})"),
                negate=lambda a: _SqlText(f"(NOT {a.text})"),
            ),
        ).text
    )
