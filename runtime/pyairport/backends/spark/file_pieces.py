"""How a scan through Spark Connect is cut into queries that each read a bounded piece of a
table, and that Delta's data skipping confines to that piece's files.

Spark Connect offers no read one partition at a time (partition_stream.py needs classic
Spark's JVM), so such a scan is a sequence of queries, one per group of data files. Delta's
file index skips no file by `_metadata.file_path`, so a query that names only its files still
reads the whole table: a scan of n groups reads it n times. What Delta does skip by is a
column's range: its partition values, and the minimum and maximum its log keeps of the
table's first columns. So each group is the files next to each other in one column's order,
and its query also asks for the group's range of that column, which rules out every file
whose range lies outside it. The column is the one whose files' ranges overlap least, by
what the queries would read (an id or a load date a table was written in the order of, a
partition column); where no column does better than the files' paths, the groups are by
path.

The range only narrows which files Delta opens; which rows a query returns is decided by
the file names, so a range that is too wide (a timestamp's, widened here by two days for
the time zones its values pass through) costs time, never a row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from .layout import Layout

# Candidate columns per scan, by the width of the query that measures them (each is read once).
MAX_COLUMNS = 8
_ORDERED = {"byte", "short", "integer", "long", "decimal", "date", "timestamp", "timestamp_ntz"}
_TIMESTAMP_SLACK = timedelta(days=2)


@dataclass(frozen=True)
class FileRange:
    """One data file of the version read: its size on disk, and for each candidate column
    its smallest and largest live value (None, None where every value is null) and whether
    any is null."""

    path: str
    size: int
    bounds: dict[str, tuple[Any, Any, bool]]


@dataclass(frozen=True)
class Piece:
    """One query's files and, where a column's range confines them, that range (low..high
    over the non-null values, and whether the files hold nulls of the column)."""

    files: tuple[str, ...]
    column: str | None = None
    low: Any = None
    high: Any = None
    nulls: bool = False


def candidates(schema: Any, layout: Layout) -> list[str]:
    """The columns of a Spark schema (the version read) a piece's range may be of: those of an
    exactly ordered type (integers, decimals, dates, timestamps; a partition's strings too)
    that Delta skips files by — the partition columns, then those its log keeps bounds of (the
    table's
    `delta.dataSkippingStatsColumns`, else its first `delta.dataSkippingNumIndexedCols`, 32 by
    default, counting a struct's fields) — at most MAX_COLUMNS."""
    named = layout.properties.get("delta.dataSkippingStatsColumns")
    listed = {n.strip().strip("`") for n in named.split(",")} if named else None
    indexed = _int(layout.properties.get("delta.dataSkippingNumIndexedCols"), 32)
    partitions, bounded, leaves = [], [], 0
    for column in schema.fields:
        kind = column.dataType.typeName()
        leaves += _leaves(column.dataType)
        # a string partition's values are whole in the log; other strings' bounds are cut short
        if kind not in _ORDERED and not (kind == "string" and column.name in layout.partitions):
            continue
        if column.name in layout.partitions:
            partitions.append(column.name)
        elif listed is not None:
            if column.name in listed:
                bounded.append(column.name)
        elif indexed < 0 or leaves <= indexed:
            bounded.append(column.name)
    return (partitions + bounded)[:MAX_COLUMNS]


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:  # Delta refuses such a value; the cost of guessing is time only
        return default


def _leaves(kind: Any) -> int:
    if kind.typeName() == "struct":
        return sum(_leaves(f.dataType) for f in kind.fields)
    return 1


def plan(files: Sequence[FileRange], columns: Sequence[str], group_bytes: int) -> list[Piece]:
    """The pieces that read files (each file once) at the least cost: groups of about
    group_bytes by the column whose ranges confine them best, or by path."""
    by_path = _by_path(files, group_bytes)
    if len(by_path) <= 1:
        return by_path
    sizes = np.array([f.size for f in files], dtype=np.float64)
    best, cost = by_path, float(sizes.sum()) * len(by_path)
    for column in columns:
        pieces = _by_column(files, column, group_bytes)
        read = _cost(files, sizes, column, pieces)
        if read < cost:
            best, cost = pieces, read
    return best


def _by_path(files: Sequence[FileRange], group_bytes: int) -> list[Piece]:
    ordered = sorted(files, key=lambda f: f.path)
    return [Piece(tuple(f.path for f in group)) for group in _groups(ordered, group_bytes)]


def _by_column(files: Sequence[FileRange], column: str, group_bytes: int) -> list[Piece]:
    def order(f: FileRange) -> tuple[bool, Any, Any, str]:
        low, high, _ = f.bounds[column]
        return (low is None, low, high, f.path)

    pieces = []
    for group in _groups(sorted(files, key=order), group_bytes):
        lows = [f.bounds[column][0] for f in group if f.bounds[column][0] is not None]
        highs = [f.bounds[column][1] for f in group if f.bounds[column][1] is not None]
        pieces.append(
            Piece(
                tuple(f.path for f in group),
                column,
                min(lows) if lows else None,
                max(highs) if highs else None,
                any(f.bounds[column][2] for f in group),
            )
        )
    return pieces


def _groups(ordered: list[FileRange], group_bytes: int) -> list[list[FileRange]]:
    groups: list[list[FileRange]] = []
    held = group_bytes
    for f in ordered:
        if held + f.size > group_bytes:
            groups.append([])
            held = 0
        groups[-1].append(f)
        held += f.size
    return groups


def _cost(files: Sequence[FileRange], sizes: np.ndarray, column: str, pieces: list[Piece]) -> float:
    """The bytes the pieces' queries would read: each the files whose range meets its range,
    and where it asks for nulls, every file that holds one."""
    bounds = [f.bounds[column] for f in files]
    # each value by its rank among the column's bounds: one comparison for every type
    rank = {v: i for i, v in enumerate(sorted({v for b in bounds for v in b[:2] if v is not None}))}
    lows = np.array([np.inf if low is None else rank[low] for low, _, _ in bounds])
    highs = np.array([-np.inf if high is None else rank[high] for _, high, _ in bounds])
    nulls = np.array([has_nulls for _, _, has_nulls in bounds], dtype=bool)
    total = 0.0
    for piece in pieces:
        read = np.zeros(len(files), dtype=bool)
        if piece.low is not None:
            read |= (lows <= rank[piece.high]) & (highs >= rank[piece.low])
        if piece.nulls:
            read |= nulls
        total += float(sizes[read].sum())
    return total


def widened(piece: Piece) -> tuple[Any, Any]:
    """The range a piece's query asks for: a timestamp's widened by two days each way (its
    values pass through the session's and this process's time zones, up to 26 hours apart,
    and a daylight-saving hour repeats), a side that would leave the calendar open."""
    if not isinstance(piece.low, datetime):
        return piece.low, piece.high
    try:
        low = piece.low - _TIMESTAMP_SLACK
    except OverflowError:
        low = None
    try:
        high = piece.high + _TIMESTAMP_SLACK
    except OverflowError:
        high = None
    return low, high
