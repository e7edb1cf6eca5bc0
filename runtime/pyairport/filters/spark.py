"""The predicate as a Spark Column (classic Spark and Spark Connect)."""

from __future__ import annotations

import operator
from datetime import date
from typing import Any

from . import patterns
from .model import Like, Predicate, keeping
from .translate import Translator, translate


def spark_safe(predicate: Predicate) -> Predicate | None:
    """predicate without the LIKEs Spark would match by backtracking (widened, as the parser
    widens). Spark runs a LIKE as a Java regular expression unless it is a prefix, a suffix,
    both or a contains of plain text, and a backtracking match takes the string's length to
    the power of its `%`s: measured on local Spark, a pattern of twelve took over a minute on
    one 40-character string, in a task no cancel stops. Kept: those Spark simplifies, and any
    with at most one `%` (linear either way). delta-rs and pyarrow match in linear time."""
    return keeping(
        predicate, lambda term: not isinstance(term, Like) or patterns.is_linear(term.pattern)
    )


def spark_column(predicate: Predicate, frame: Any) -> Any:
    """The predicate (spark_safe's) as a Column of frame. Columns come from the DataFrame itself and
    literals stay plain Python values, so this works for classic Spark and Spark Connect
    alike (pyspark.sql.functions picks one mode per process)."""
    return translate(
        predicate,
        Translator(
            column=frame.__getitem__,
            literal=_literal,
            is_null=lambda c: c.isNull(),
            is_in=lambda c, values: c.isin([_literal(v) for v in values]),
            like=lambda c, pattern: c.like(pattern),
            both=operator.and_,
            either=operator.or_,
            negate=operator.invert,
        ),
    )


def _literal(value: Any) -> Any:
    """A constant as PySpark takes it. A date or a timestamp goes as its ISO text, which
    Spark casts to the column's type (a timestamp's text with its offset, +00:00, when it is
    an instant): PySpark's own conversion of a date writes a year before 1000 without its
    leading zeros, which the JVM refuses, and turns a wall clock into an instant in the
    Python process's time zone."""
    return value.isoformat() if isinstance(value, date) else value
