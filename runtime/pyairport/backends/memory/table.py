"""The memory table: name, schema, scans, and each DML statement staged in its scope and
applied at commit (storage.py, patch.py and mask.py hold the layers it applies it to)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from airport_contracts import (
    AddColumnOptions,
    AddFieldOptions,
    ChangeColumnTypeOptions,
    ColumnStats,
    Context,
    DMLOptions,
    DMLResult,
    DropNotNullOptions,
    NotFound,
    RemoveColumnOptions,
    RemoveFieldOptions,
    RenameColumnOptions,
    RenameFieldOptions,
    ScanOptions,
    ScanPartition,
    SchemaRequest,
    SetDefaultOptions,
    SetNotNullOptions,
    TimePoint,
    TimePointInvalid,
    rowid_field,
)

from ... import filters
from ..base import BackendTable
from ..capabilities import ALL_CAPABILITIES, with_capabilities
from ..column_stats import arrow_column_stats
from ..scan_parts import SPLIT
from ..shaping import (
    UpdateColumns,
    conform_insert,
    full_width,
    returning_reader,
    returning_schema,
)
from ..time_points import TimePointError
from . import column_changes
from .compaction import COMPACTOR
from .history import DEFAULT_VERSIONS_KEPT, History, Version
from .mask import DeletionMask, live_rows, remove_rows
from .patch import Committed, Patch, Update, group_updates, materialize
from .storage import (
    CHUNKS_BACKSTOP,
    MAX_CHUNKS,
    Keep,
    Lookup,
    count_distinct,
    extended,
    fewer_chunks,
    lookup_positions,
    merge_lookups,
    positions_of,
    rowid_array,
    sorted_by_rowid,
)

SCAN_BATCH_ROWS = 65_536
_MAX_RUNS = 32  # a patch with more runs in a column than this is written into the columns


_PATCH_MIN_ROWS = 65_536  # the compactor writes a patch into the columns beyond
# max(this, a quarter of the rows); a commit does beyond twice the rows (it has not kept up)


@dataclass
class _Pending:
    """One statement's staged changes to one table."""

    inserts: list[pa.RecordBatch] = field(default_factory=list)
    updates: list[Update] = field(default_factory=list)
    deletes: list[Lookup] = field(default_factory=list)


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
        versions_kept: int = DEFAULT_VERSIONS_KEPT,
    ) -> None:
        """columns: the user-visible columns (a rowid column is added first).
        rows: initial rows with those columns, or with a rowid column to keep their rowids.
        id_from_rowid: a column that gets the new rowid when an INSERT leaves it null.
        versions_kept: how many of its latest versions the table keeps for time travel."""
        self._name = name
        self._comment = comment
        self._id_from_rowid = id_from_rowid
        self.schema = pa.schema([rowid_field(), *columns], metadata=columns.metadata)
        self._lock = threading.Lock()
        self._data = self.schema.empty_table()
        self._mask: DeletionMask | None = None  # None while no row of _data is deleted
        self._patch = Patch()  # committed UPDATE values not yet written into the columns
        # numpy copy of the rowid column for lookups: built when an UPDATE/DELETE first
        # needs it (a table that only takes INSERTs never pays for it), then kept up to date
        self._rowids: np.ndarray | None = None
        # the buffer _rowids is the front of, whose free tail takes inserted rowids (None
        # when _rowids is an array of its own)
        self._rowid_buffer: np.ndarray | None = None
        self._last_rowid = 0  # the largest committed rowid (the rowid column is sorted)
        self._version = 0  # bumped whenever committed data changes
        # bumped whenever rows already in _data are rewritten (not when rows are appended):
        # a compaction of an older _data is still good for its rows while this stays
        self._rewrites = 0
        self._next_rowid = 1
        self._history = History(versions_kept)
        # the statistics of the committed state (_version, _rewrites) by column
        self._statistics: tuple[tuple[int, int], dict[str, ColumnStats]] = ((-1, -1), {})
        self._history_started = False  # the seed rows are part of version 0
        if rows is not None and rows.num_rows:
            self._seed(rows)
        with self._lock:
            self._record_version()  # version 0: the table as created
            self._history_started = True

    # --- Table ------------------------------------------------------------------------------

    def scan(self, ctx: Context, opts: ScanOptions | None = None) -> pa.RecordBatchReader:
        """The committed rows, batch by batch: deleted rows and the rows DuckDB's pushed-down
        filter rejects are dropped per batch, so a scan never copies the table. With a time
        point, the rows (and columns) of the version it names (history.py)."""
        ctx.raise_if_done()
        point = opts.time_point if opts is not None else None
        mask: DeletionMask | None = None
        if opts is not None and opts.partition:
            version, start, stop = self._part(opts.partition)
            schema, data = version.schema, version.stored_between(start, stop)
            live = version.live(start, stop)
        elif point is not None:
            version = self._version_at(point)
            schema, data, live = version.schema, version.rows(), None
        else:
            # Nothing that can raise between holding the mask and the generator releasing it.
            schema = self.schema
            data, mask, live = self._reading()
        predicate = filters.parse(opts.filter, schema) if opts is not None else None
        expression = filters.arrow_expression(predicate) if predicate else None
        limit = opts.limit if opts is not None and opts.limit > 0 else None
        asked = set(opts.columns) if opts is not None and opts.columns else None
        wanted = (asked or set()) | {rowid_field().name}
        keep = Keep(live, expression)

        def batches() -> Iterator[pa.RecordBatch]:
            # A scan never started keeps its mask held: the next DELETE marks a copy.
            try:
                remaining = limit
                for batch in _scan_sized(data.to_batches(max_chunksize=SCAN_BATCH_ROWS)):
                    ctx.raise_if_done()
                    kept = keep(batch)
                    if remaining is not None:
                        kept = kept.slice(0, remaining)
                        remaining -= kept.num_rows
                    if kept.num_rows:  # full width; the columns not asked for null
                        yield kept if asked is None else full_width(kept, schema, wanted)
                    if remaining == 0:
                        return
            finally:
                self._done_reading(mask)

        return pa.RecordBatchReader.from_batches(schema, batches())

    # --- PartitionedTable: ranges of stored rows of one kept version ------------------------

    def scan_partitions(self, ctx: Context, opts: ScanOptions) -> list[ScanPartition]:
        """Ranges of the stored rows of the version the scan reads (now, or its time
        point), as many as scan_parts.SPLIT says: every part reads that version, whatever is
        committed or compacted meanwhile."""
        with self._lock:
            version = (
                self._history.latest()
                if opts.time_point is None
                else self._history_at(opts.time_point)
            )
        stored = version.data.num_rows
        count = SPLIT.parts(stored, stored)
        bounds = [stored * i // count for i in range(count + 1)]
        parts = []
        for start, stop in zip(bounds, bounds[1:], strict=False):
            live = version.live(start, stop)
            rows = stop - start if live is None else int(np.count_nonzero(live))
            token = json.dumps({"version": version.number, "start": start, "stop": stop})
            parts.append(ScanPartition(token=token, rows=rows))
        return parts

    def _part(self, token: str) -> tuple[Version, int, int]:
        try:
            part = json.loads(token)
            number, start, stop = int(part["version"]), int(part["start"]), int(part["stop"])
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"not a scan part of table {self._name}: {token!r}") from None
        with self._lock:
            version = self._history.number(number)
        if version is None:
            raise TimePointInvalid(
                error=f"version {number} of table {self._name} is no longer kept"
            )
        return version, start, stop

    def _history_at(self, point: TimePoint) -> Version:
        try:
            return self._history.at(point)
        except TimePointError as exc:
            raise TimePointInvalid(error=str(exc)) from None

    # --- StatisticsTable ---------------------------------------------------------------------

    def column_statistics(self, ctx: Context, column_name: str, column_type: str) -> ColumnStats:
        """The column's statistics over the live rows, computed once per committed state."""
        if column_name not in self.schema.names:
            raise NotFound()
        data, mask, live, state = self._reading_state()
        try:
            with self._lock:
                known, by_column = self._statistics
                if known == state and column_name in by_column:
                    return by_column[column_name]
            column = data.column(column_name)
            if live is not None:
                column = column.filter(pa.array(live[: len(column)]))
            stats = arrow_column_stats(column)
        finally:
            self._done_reading(mask)
        with self._lock:
            if self._statistics[0] != state:
                self._statistics = (state, {})
            self._statistics[1][column_name] = stats
        return stats

    # --- DynamicSchemaTable: time travel (history.py) ------------------------------------------

    def schema_for_request(self, ctx: Context, request: SchemaRequest) -> pa.Schema:
        """The schema at request.time_point: the kept version's."""
        if request.time_point is None:
            return self.schema
        return self._version_at(request.time_point).schema

    def _version_at(self, point: TimePoint) -> Version:
        with self._lock:
            return self._history_at(point)

    def _record_version(self) -> None:
        """The committed state is a new version (call with the lock held)."""
        self._history.record(self.schema, self._data, self._patch, self._mask, self._rewrites)

    def rename(self, name: str) -> None:
        """The schema renames its tables (rename_table)."""
        self._name = name

    # --- DynamicTable: column changes (protocol §5; column_changes.py) -----------------------------------

    def add_column(self, ctx: Context, column_schema: pa.Schema, opts: AddColumnOptions) -> None:
        self._alter(column_changes.add_column(column_schema, opts), opts.ignore_not_found)

    def remove_column(self, ctx: Context, name: str, opts: RemoveColumnOptions) -> None:
        self._alter(column_changes.remove_column(name, opts), opts.ignore_not_found)

    def rename_column(
        self, ctx: Context, old_name: str, new_name: str, opts: RenameColumnOptions
    ) -> None:
        self._alter(column_changes.rename_column(old_name, new_name, opts), opts.ignore_not_found)

    def change_column_type(
        self,
        ctx: Context,
        column_schema: pa.Schema,
        expression: str,
        opts: ChangeColumnTypeOptions,
    ) -> None:
        self._alter(
            column_changes.change_column_type(column_schema, expression, opts),
            opts.ignore_not_found,
        )

    def set_not_null(self, ctx: Context, column_name: str, opts: SetNotNullOptions) -> None:
        self._alter(column_changes.set_not_null(column_name, opts), opts.ignore_not_found)

    def drop_not_null(self, ctx: Context, column_name: str, opts: DropNotNullOptions) -> None:
        self._alter(column_changes.drop_not_null(column_name, opts), opts.ignore_not_found)

    def set_default(
        self, ctx: Context, column_name: str, expression: str, opts: SetDefaultOptions
    ) -> None:
        self._alter(
            column_changes.set_default(column_name, expression, opts), opts.ignore_not_found
        )

    def add_field(self, ctx: Context, column_schema: pa.Schema, opts: AddFieldOptions) -> None:
        self._alter(column_changes.add_field(column_schema, opts), opts.ignore_not_found)

    def rename_field(
        self, ctx: Context, column_path: list[str], new_name: str, opts: RenameFieldOptions
    ) -> None:
        self._alter(column_changes.rename_field(column_path, new_name, opts), opts.ignore_not_found)

    def remove_field(self, ctx: Context, column_path: list[str], opts: RemoveFieldOptions) -> None:
        self._alter(column_changes.remove_field(column_path, opts), opts.ignore_not_found)

    def _alter(self, change: column_changes.Change, ignore_not_found: bool) -> None:
        """The committed rows rewritten by change, in one step under the lock; a column or
        field that is not there is no change when ignore_not_found."""
        with self._lock:
            if self._patch.columns:
                self._data, self._patch = materialize(self._data, self._patch), Patch()
            data = self._data
            if self._mask is not None:
                data = data.filter(pa.array(self._mask.live))
            try:
                schema, data = change(self.schema, data)
            except NotFound:
                if ignore_not_found:
                    return
                raise
            self.schema, self._data = schema, data
            self._rewrites += 1
            self._mask, self._rowids, self._rowid_buffer = None, None, None
            self._version += 1
            self._record_version()

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
            rows = sorted_by_rowid(rows, rowid)
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

    def _reading(self) -> tuple[pa.Table, DeletionMask | None, np.ndarray | None]:
        """The committed data with the patch written in (done once, under the lock, so the
        next reader finds it done), its deletion mask, held until _done_reading (no DELETE
        changes a held mask), and the mask's rows as they are now."""
        data, mask, live, _ = self._reading_state()
        return data, mask, live

    def _reading_state(
        self,
    ) -> tuple[pa.Table, DeletionMask | None, np.ndarray | None, tuple[int, int]]:
        """_reading, and which committed state it is (_version, _rewrites after the patch)."""
        with self._lock:
            if self._patch.columns:
                self._data, self._patch = materialize(self._data, self._patch), Patch()
                self._rewrites += 1
            state = (self._version, self._rewrites)
            mask = self._mask
            if mask is None:
                return self._data, None, None, state
            mask.readers += 1
            return self._data, mask, mask.live, state

    def _done_reading(self, mask: DeletionMask | None) -> None:
        if mask is not None:
            with self._lock:
                mask.readers -= 1

    def _index(self) -> np.ndarray:
        """The rowid column as a sorted numpy array (call with the lock held)."""
        if self._rowids is None:
            self._rowids, self._rowid_buffer = rowid_array(self._data), None
        return self._rowids

    def _lookup(self, ids: np.ndarray) -> tuple[Committed, Lookup]:
        with self._lock:
            rowids, live, version = self._index(), live_rows(self._mask), self._version
            committed = Committed(self._data, self._patch)
        # Outside the lock: a DELETE committing meanwhile may change live under this search,
        # but it also bumps the version, so the commit searches again.
        return committed, Lookup(ids, positions_of(rowids, live, ids), version)

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
            if self._history_started:
                self._record_version()
            if self._compaction_pays():
                COMPACTOR.ask(self)

    def _compaction_pays(self) -> bool:
        """Whether the storage is worth rewriting (call with the lock held): many chunks,
        a patch of more than a quarter of the rows, or more dead rows than live ones."""
        data = self._data
        return (
            data.column(0).num_chunks >= MAX_CHUNKS
            or self._patch.rows > max(_PATCH_MIN_ROWS, data.num_rows // 4)
            or (self._mask is not None and self._mask.dead * 2 > data.num_rows)
        )

    def compact(self) -> None:
        """Rewrite the storage (compaction.py). The rewrite is made outside the lock from the
        committed state and swapped in if what it rewrote is still there: rows appended
        meanwhile follow it as they are. Dropping dead rows moves positions, so that rewrite
        is swapped in only if nothing at all committed meanwhile (and the version moves)."""
        with self._lock:
            if not self._compaction_pays():
                return
            data, patch, mask, version = self._data, self._patch, self._mask, self._version
            rewrites = self._rewrites
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
        with self._lock:
            if live is not None:
                if self._version != version or self._data is not data:
                    return  # a commit came first; it asks again if compaction still pays
                self._mask, self._rowids, self._rowid_buffer = None, None, None
                self._version += 1
            elif self._rewrites != rewrites or (patched and self._patch is not patch):
                return  # rows it holds were rewritten, or patched again, meanwhile
            elif self._data.num_rows > data.num_rows:  # appended meanwhile
                compacted = pa.concat_tables([compacted, self._data.slice(data.num_rows)])
            self._data = compacted
            if patched:
                self._patch = Patch()
            self._rewrites += 1

    def _apply_locked(self, pending: _Pending) -> None:
        """Apply pending to the committed state: everything is computed first and assigned
        at the end, except the mask, which an INSERT extends and a DELETE (the last step)
        marks in place; _apply undoes the extension if a later step fails."""
        data, rowids, mask, version = self._data, self._rowids, self._mask, self._version
        patch, buffer, last_rowid = self._patch, self._rowid_buffer, self._last_rowid
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
        self._data, self._rowids, self._mask, self._version = data, rowids, mask, version
        self._patch, self._rowid_buffer, self._last_rowid = patch, buffer, last_rowid
        self._rewrites += rewritten

    # --- shaping input ----------------------------------------------------------------------

    # --- the operations the capability mixins expose ------------------------------------------

    def _insert(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        pending, immediate = self._stage(ctx)
        staged: list[pa.RecordBatch] = []
        for batch in rows:
            ctx.raise_if_done()
            conformed = conform_insert(
                batch, self.schema, self._allocate(batch.num_rows), self._id_from_rowid
            )
            staged.append(conformed)
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
        unread: list[tuple[np.ndarray, dict[str, pa.Array]]] = []
        conform = UpdateColumns(self.schema)
        for ids, values in chunks:
            ctx.raise_if_done()
            columns = conform(values)
            if wanted is None:  # nothing to read back per batch: looked up below, at once
                unread.append((ids, columns))
                continue
            committed, lookup = self._lookup(ids)
            found = lookup.found
            pending.updates.append(Update(lookup, columns))
            all_found = len(found.positions) == len(ids)
            affected += len(found.positions) if all_found else int(found.valid.sum())
            # Only the columns the UPDATE leaves alone are read from the table.
            kept = [name for name in wanted.names if name not in columns]
            arrays = dict(zip(kept, committed.rows_at(found.positions, kept).columns, strict=True))
            valid = None if all_found else pa.array(found.valid)
            for name in wanted.names:
                if name in columns:
                    arrays[name] = columns[name] if valid is None else columns[name].filter(valid)
            returned.append(
                pa.RecordBatch.from_arrays([arrays[n] for n in wanted.names], schema=wanted)
            )
        if unread:
            ids, columns = _joined_updates(unread)
            _, lookup = self._lookup(ids)
            pending.updates.append(Update(lookup, columns))
            affected += int(lookup.found.valid.sum())
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
        unread: list[np.ndarray] = []
        for ids in id_chunks:
            ctx.raise_if_done()
            if wanted is None:  # nothing to read back per batch: looked up below, at once
                unread.append(ids)
                continue
            committed, lookup = self._lookup(ids)
            found = lookup.found
            pending.deletes.append(lookup)
            affected += count_distinct(found.positions)
            returned.append(committed.rows_at(found.positions, wanted.names))
        if unread:
            _, lookup = self._lookup(np.concatenate(unread))
            pending.deletes.append(lookup)
            affected += count_distinct(lookup.found.positions)
        if immediate:
            self._apply(pending)
        return DMLResult(
            affected_rows=affected, returning_data=returning_reader(self.schema, returned, opts)
        )


def _scan_sized(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The batches, runs of small ones joined up to half of SCAN_BATCH_ROWS: until the
    compactor merges them, rows DuckDB inserted are 2,048-row chunks, and a message per
    chunk costs a scan more than copying them into fewer (489 messages for 1M rows: 1.4-2x
    the time of 16)."""
    small: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if batch.num_rows < SCAN_BATCH_ROWS // 2:
            small.append(batch)
            rows += batch.num_rows
            if rows < SCAN_BATCH_ROWS // 2:
                continue
            batch, small, rows = pa.concat_batches(small), [], 0
        elif small:
            yield pa.concat_batches(small)
            small, rows = [], 0
        yield batch
    if small:
        yield pa.concat_batches(small)


def _joined_updates(
    batches: list[tuple[np.ndarray, dict[str, pa.Array]]],
) -> tuple[np.ndarray, dict[str, pa.Array]]:
    """A statement's UPDATE batches (one input, so the same columns) as one: rowids and
    values concatenated, so that its rowids are searched once, in one vectorised pass, not
    once per batch: per-batch Python work holds the GIL that gRPC's thread needs to hand over
    the next batch, so on the statement's path it costs about twice its own time."""
    if len(batches) == 1:
        return batches[0]
    names = batches[0][1].keys()
    return (
        np.concatenate([ids for ids, _ in batches]),
        {name: pa.concat_arrays([columns[name] for _, columns in batches]) for name in names},
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
