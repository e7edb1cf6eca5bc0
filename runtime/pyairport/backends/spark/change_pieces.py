"""How `table_changes` reads a range of a Delta table's change data feed in bounded pieces.

Spark hands a query's rows to Python whole (`collected`), so the feed of a long range, or of one
commit that wrote a large table, cannot be one query: the range is cut at commit versions
into pieces of about PIECE_ROWS changed rows, as the commits' own metrics count them, and a
commit larger than that is read in parts, its rows split by a hash of their values. Each
piece is one Spark query; the server holds one piece at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

PIECE_ROWS = 1 << 20


@dataclass(frozen=True)
class Piece:
    """The versions first..last (last None: to the latest) of the feed, read in `parts`
    parts by the hash of each row's values."""

    first: int
    last: int | None
    parts: int = 1


def changed_rows(metrics: Mapping[str, str] | None) -> int | None:
    """How many rows a commit's feed holds at most, from its operation metrics: every
    counted row (inserted, deleted, copied, …) and an updated row twice (its pre- and
    post-image). None when the commit has no metrics."""
    if not metrics:
        return None
    total = 0
    for key, value in metrics.items():
        if key.startswith("num") and "Rows" in key and value.isdigit():
            total += int(value) * (2 if "Updated" in key else 1)
    return total


def pieces(
    start: int, end: int | None, commits: Iterable[tuple[int, int | None]], bound: int
) -> list[Piece]:
    """The range start..end cut into pieces: commits are the (version, changed_rows) of the
    commits in the range, in version order. Consecutive commits share a piece while their
    rows stay within bound; a commit above it (or without metrics) has pieces of its own.
    The pieces cover the range exactly, so that Spark judges the range's ends as it would
    judge the whole (a version past the latest is Spark's to refuse)."""
    groups: list[tuple[int, int]] = []  # (first version, parts)
    held = 0
    for version, rows in commits:
        size = bound + 1 if rows is None else rows
        if size > bound:
            groups.append((version, -(-size // bound) if rows is not None else 1))
            held = bound  # nothing joins a large commit's piece
        elif not groups or held + size > bound:
            groups.append((version, 1))
            held = size
        else:
            held += size
    if not groups:
        return [Piece(start, end)]
    cut = []
    for index, (first, parts) in enumerate(groups):
        following = groups[index + 1][0] - 1 if index + 1 < len(groups) else end
        cut.append(Piece(start if index == 0 else first, following, parts))
    return cut
