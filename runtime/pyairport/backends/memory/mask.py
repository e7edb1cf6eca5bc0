"""DELETE as a deletion mask over the stored rows: marked in place (in a copy while a scan
reads it), and compaction once half the table is dead."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .patch import Patch, materialize
from .storage import Found, count_distinct, extended

DEAD_BACKSTOP = 7 / 8  # dead rows are dropped at commit beyond this share of the table


def remove_rows(
    data: pa.Table, rowids: np.ndarray, mask: DeletionMask | None, patch: Patch, found: Found
) -> tuple[pa.Table, np.ndarray, DeletionMask | None, Patch]:
    """Mark the found (live) rows dead. Dropping dead rows is the compactor's (compaction.py),
    once half the table is dead; here only when it has not kept up (DEAD_BACKSTOP), after
    writing the patch in, as positions move."""
    if not len(found.positions):
        return data, rowids, mask, patch
    dying = count_distinct(found.positions)
    if ((0 if mask is None else mask.dead) + dying) > DEAD_BACKSTOP * len(rowids):
        live = np.ones(len(rowids), dtype=bool) if mask is None else mask.live.copy()
        live[found.positions] = False
        data = materialize(data, patch).filter(pa.array(live))
        return data, rowids[live], None, Patch()
    mask = DeletionMask(np.ones(len(rowids), dtype=bool)) if mask is None else mask
    return data, rowids, mask.with_dead(found.positions, dying), patch


class DeletionMask:
    """Which rows of the table's data are deleted: False in `live`. A DELETE marks its rows
    in place, O(rows deleted), unless a scan is reading the mask (`readers` > 0): then it
    marks a copy, so what a scan reads never changes under it. INSERTs extend `live` into the
    free tail of `buffer` (views handed out before end where they ended). Changed only under
    the table lock."""

    def __init__(self, live: np.ndarray, dead: int = 0) -> None:
        self.live, self.buffer = extended(np.empty(0, dtype=bool), None, live)
        self.dead = dead  # False entries in live: compaction and num_rows need no count
        self.readers = 0
        # the positions each DELETE marked in place, in order: a kept version (history.py)
        # undoes the marks made after it instead of holding a copy of live
        self.marked: list[np.ndarray] = []

    def append_live(self, rows: int) -> None:
        self.live, self.buffer = extended(self.live, self.buffer, np.ones(rows, dtype=bool))

    def with_dead(self, positions: np.ndarray, rows: int) -> DeletionMask:
        """This mask, or a copy while a scan reads it, with the rows at positions (`rows`
        live ones, possibly repeated) marked dead."""
        mask = DeletionMask(self.live, self.dead) if self.readers else self
        if mask is self:
            self.marked.append(np.array(positions, dtype=np.int64))
        mask.live[positions] = False
        mask.dead += rows
        return mask


def live_rows(mask: DeletionMask | None) -> np.ndarray | None:
    return None if mask is None else mask.live
