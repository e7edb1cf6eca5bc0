"""A memory table's committed rows: the stored columns (sorted by rowid), their deletion mask
(mask.py), the patch of committed UPDATE values not yet written into the columns (patch.py),
the rowid index, the versions kept for time travel (history.py) and the statistics of the
committed state, all guarded by one lock.

A statement's staged changes (Pending) are applied here at commit, in one step under the lock;
a reader holds the mask it reads until it is done (a DELETE then marks a copy); the compactor
rewrites the storage off the statements' path; a column change rewrites it in one step.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from airport_contracts import ColumnStats, NotFound, TimePoint, TimePointInvalid

from ..column_stats import arrow_column_stats
from ..time_points import TimePointError
from .compaction import COMPACTOR
from .history import History, Version
from .mask import DeletionMask, live_rows, remove_rows
from .patch import Committed, Patch, Update, group_updates, materialize
from .storage import (
    CHUNKS_BACKSTOP,
    MAX_CHUNKS,
    Lookup,
    extended,
    fewer_chunks,
    lookup_positions,
    merge_lookups,
    positions_of,
    rowid_array,
)

_MAX_RUNS = 32  # a patch with more runs in a column than this is written into the columns
_PATCH_MIN_ROWS = 65_536  # the compactor writes a patch into the columns beyond
# max(this, a quarter of the rows); a commit does beyond twice the rows (it has not kept up)

Change = Callable[[pa.Schema, pa.Table], tuple[pa.Schema, pa.Table]]
"""A column change (column_changes.py): the schema and live rows before → after."""


@dataclass
class Pending:
    """One statement's staged changes to one table."""

    inserts: list[pa.RecordBatch] = field(default_factory=list)
    updates: list[Update] = field(default_factory=list)
    deletes: list[Lookup] = field(default_factory=list)


@dataclass(frozen=True)
class Reading:
    """What a reader reads: the committed data with the patch written in, its deletion mask
    (held until done_reading: no DELETE changes a held mask), the mask's rows as they were,
    and which committed state it is (version, rewrites)."""

    data: pa.Table
    mask: DeletionMask | None
    live: np.ndarray | None
    state: tuple[int, int]


