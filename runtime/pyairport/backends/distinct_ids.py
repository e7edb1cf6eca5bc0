"""The distinct values of an array of rowids (or row positions), or their count, found
without hashing.

Recent numpy (2.4 here) finds `np.unique`'s values by hashing: 6.0 s for the 6.0M rowids of
an UPDATE of every row of TPC-H SF 1's lineitem on this project's 2-core machine, and such a
statement takes distinct values several times. A statement's rowids mostly lie close
together (a row-tracked table's ids are its files' base row ids plus positions; a rowid
table's are claimed in blocks): where their range is at most DENSE_SPAN values per id, each
is marked in an array of flags over the range, which gives them in order in one pass
(0.04-0.14 s for those 6.0M, against 0.36-0.48 s for numpy's quicksort). Other values are
sorted by numpy's stable sort, a merge sort that takes runs already in order as they are:
rowids as the files hold them, and a table's leading columns folded in that order
(row_values.all_distinct), come nearly sorted (6.0M of them in 0.01-0.04 s against the
quicksort's 0.36 s; values in no order 0.44 s against 0.37 s).
"""

from __future__ import annotations

import numpy as np

# Flags over a range of at most this many values per id take no more bytes than 8-byte ids.
DENSE_SPAN = 8


def sorted_distinct(ids: np.ndarray) -> np.ndarray:
    """ids' distinct values in ascending order (what np.unique(ids) gives)."""
    if len(ids) < 2:
        return np.sort(ids)
    flagged = _flags(ids)
    if flagged is not None:
        seen, low = flagged
        distinct: np.ndarray = np.flatnonzero(seen).astype(ids.dtype) + low
        return distinct
    ordered = np.sort(ids, kind="stable")
    first = np.empty(len(ordered), dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered[first]


def distinct_count(values: np.ndarray) -> int:
    """How many distinct values values holds (len(sorted_distinct(values))), found the same
    way without making them: a gather of 6M values cost a try in the server 0.4 s."""
    if len(values) < 2:
        return len(values)
    flagged = _flags(values)
    if flagged is not None:
        return int(np.count_nonzero(flagged[0]))
    ordered = np.sort(values, kind="stable")
    return 1 + int(np.count_nonzero(ordered[1:] != ordered[:-1]))


def _flags(ids: np.ndarray) -> tuple[np.ndarray, np.integer] | None:
    """Where integer ids' range is dense (at most DENSE_SPAN values per id): a flag over the
    range for each value, set where an id holds it, and the range's least value; else None."""
    if not np.issubdtype(ids.dtype, np.integer):
        return None
    low, high = ids.min(), ids.max()
    if int(high) - int(low) >= DENSE_SPAN * len(ids):
        return None
    # within the range an 8-byte id less low neither overflows nor goes below zero; a narrower
    # one is widened first, as the range may pass its type's
    offsets = ids - low if ids.dtype.itemsize == 8 else ids.astype(np.int64) - int(low)
    seen = np.zeros(int(high) - int(low) + 1, dtype=bool)
    seen[offsets] = True
    return seen, low
