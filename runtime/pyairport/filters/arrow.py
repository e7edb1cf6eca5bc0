"""The predicate as a pyarrow expression (the memory backend, delta-rs' and pyarrow's
dataset scanners)."""

from __future__ import annotations

import operator
from typing import Any

import pyarrow as pa

from .model import Predicate
from .translate import Translator, translate


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
            like=lambda c, pattern: pc.match_like(c, pattern),
            both=operator.and_,
            either=operator.or_,
            negate=operator.invert,
        ),
    )
