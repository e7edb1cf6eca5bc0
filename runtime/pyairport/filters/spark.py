"""The predicate as a Spark Column (classic Spark and Spark Connect)."""

from __future__ import annotations

import operator
from typing import Any

from .model import Predicate
from .translate import Translator, translate


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
