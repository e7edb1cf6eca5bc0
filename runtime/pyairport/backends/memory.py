"""The in-memory backend: the reference implementation of the table interfaces.

Storage is one immutable, chunked pyarrow Table whose first column is the rowid, kept
sorted, so a rowid lookup is an offset or a numpy searchsorted in a copy of that column
(which INSERTs extend in place). Two layers sit on top, so that neither DELETE nor UPDATE
rewrites whole columns per statement:
- a deletion mask: DELETE marks rows dead in a numpy bool array, in place (a scan reading
  the mask makes the next DELETE mark a copy); the table is compacted once half of it is
  dead;
- a patch: UPDATE adds its rows' positions and new values per column (later values win,
  small additions merged into larger ones); the patch is written into the columns — only
  the chunks holding a patched row — when a scan needs whole columns, when it reaches a
  quarter of the table or when a column has too many runs, so a run of UPDATEs pays one
  rewrite.
Single-row statements (DuckDB sends one per row) cost the same however many came before.
Every DML call stages its change in the statement scope (airport_contracts.Statement) and
the change is applied once, under the table lock, when the statement commits: a failure or
a disconnect mid-statement leaves no trace, however many batches the client sent. Called
outside a statement (directly from user code), a call applies at once.

`memory_table(...)` builds a table that implements exactly the interfaces you ask for, so
capability detection (and "batch preferred") is real.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airport_contracts import (
    Context,
    DMLOptions,
    DMLResult,
    ScanOptions,
    rowid_field,
)

from .. import filters
from .base import BackendTable
from .capabilities import ALL_CAPABILITIES, with_capabilities
from .shaping import (
    conform_insert,
    conform_update,
    returning_reader,
    returning_schema,
)

SCAN_BATCH_ROWS = 65_536
_MAX_CHUNKS = 256  # compact the table once this many statements have appended chunks
_PATCH_MIN_ROWS = 65_536  # write a patch into the columns beyond max(this, a quarter of the rows)
_SMALL_BATCH_ROWS = 16_384  # input batches smaller than this on average are coalesced
_RUN_MERGE_ROWS = 65_536  # patch runs are merged up to this size (a large UPDATE's run stays)
_MAX_RUNS = 32  # a patch with more runs in a column than this is written into the columns


@dataclass
class _Found:
    positions: np.ndarray  # positions of the rowids that exist
    valid: np.ndarray  # mask over the input rowids: which exist


@dataclass
class _Lookup:
    """Rowids and where they were found in the data version `version` (reused at commit
    when nothing else committed in between, so each rowid is looked up once)."""

    ids: np.ndarray
    found: _Found
    version: int


@dataclass
class _Update:
    lookup: _Lookup
    columns: dict[str, pa.Array]


@dataclass
class _Pending:
    """One statement's staged changes to one table."""

    inserts: list[pa.RecordBatch] = field(default_factory=list)
    updates: list[_Update] = field(default_factory=list)
    deletes: list[_Lookup] = field(default_factory=list)


