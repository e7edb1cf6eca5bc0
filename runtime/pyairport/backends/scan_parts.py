"""How many parts a large scan is split into (deviation several_endpoints): DuckDB reads each
endpoint on a thread of its own, but every part is a DoGet stream the server sends alone.

Measured on 2 cores with DuckDB beside the server (docs/benchmarks.md): grpcio's Python server
sends two streams barely faster than one, and DuckDB's threads take the same cores, so more
parts made every query slower there. The default is one part per two cores (one on such a
machine); `pyairport serve --scan-parts N` sets it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from airport_contracts import InvalidTicket


@dataclass
class ScanSplit:
    max_parts: int = max(1, (os.cpu_count() or 1) // 2)
    rows_per_part: int = 1 << 20  # fewer rows than this make no part of their own

    def parts(self, rows: int, pieces: int) -> int:
        """How many parts a scan of rows (in pieces that cannot be cut: files) gets."""
        wanted = max(1, -(-rows // self.rows_per_part))
        return max(1, min(self.max_parts, pieces, wanted))


SPLIT = ScanSplit()
"""The process's setting (the server's flag sets it; tests change it)."""


NOT_A_PART = "not a scan part of this table"


def part_fields(token: str) -> dict[str, Any]:
    """The fields of a part token a PartitionedTable handed out in an endpoint. The token
    comes back inside a ticket, which anyone can write: what is not such a JSON object is
    the contract's InvalidTicket, never a scan of something the table did not plan."""
    try:
        part = json.loads(token)
    except ValueError:
        part = None
    if not isinstance(part, dict):
        raise InvalidTicket(reason=NOT_A_PART)
    return part


def part_count(part: dict[str, Any], key: str, most: int | None = None) -> int:
    """A part's whole-number field (a version, a row, a count), at least 0 and at most `most`:
    a forged count must not make the server stream rows no table holds."""
    value = part.get(key)
    if type(value) is not int or value < 0 or (most is not None and value > most):
        raise InvalidTicket(reason=NOT_A_PART)
    return value


def part_indexes(part: dict[str, Any], key: str, count: int) -> list[int]:
    """A part's list of distinct indexes below count (the files it reads): a forged list
    naming a file twice would read it twice."""
    value = part.get(key)
    if (
        not isinstance(value, list)
        or not all(type(index) is int and 0 <= index < count for index in value)
        or len(set(value)) != len(value)
    ):
        raise InvalidTicket(reason=NOT_A_PART)
    return value