class CommittedRows:
    def __init__(self, schema: pa.Schema, versions_kept: int) -> None:
        """schema: the table's, rowid column first."""
        self.schema = schema
        self.lock = threading.Lock()
        self.data = schema.empty_table()
        self.mask: DeletionMask | None = None  # None while no row of data is deleted
        self.patch = Patch()  # committed UPDATE values not yet written into the columns
        # numpy copy of the rowid column for lookups: built when an UPDATE/DELETE first
        # needs it (a table that only takes INSERTs never pays for it), then kept up to date
        self.rowids: np.ndarray | None = None
        # the buffer rowids is the front of, whose free tail takes inserted rowids (None
        # when rowids is an array of its own)
        self.rowid_buffer: np.ndarray | None = None
        self.last_rowid = 0  # the largest committed rowid (the rowid column is sorted)
        self.next_rowid = 1
        self.version = 0  # bumped whenever committed data changes
        # bumped whenever rows already in data are rewritten (not when rows are appended):
        # a compaction of an older data is still good for its rows while this stays
        self.rewrites = 0
        self.history = History(versions_kept)
        # the statistics of the committed state (version, rewrites) by column
        self._statistics: tuple[tuple[int, int], dict[str, ColumnStats]] = ((-1, -1), {})
        self._history_started = False

    def start_history(self) -> None:
        """The committed rows so far (the seed, which may carry rowids of its own) are
        version 0: the table as created; new rowids follow theirs."""
        with self.lock:
            self.next_rowid = max(self.next_rowid, self.last_rowid + 1)
            self._record_version()
            self._history_started = True

    # --- reading ------------------------------------------------------------------------------

    @property
    def num_rows(self) -> int:
        with self.lock:
            return int(self.data.num_rows) - (0 if self.mask is None else self.mask.dead)

    def reading(self) -> Reading:
        """The committed rows to read (the patch written in once, under the lock, so the
        next reader finds it done); call done_reading with its mask when done."""
        with self.lock:
            if self.patch.columns:
                self.data, self.patch = materialize(self.data, self.patch), Patch()
                self.rewrites += 1
            state = (self.version, self.rewrites)
            mask = self.mask
            if mask is None:
                return Reading(self.data, None, None, state)
            mask.readers += 1
            return Reading(self.data, mask, mask.live, state)

    def done_reading(self, mask: DeletionMask | None) -> None:
        if mask is not None:
            with self.lock:
                mask.readers -= 1

    def snapshot(self) -> pa.Table:
        """The committed rows without the deleted ones."""
        read = self.reading()
        try:
            return read.data if read.live is None else read.data.filter(pa.array(read.live))
        finally:
            self.done_reading(read.mask)

    def column_stats(self, column_name: str) -> ColumnStats:
        """A column's statistics over the live rows, computed once per committed state."""
        if column_name not in self.schema.names:
            raise NotFound()
        read = self.reading()
        try:
            with self.lock:
                known, by_column = self._statistics
                if known == read.state and column_name in by_column:
                    return by_column[column_name]
            column = read.data.column(column_name)
            if read.live is not None:
                column = column.filter(pa.array(read.live[: len(column)]))
            stats = arrow_column_stats(column)
        finally:
            self.done_reading(read.mask)
        with self.lock:
            if self._statistics[0] != read.state:
                self._statistics = (read.state, {})
            self._statistics[1][column_name] = stats
        return stats

    def lookup(self, ids: np.ndarray) -> tuple[Committed, Lookup]:
        """Where the rows with these rowids are, in the committed state as it is now."""
        with self.lock:
            if self.rowids is None:
                self.rowids, self.rowid_buffer = rowid_array(self.data), None
            rowids, live, version = self.rowids, live_rows(self.mask), self.version
            committed = Committed(self.data, self.patch)
        # Outside the lock: a DELETE committing meanwhile may change live under this search,
        # but it also bumps the version, so the commit searches again.
        return committed, Lookup(ids, positions_of(rowids, live, ids), version)

    # --- versions (time travel) ---------------------------------------------------------------

    def version_at(self, point: TimePoint | None) -> Version:
        """The kept version a time point names (the latest without one)."""
        with self.lock:
            if point is None:
                return self.history.latest()
            try:
                return self.history.at(point)
            except TimePointError as exc:
                raise TimePointInvalid(error=str(exc)) from None

    def kept_version(self, number: int) -> Version | None:
        with self.lock:
            return self.history.number(number)

    def latest_number(self) -> int:
        """The number of the last committed version."""
        with self.lock:
            return self.history.latest().number

    def _record_version(self) -> None:
        """The committed state is a new version (call with the lock held)."""
        self.history.record(self.schema, self.data, self.patch, self.mask, self.rewrites)

    # --- writing ------------------------------------------------------------------------------

    def allocate(self, count: int) -> np.ndarray:
        """count new rowids, in order."""
        with self.lock:
            start = self.next_rowid
            self.next_rowid += count
        return np.arange(start, start + count, dtype=np.int64)

    def apply(self, pending: Pending) -> None:
        """A statement's staged changes, committed in one step."""
        with self.lock:
            mask = self.mask
            extent = None if mask is None else (mask.live, mask.buffer)
            try:
                self._apply_locked(pending)
            except BaseException:
                if mask is not None and extent is not None:  # an INSERT may have extended it
                    mask.live, mask.buffer = extent
                raise
            if self._history_started:
                self._record_version()
            if self._compaction_pays():
                COMPACTOR.ask(self)

    def _apply_locked(self, pending: Pending) -> None:
        """Apply pending to the committed state: everything is computed first and assigned
        at the end, except the mask, which an INSERT extends and a DELETE (the last step)
        marks in place; apply undoes the extension if a later step fails."""
        data, rowids, mask, version = self.data, self.rowids, self.mask, self.version
        patch, buffer, last_rowid = self.patch, self.rowid_buffer, self.last_rowid
        rewritten = False
        if pending.inserts:
            data, mask, patch, last_rowid, appended = _append(
                data, mask, patch, last_rowid, pending.inserts, self.schema
            )
            if rowids is not None and appended is not None:
                rowids, buffer = extended(rowids, buffer, rowid_array(appended))
            else:  # rows moved: the index is rebuilt when next needed
                rowids, buffer = None, None
            rewritten = appended is None
            version += 1
        if pending.updates or pending.deletes:
            if rowids is None:
                rowids, buffer = rowid_array(data), None
            for group in group_updates(pending.updates):
                found = lookup_positions(rowids, live_rows(mask), version, group.lookup)
                patch = patch.add(found, group.columns)
                version += 1
            if patch.rows > 2 * data.num_rows + _PATCH_MIN_ROWS or patch.most_runs > _MAX_RUNS:
                data, patch = materialize(data, patch), Patch()
                rewritten = True
            if pending.deletes:
                found = lookup_positions(
                    rowids, live_rows(mask), version, merge_lookups(pending.deletes)
                )
                data, kept, mask, patch = remove_rows(data, rowids, mask, patch, found)
                if kept is not rowids:  # compacted: a new array
                    rowids, buffer, rewritten = kept, None, True
                version += 1
        self.data, self.rowids, self.mask, self.version = data, rowids, mask, version
        self.patch, self.rowid_buffer, self.last_rowid = patch, buffer, last_rowid
        self.rewrites += rewritten

    def alter(self, change: Change, ignore_not_found: bool) -> None:
        """The committed rows rewritten by a column change, in one step under the lock; a
        column or field that is not there is no change when ignore_not_found."""
        with self.lock:
            if self.patch.columns:
                self.data, self.patch = materialize(self.data, self.patch), Patch()
            data = self.data
            if self.mask is not None:
                data = data.filter(pa.array(self.mask.live))
            try:
                schema, data = change(self.schema, data)
            except NotFound:
                if ignore_not_found:
                    return
                raise
            self.schema, self.data = schema, data
            self.rewrites += 1
            self.mask, self.rowids, self.rowid_buffer = None, None, None
            self.version += 1
            self._record_version()

    # --- compaction (compaction.py) -----------------------------------------------------------

    def _compaction_pays(self) -> bool:
        """Whether the storage is worth rewriting (call with the lock held): many chunks,
        a patch of more than a quarter of the rows, or more dead rows than live ones."""
        data = self.data
        return (
            data.column(0).num_chunks >= MAX_CHUNKS
            or self.patch.rows > max(_PATCH_MIN_ROWS, data.num_rows // 4)
            or (self.mask is not None and self.mask.dead * 2 > data.num_rows)
        )

    def compact(self) -> None:
        """Rewrite the storage. The rewrite is made outside the lock from the committed
        state and swapped in if what it rewrote is still there: rows appended meanwhile follow
        it as they are. Dropping dead rows moves positions, so that rewrite is swapped in only
        if nothing at all committed meanwhile (and the version moves)."""
        with self.lock:
            if not self._compaction_pays():
                return
            data, patch, mask, version = self.data, self.patch, self.mask, self.version
            rewrites = self.rewrites
            live = None if mask is None or mask.dead * 2 <= data.num_rows else mask.live.copy()
            # the patch is written in when it pays, or when positions move anyway
            patched = patch.columns and (
                live is not None or patch.rows > max(_PATCH_MIN_ROWS, data.num_rows // 4)
            )
        compacted = materialize(data, patch) if patched else data
        if live is not None:
            compacted = compacted.filter(pa.array(live))
        if compacted.column(0).num_chunks >= MAX_CHUNKS:
            compacted = fewer_chunks(compacted)
        with self.lock:
            if live is not None:
                if self.version != version or self.data is not data:
                    return  # a commit came first; it asks again if compaction still pays
                self.mask, self.rowids, self.rowid_buffer = None, None, None
                self.version += 1
            elif self.rewrites != rewrites or (patched and self.patch is not patch):
                return  # rows it holds were rewritten, or patched again, meanwhile
            elif self.data.num_rows > data.num_rows:  # appended meanwhile
                compacted = pa.concat_tables([compacted, self.data.slice(data.num_rows)])
            self.data = compacted
            if patched:
                self.patch = Patch()
            self.rewrites += 1


def _append(
    data: pa.Table,
    mask: DeletionMask | None,
    patch: Patch,
    last_rowid: int,
    batches: list[pa.RecordBatch],
    schema: pa.Schema,
) -> tuple[pa.Table, DeletionMask | None, Patch, int, pa.Table | None]:
    """data with batches appended, kept sorted by rowid: (data, its deletion mask, its
    patch, its last rowid, the rows appended at its end — None when rows already there
    moved)."""
    # The batches as they came (DuckDB sends 2048 rows at a time), not copied: the compactor
    # merges small chunks later, off the statement's path.
    added = pa.Table.from_batches(batches, schema=schema)
    if not added.num_rows:
        return data, mask, patch, last_rowid, added
    # One statement's rowids increase (allocation is monotonic and batches keep their
    # order), so only the boundary with what is committed can be out of order: that happens
    # when concurrent statements commit in another order than they allocated.
    ids = added.column(0)
    new_last = max(last_rowid, ids[len(ids) - 1].as_py())
    if data.num_rows > 0 and ids[0].as_py() < last_rowid:  # rows move: settle the patch and
        data, patch = materialize(data, patch), Patch()  # the mask first
        if mask is not None:
            data, mask = data.filter(pa.array(mask.live)), None
        data = pa.concat_tables([data, added]).sort_by(schema[0].name)
        return data, mask, patch, new_last, None
    data = pa.concat_tables([data, added]) if data.num_rows else added
    if mask is not None:
        mask.append_live(added.num_rows)
    if data.column(0).num_chunks >= CHUNKS_BACKSTOP:  # the compactor has not kept up
        data = fewer_chunks(data)
    return data, mask, patch, new_last, added