class MemoryTable(BackendTable["_Pending"]):
    """Table: name, comment, schema, scan, and the storage every capability mixin uses."""

    def __init__(
        self,
        name: str,
        columns: pa.Schema,
        *,
        comment: str = "",
        rows: pa.Table | None = None,
        id_from_rowid: str | None = None,
    ) -> None:
        """columns: the user-visible columns (a rowid column is added first).
        rows: initial rows with those columns, or with a rowid column to keep their rowids.
        id_from_rowid: a column that gets the new rowid when an INSERT leaves it null."""
        self._name = name
        self._comment = comment
        self._id_from_rowid = id_from_rowid
        self.schema = pa.schema([rowid_field(), *columns], metadata=columns.metadata)
        self._lock = threading.Lock()
        self._data = self.schema.empty_table()
        self._mask: _DeletionMask | None = None  # None while no row of _data is deleted
        self._patch = _Patch()  # committed UPDATE values not yet written into the columns
        # numpy copy of the rowid column for lookups: built when an UPDATE/DELETE first
        # needs it (a table that only takes INSERTs never pays for it), then kept up to date
        self._rowids: np.ndarray | None = None
        # the buffer _rowids is the front of, whose free tail takes inserted rowids (None
        # when _rowids is an array of its own)
        self._rowid_buffer: np.ndarray | None = None
        self._last_rowid = 0  # the largest committed rowid (the rowid column is sorted)
        self._version = 0  # bumped whenever committed data changes
        self._next_rowid = 1
        if rows is not None and rows.num_rows:
            self._seed(rows)

    # --- Table ------------------------------------------------------------------------------

    def scan(self, ctx: Context, opts: ScanOptions | None = None) -> pa.RecordBatchReader:
        """The committed rows, batch by batch: deleted rows and the rows DuckDB's pushed-down
        filter rejects are dropped per batch, so a scan never copies the table."""
        ctx.raise_if_done()
        predicate = filters.parse(opts.filter, self.schema) if opts is not None else None
        expression = filters.arrow_expression(predicate) if predicate else None
        limit = opts.limit if opts is not None and opts.limit > 0 else None
        # Nothing that can raise between holding the mask and the generator releasing it.
        data, mask, live = self._reading()
        keep = _Keep(live, expression)

        def batches() -> Iterator[pa.RecordBatch]:
            # A scan never started keeps its mask held: the next DELETE marks a copy.
            try:
                remaining = limit
                for batch in data.to_batches(max_chunksize=SCAN_BATCH_ROWS):
                    ctx.raise_if_done()
                    kept = keep(batch)
                    if remaining is not None:
                        kept = kept.slice(0, remaining)
                        remaining -= kept.num_rows
                    if kept.num_rows:
                        yield kept
                    if remaining == 0:
                        return
            finally:
                self._done_reading(mask)

        return pa.RecordBatchReader.from_batches(self.schema, batches())

    @property
    def num_rows(self) -> int:
        with self._lock:
            return int(self._data.num_rows) - (0 if self._mask is None else self._mask.dead)

    def to_table(self) -> pa.Table:
        """The committed rows (rowid first), for tests and tools."""
        return self._snapshot()

    # --- storage ----------------------------------------------------------------------------

    def _seed(self, rows: pa.Table) -> None:
        rowid = self.schema[0].name
        if rowid in rows.column_names:
            rows = _sorted_by_rowid(rows, rowid)
            ids = rows.column(rowid).to_numpy()
        else:
            ids = self._allocate(rows.num_rows)
        batch = conform_insert(
            rows.combine_chunks().to_batches()[0],
            self.schema,
            np.asarray(ids, dtype=np.int64),
            self._id_from_rowid,
        )
        pending = _Pending(inserts=[batch])
        self._apply(pending)
        with self._lock:
            self._next_rowid = max(self._next_rowid, self._last_rowid + 1)

    def _snapshot(self) -> pa.Table:
        """The committed rows without the deleted ones."""
        data, mask, live = self._reading()
        try:
            return data if live is None else data.filter(pa.array(live))
        finally:
            self._done_reading(mask)

    def _reading(self) -> tuple[pa.Table, _DeletionMask | None, np.ndarray | None]:
        """The committed data with the patch written in (done once, under the lock, so the
        next reader finds it done), its deletion mask, held until _done_reading (no DELETE
        changes a held mask), and the mask's rows as they are now."""
        with self._lock:
            if self._patch.columns:
                self._data, self._patch = _materialize(self._data, self._patch), _Patch()
            mask = self._mask
            if mask is None:
                return self._data, None, None
            mask.readers += 1
            return self._data, mask, mask.live

    def _done_reading(self, mask: _DeletionMask | None) -> None:
        if mask is not None:
            with self._lock:
                mask.readers -= 1

    def _index(self) -> np.ndarray:
        """The rowid column as a sorted numpy array (call with the lock held)."""
        if self._rowids is None:
            self._rowids, self._rowid_buffer = _rowid_array(self._data), None
        return self._rowids

    def _lookup(self, ids: np.ndarray) -> tuple[_Committed, _Lookup]:
        with self._lock:
            rowids, live, version = self._index(), _live(self._mask), self._version
            committed = _Committed(self._data, self._patch)
        # Outside the lock: a DELETE committing meanwhile may change live under this search,
        # but it also bumps the version, so the commit searches again.
        return committed, _Lookup(ids, _positions(rowids, live, ids), version)

    def _allocate(self, count: int) -> np.ndarray:
        with self._lock:
            start = self._next_rowid
            self._next_rowid += count
        return np.arange(start, start + count, dtype=np.int64)

    def _new_pending(self) -> _Pending:
        return _Pending()

    def _commit_pending(self, pending: _Pending) -> None:
        self._apply(pending)

    def _apply(self, pending: _Pending) -> None:
        with self._lock:
            mask = self._mask
            extent = None if mask is None else (mask.live, mask.buffer)
            try:
                self._apply_locked(pending)
            except BaseException:
                if mask is not None and extent is not None:  # an INSERT may have extended it
                    mask.live, mask.buffer = extent
                raise

    def _apply_locked(self, pending: _Pending) -> None:
        """Apply pending to the committed state: everything is computed first and assigned
        at the end, except the mask, which an INSERT extends and a DELETE (the last step)
        marks in place; _apply undoes the extension if a later step fails."""
        data, rowids, mask, version = self._data, self._rowids, self._mask, self._version
        patch, buffer, last_rowid = self._patch, self._rowid_buffer, self._last_rowid
        if pending.inserts:
            data, mask, patch, last_rowid, appended = _append(
                data, mask, patch, last_rowid, pending.inserts, self.schema
            )
            if rowids is not None and appended is not None:
                rowids, buffer = _extended(rowids, buffer, _rowid_array(appended))
            else:  # rows moved: the index is rebuilt when next needed
                rowids, buffer = None, None
            version += 1
        if pending.updates or pending.deletes:
            if rowids is None:
                rowids, buffer = _rowid_array(data), None
            for group in _group_updates(pending.updates):
                found = _found(rowids, _live(mask), version, group.lookup)
                patch = patch.add(found, group.columns)
                version += 1
            if patch.rows > max(_PATCH_MIN_ROWS, data.num_rows // 4) or (
                patch.most_runs > _MAX_RUNS
            ):
                data, patch = _materialize(data, patch), _Patch()
            if pending.deletes:
                found = _found(rowids, _live(mask), version, _merge_lookups(pending.deletes))
                data, kept, mask, patch = _remove(data, rowids, mask, patch, found)
                if kept is not rowids:  # compacted: a new array
                    rowids, buffer = kept, None
                version += 1
        self._data, self._rowids, self._mask, self._version = data, rowids, mask, version
        self._patch, self._rowid_buffer, self._last_rowid = patch, buffer, last_rowid

    # --- shaping input ----------------------------------------------------------------------

    # --- the operations the capability mixins expose ------------------------------------------

    def _insert(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        pending, immediate = self._stage(ctx)
        staged: list[pa.RecordBatch] = []
        for batch in rows:
            ctx.raise_if_done()
            staged.append(
                conform_insert(
                    batch, self.schema, self._allocate(batch.num_rows), self._id_from_rowid
                )
            )
        pending.inserts.extend(staged)
        if immediate:
            self._apply(pending)
        return DMLResult(
            affected_rows=sum(b.num_rows for b in staged),
            returning_data=returning_reader(self.schema, staged, opts),
        )

    def _update(
        self,
        ctx: Context,
        chunks: Iterable[tuple[np.ndarray, pa.RecordBatch]],
        opts: DMLOptions | None,
    ) -> DMLResult:
        pending, immediate = self._stage(ctx)
        affected, returned = 0, []
        wanted = returning_schema(self.schema, opts)
        for ids, values in chunks:
            ctx.raise_if_done()
            columns = conform_update(values, self.schema)
            committed, lookup = self._lookup(ids)
            found = lookup.found
            pending.updates.append(_Update(lookup, columns))
            affected += int(found.valid.sum())
            if wanted is not None:
                # Only the columns the UPDATE leaves alone are read from the table.
                kept = [name for name in wanted.names if name not in columns]
                after = committed.rows_at(found.positions, kept)
                arrays = dict(zip(kept, after.columns, strict=True))
                valid = pa.array(found.valid)
                arrays.update({n: columns[n].filter(valid) for n in wanted.names if n in columns})
                returned.append(
                    pa.RecordBatch.from_arrays([arrays[n] for n in wanted.names], schema=wanted)
                )
        if immediate:
            self._apply(pending)
        return DMLResult(
            affected_rows=affected, returning_data=returning_reader(self.schema, returned, opts)
        )

    def _delete(
        self, ctx: Context, id_chunks: Iterable[np.ndarray], opts: DMLOptions | None
    ) -> DMLResult:
        pending, immediate = self._stage(ctx)
        affected, returned = 0, []
        wanted = returning_schema(self.schema, opts)
        for ids in id_chunks:
            ctx.raise_if_done()
            committed, lookup = self._lookup(ids)
            found = lookup.found
            pending.deletes.append(lookup)
            affected += _distinct(found.positions)
            if wanted is not None:
                returned.append(committed.rows_at(found.positions, wanted.names))
        if immediate:
            self._apply(pending)
        return DMLResult(
            affected_rows=affected, returning_data=returning_reader(self.schema, returned, opts)
        )


def memory_table(
    name: str,
    columns: pa.Schema,
    capabilities: Sequence[str] = ALL_CAPABILITIES,
    **options: Any,
) -> MemoryTable:
    """A MemoryTable implementing exactly `capabilities` (interface names); see MemoryTable
    for options."""
    table: MemoryTable = with_capabilities(MemoryTable, capabilities)(name, columns, **options)
    return table


# --- vectorised storage operations ---------------------------------------------------------


class _Keep:
    """Which rows of a scan's batches to send: not deleted (live, a mask over the whole
    table, consumed batch by batch) and kept by DuckDB's pushed-down filter — unless pyarrow
    cannot evaluate it (e.g. a constant of another type), then every row: DuckDB filters
    again anyway."""

    def __init__(self, live: np.ndarray | None, expression: Any) -> None:
        self.live = live
        self.expression = expression
        self.offset = 0

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if self.live is not None:
            mask = self.live[self.offset : self.offset + batch.num_rows]
            self.offset += batch.num_rows
            batch = batch.filter(pa.array(mask))
        if self.expression is not None:
            try:
                batch = batch.filter(self.expression)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                self.expression = None
        return batch


def _rows_at(data: pa.Table, positions: np.ndarray) -> pa.RecordBatch:
    """The rows at these positions, in this order. Taken chunk by chunk: a take on a
    chunked column would first concatenate the whole column (O(n) per RETURNING batch)."""
    if not len(positions):
        return pa.RecordBatch.from_pylist([], schema=data.schema)
    columns = []
    plans: dict[tuple[int, ...], _TakePlan] = {}
    indices: pa.Array | None = None
    for column in data.columns:
        if column.num_chunks == 1:  # the common case (inserts are coalesced): a plain take
            indices = pa.array(positions) if indices is None else indices
            columns.append(column.chunk(0).take(indices))
            continue
        lengths = tuple(len(chunk) for chunk in column.chunks)
        plan = plans.get(lengths) or plans.setdefault(lengths, _TakePlan.of(lengths, positions))
        pieces = [
            column.chunk(c).take(pa.array(local))
            for c, local in zip(plan.chunks, plan.local, strict=True)
        ]
        grouped = pieces[0] if len(pieces) == 1 else pa.concat_arrays(pieces)
        columns.append(grouped if plan.restore is None else grouped.take(plan.restore))
    return pa.RecordBatch.from_arrays(columns, schema=data.schema)


@dataclass
class _TakePlan:
    """positions (row numbers of a chunked column) grouped by chunk: which chunks, which of
    the positions fall in each (`groups`, indices into positions, in their given order),
    their offsets within the chunk (`local`), and how to put rows taken chunk by chunk back
    in the given order (`restore`; None when positions ascend, as DuckDB sends them)."""

    chunks: list[int]
    groups: list[np.ndarray]
    local: list[np.ndarray]
    restore: pa.Array | None

    @classmethod
    def of(cls, lengths: Sequence[int], positions: np.ndarray) -> _TakePlan:
        starts = np.cumsum((0, *lengths))
        chunk_of = np.searchsorted(starts, positions, side="right") - 1
        ascending = bool(np.all(chunk_of[1:] >= chunk_of[:-1]))
        order = np.arange(len(positions)) if ascending else np.argsort(chunk_of, kind="stable")
        grouped = chunk_of[order]
        first = np.concatenate(([0], np.flatnonzero(np.diff(grouped)) + 1))
        groups = np.split(order, first[1:])
        chunks = [int(c) for c in grouped[first]]
        return cls(
            chunks=chunks,
            groups=groups,
            local=[positions[g] - starts[c] for c, g in zip(chunks, groups, strict=True)],
            restore=None if ascending else pa.array(np.argsort(order, kind="stable")),
        )


def _sorted_by_rowid(rows: pa.Table, rowid: str) -> pa.Table:
    """Seed rows in rowid order; lookups need the rowids ascending and unique."""
    ids = rows.column(rowid)
    if ids.null_count:
        raise ValueError(f"seed rows have a null {rowid}")
    ordered = np.asarray(ids.to_numpy(), dtype=np.int64)
    if len(ordered) > 1 and not bool(np.all(ordered[1:] > ordered[:-1])):
        rows = rows.sort_by(rowid)
        ordered = np.asarray(rows.column(rowid).to_numpy(), dtype=np.int64)
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
        if len(repeated):
            raise ValueError(f"seed rows repeat {rowid} {int(repeated[0])}")
    return rows


def _positions(rowids: np.ndarray, live: np.ndarray | None, ids: np.ndarray) -> _Found:
    """Where the live rows with these rowids are (deleted rows are not found)."""
    n = len(rowids)
    if n == 0:
        return _Found(np.empty(0, dtype=np.int64), np.zeros(len(ids), dtype=bool))
    first, last = int(rowids[0]), int(rowids[-1])
    if last - first == n - 1:
        # Ascending unique rowids without a gap (inserts allocate them consecutively; deleted
        # rows stay in place, masked, until compaction): a rowid's offset is its position.
        valid = (ids >= first) & (ids <= last)
        clipped = np.where(valid, ids - first, 0)
    else:
        pos = np.searchsorted(rowids, ids)
        clipped = np.minimum(pos, n - 1)
        valid = (pos < n) & (rowids[clipped] == ids)
    if live is not None:
        valid &= live[clipped]
    return _Found(clipped[valid], valid)


def _rowid_array(data: pa.Table) -> np.ndarray:
    return np.asarray(data.column(0).to_numpy(), dtype=np.int64)


def _extended(
    front: np.ndarray, buffer: np.ndarray | None, added: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(front followed by added, the buffer it is the front of), in O(len(added))
    amortised. front is buffer's front when buffer is given; added goes into its free tail
    while there is room. Every view handed out before ends where front ends, so none of
    them sees the write. Otherwise front moves into a new buffer twice its size."""
    n, k = len(front), len(added)
    if buffer is None or len(buffer) < n + k:
        buffer = np.empty(max(2 * (n + k), 1024), dtype=added.dtype)
        buffer[:n] = front
    buffer[n : n + k] = added
    return buffer[: n + k], buffer


def _append(
    data: pa.Table,
    mask: _DeletionMask | None,
    patch: _Patch,
    last_rowid: int,
    batches: list[pa.RecordBatch],
    schema: pa.Schema,
) -> tuple[pa.Table, _DeletionMask | None, _Patch, int, pa.Table | None]:
    """data with batches appended, kept sorted by rowid: (data, its deletion mask, its
    patch, its last rowid, the rows appended at its end — None when rows already there
    moved)."""
    added = pa.Table.from_batches(batches, schema=schema)
    if not added.num_rows:
        return data, mask, patch, last_rowid, added
    if added.num_rows < _SMALL_BATCH_ROWS * len(batches):
        # DuckDB sends 2048-row batches: coalesce them (O(new rows)) so chunks stay large.
        added = added.combine_chunks()
    # One statement's rowids increase (allocation is monotonic and batches keep their
    # order), so only the boundary with what is committed can be out of order: that happens
    # when concurrent statements commit in another order than they allocated.
    ids = added.column(0)
    new_last = max(last_rowid, ids[len(ids) - 1].as_py())
    if data.num_rows > 0 and ids[0].as_py() < last_rowid:  # rows move: settle the patch and
        data, patch = _materialize(data, patch), _Patch()  # the mask first
        if mask is not None:
            data, mask = data.filter(pa.array(mask.live)), None
        data = pa.concat_tables([data, added]).sort_by(schema[0].name)
        return data, mask, patch, new_last, None
    data = pa.concat_tables([data, added]) if data.num_rows else added
    if mask is not None:
        mask.append_live(added.num_rows)
    if data.column(0).num_chunks >= _MAX_CHUNKS:  # many small statements
        data = _fewer_chunks(data)
    return data, mask, patch, new_last, added


def _fewer_chunks(data: pa.Table) -> pa.Table:
    """data in fewer chunks, rows where they were (positions, the mask and the patch stay
    valid): the trailing chunks smaller than _SMALL_BATCH_ROWS become one, O(their rows);
    if there are not two of those, every chunk becomes one (amortised O(n))."""
    lengths = [len(chunk) for chunk in data.column(0).chunks]
    small = 0
    while small < len(lengths) and lengths[-1 - small] < _SMALL_BATCH_ROWS:
        small += 1
    if small < 2:
        return data.combine_chunks()
    kept = sum(lengths[: len(lengths) - small])
    return pa.concat_tables([data.slice(0, kept), data.slice(kept).combine_chunks()])


def _distinct(positions: np.ndarray) -> int:
    """How many different rows positions name (a client may repeat a rowid)."""
    if len(positions) < 2 or bool(np.all(positions[1:] > positions[:-1])):
        return len(positions)
    return len(np.unique(positions))


def _found(rowids: np.ndarray, live: np.ndarray | None, version: int, lookup: _Lookup) -> _Found:
    """Where lookup's rowids are in the current data: its cached answer if it was made
    against this version, else a fresh search."""
    return lookup.found if lookup.version == version else _positions(rowids, live, lookup.ids)


def _merge_lookups(lookups: list[_Lookup]) -> _Lookup:
    if len(lookups) == 1:
        return lookups[0]
    ids = np.concatenate([lookup.ids for lookup in lookups])
    versions = {lookup.version for lookup in lookups}
    if len(versions) > 1:  # made against different data: search again at commit
        return _Lookup(ids, _Found(np.empty(0, dtype=np.int64), np.zeros(0, dtype=bool)), -1)
    found = _Found(
        np.concatenate([lookup.found.positions for lookup in lookups]),
        np.concatenate([lookup.found.valid for lookup in lookups]),
    )
    return _Lookup(ids, found, versions.pop())


def _group_updates(updates: list[_Update]) -> Iterator[_Update]:
    """Consecutive updates of the same columns, merged: one O(n) pass per group."""
    group: list[_Update] = []
    for update in updates:
        if group and set(update.columns) != set(group[0].columns):
            yield _merge(group)
            group = []
        group.append(update)
    if group:
        yield _merge(group)


def _merge(group: list[_Update]) -> _Update:
    if len(group) == 1:
        return group[0]
    columns = {
        name: pa.concat_arrays([u.columns[name] for u in group]) for name in group[0].columns
    }
    return _Update(_merge_lookups([u.lookup for u in group]), columns)


@dataclass(frozen=True)
class _Run:
    """Patched rows of one column: their positions (ascending, unique) and new values."""

    positions: np.ndarray
    values: pa.Array

    def then(self, newer: _Run) -> _Run:
        """This run with newer's values on top (newer wins where both have a row)."""
        positions, pick = _last_of_each(np.concatenate([self.positions, newer.positions]))
        return _Run(positions, pa.concat_arrays([self.values, newer.values]).take(pick))


def _last_of_each(positions: np.ndarray) -> tuple[np.ndarray, pa.Array]:
    """The distinct positions, ascending, and where in `positions` each occurs last."""
    order = np.argsort(positions, kind="stable")  # equal positions keep their order
    ordered = positions[order]
    last = np.append(ordered[1:] != ordered[:-1], True)
    return ordered[last], pa.array(order[last])


def _mergeable(older: _Run, newer: _Run) -> bool:
    size, newer_size = len(older.positions), len(newer.positions)
    return 2 * newer_size >= size and size + newer_size <= _RUN_MERGE_ROWS


@dataclass(frozen=True)
class _Patch:
    """Committed UPDATE values not yet written into the columns: per column, runs of patched
    rows, oldest first (a later run wins). A new run is merged into the one before it while
    it is at least half that one's size, up to _RUN_MERGE_ROWS: however many small
    statements patched a column (DuckDB sends each single-row UPDATE as its own statement),
    it keeps O(log rows) small runs, and a row is merged O(log rows) times. Runs of large
    UPDATEs are kept as they are (merging them would cost each such UPDATE the size of the
    patch); the table writes the patch into its columns once a column has more than
    _MAX_RUNS runs. Immutable: add() returns a new patch, so a reader's snapshot never
    changes under it."""

    columns: dict[str, tuple[_Run, ...]] = field(default_factory=dict)  # never mutated

    @property
    def rows(self) -> int:
        """Patched values held for the most patched column (a row patched by several runs
        counts once per run)."""
        return max(
            (sum(len(r.positions) for r in runs) for runs in self.columns.values()), default=0
        )

    @property
    def most_runs(self) -> int:
        return max((len(runs) for runs in self.columns.values()), default=0)

    def add(self, found: _Found, columns: dict[str, pa.Array]) -> _Patch:
        """found's rows take columns' values (aligned with found.valid); the last value wins
        for a repeated rowid."""
        if not len(found.positions):
            return self
        mask = pa.array(found.valid)
        positions = found.positions
        values = {name: column.filter(mask) for name, column in columns.items()}
        if len(positions) > 1 and not bool(np.all(positions[1:] > positions[:-1])):
            positions, pick = _last_of_each(positions)
            values = {name: column.take(pick) for name, column in values.items()}
        patched = dict(self.columns)
        for name, column in values.items():
            runs = (*patched.get(name, ()), _Run(positions, column))
            while len(runs) > 1 and _mergeable(runs[-2], runs[-1]):
                runs = (*runs[:-2], runs[-2].then(runs[-1]))
            patched[name] = runs
        return _Patch(patched)

    def overlay(self, batch: pa.RecordBatch, positions: np.ndarray) -> pa.RecordBatch:
        """batch (the stored rows at positions) with the patched values in."""
        columns = dict(zip(batch.schema.names, batch.columns, strict=True))
        for name, runs in self.columns.items():
            if name not in columns:  # not a column the reader asked for
                continue
            for run in runs:
                at = np.minimum(np.searchsorted(run.positions, positions), len(run.positions) - 1)
                hit = run.positions[at] == positions
                if hit.any():
                    patched = run.values.take(pa.array(at[hit]))
                    columns[name] = pc.replace_with_mask(columns[name], pa.array(hit), patched)
        return pa.RecordBatch.from_arrays(
            [columns[n] for n in batch.schema.names], schema=batch.schema
        )


@dataclass(frozen=True)
class _Committed:
    """A reader's snapshot of the committed rows: the columns and the patch on top."""

    data: pa.Table
    patch: _Patch

    def rows_at(self, positions: np.ndarray, names: Sequence[str]) -> pa.RecordBatch:
        """The named columns of the rows at positions, in this order."""
        batch = _rows_at(self.data.select(list(names)), positions)
        return self.patch.overlay(batch, positions) if self.patch.columns else batch


def _materialize(data: pa.Table, patch: _Patch) -> pa.Table:
    """data with the patch written in: per column, its runs (later ones win) applied in one
    pass over the chunks they touch."""
    for name, runs in patch.columns.items():
        positions = np.concatenate([run.positions for run in runs])
        values = pa.concat_arrays([run.values for run in runs])
        found = _Found(positions, np.ones(len(positions), dtype=bool))
        data = _replace(data, found, {name: values})  # last wins: later runs win
    return data


def _replace(data: pa.Table, found: _Found, columns: dict[str, pa.Array]) -> pa.Table:
    """The found rows take columns' values (the last value wins for a repeated rowid). Only
    the chunks holding an updated row are rewritten, so a few rows of a large table cost
    one chunk per column, not the column."""
    if not found.valid.any():
        return data
    value_rows = np.flatnonzero(found.valid)
    plans: dict[tuple[int, ...], _TakePlan] = {}
    for name, values in columns.items():
        index = data.schema.get_field_index(name)
        column = data.column(index)
        lengths = tuple(len(chunk) for chunk in column.chunks)
        plan = plans.get(lengths) or plans.setdefault(
            lengths, _TakePlan.of(lengths, found.positions)
        )
        chunks = list(column.chunks)
        for c, group, local in zip(plan.chunks, plan.groups, plan.local, strict=True):
            chunk = chunks[c]
            take = np.arange(len(chunk), dtype=np.int64)
            take[local] = len(chunk) + np.arange(len(group))  # in order: the last value wins
            new_values = values.take(pa.array(value_rows[group]))
            chunks[c] = pa.concat_arrays([chunk, new_values]).take(pa.array(take))
        data = data.set_column(
            index, data.schema.field(index), pa.chunked_array(chunks, type=column.type)
        )
    return data


def _remove(
    data: pa.Table, rowids: np.ndarray, mask: _DeletionMask | None, patch: _Patch, found: _Found
) -> tuple[pa.Table, np.ndarray, _DeletionMask | None, _Patch]:
    """Mark the found (live) rows dead; compact (drop the dead rows, after writing the
    patch in, as positions move) once more than half the table is dead."""
    if not len(found.positions):
        return data, rowids, mask, patch
    dying = _distinct(found.positions)
    if ((0 if mask is None else mask.dead) + dying) * 2 > len(rowids):
        live = np.ones(len(rowids), dtype=bool) if mask is None else mask.live.copy()
        live[found.positions] = False
        data = _materialize(data, patch).filter(pa.array(live))
        return data, rowids[live], None, _Patch()
    mask = _DeletionMask(np.ones(len(rowids), dtype=bool)) if mask is None else mask
    return data, rowids, mask.with_dead(found.positions, dying), patch


class _DeletionMask:
    """Which rows of the table's data are deleted: False in `live`. A DELETE marks its rows
    in place, O(rows deleted), unless a scan is reading the mask (`readers` > 0): then it
    marks a copy, so what a scan reads never changes under it. INSERTs extend `live` into the
    free tail of `buffer` (views handed out before end where they ended). Changed only under
    the table lock."""

    def __init__(self, live: np.ndarray, dead: int = 0) -> None:
        self.live, self.buffer = _extended(np.empty(0, dtype=bool), None, live)
        self.dead = dead  # False entries in live: compaction and num_rows need no count
        self.readers = 0

    def append_live(self, rows: int) -> None:
        self.live, self.buffer = _extended(self.live, self.buffer, np.ones(rows, dtype=bool))

    def with_dead(self, positions: np.ndarray, rows: int) -> _DeletionMask:
        """This mask, or a copy while a scan reads it, with the rows at positions (`rows`
        live ones, possibly repeated) marked dead."""
        mask = _DeletionMask(self.live, self.dead) if self.readers else self
        mask.live[positions] = False
        mask.dead += rows
        return mask


def _live(mask: _DeletionMask | None) -> np.ndarray | None:
    return None if mask is None else mask.live
