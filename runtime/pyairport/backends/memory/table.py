"""The memory table: name, schema, scans, and each DML statement staged in its scope and
applied at commit to its committed rows (committed.py; storage.py, patch.py and mask.py hold
the layers those are kept in)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
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
    RemoveColumnOptions,
    RemoveFieldOptions,
    RenameColumnOptions,
    RenameFieldOptions,
    ScanOptions,
    ScanPartition,
    SchemaRequest,
    SetDefaultOptions,
    SetNotNullOptions,
    TimePointInvalid,
    rowid_field,
)

from ... import filters
from ..base import BackendTable
from ..capabilities import ALL_CAPABILITIES, with_capabilities
from ..scan_parts import SPLIT, part_count, part_fields
from ..shaping import (
    UpdateColumns,
    conform_insert,
    full_width,
    null_batch,
    returning_reader,
    returning_schema,
)
from . import column_changes
from .committed import CommittedRows, Pending
from .history import DEFAULT_VERSIONS_KEPT, Version
from .mask import DeletionMask
from .patch import Update
from .storage import Keep, count_distinct, sorted_by_rowid

SCAN_BATCH_ROWS = 65_536


class MemoryTable(BackendTable[Pending]):
    """Table: name, comment, schema, scans, and each statement's changes staged, then applied
    to its committed rows (committed.py) at commit."""

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
        schema = pa.schema([rowid_field(), *columns], metadata=columns.metadata)
        self.store = CommittedRows(schema, versions_kept)
        if rows is not None and rows.num_rows:
            self._seed(rows)
        self.store.start_history()  # version 0: the table as created

    @property
    def schema(self) -> pa.Schema:
        """The table's schema now (a column change replaces it)."""
        return self.store.schema

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
            version = self.store.version_at(point)
            schema, data, live = version.schema, version.rows(), None
        else:
            # Nothing that can raise between holding the mask and the generator releasing it.
            schema = self.schema
            read = self.store.reading()
            data, mask, live = read.data, read.mask, read.live
        predicate = filters.parse(opts.filter, schema) if opts is not None else None
        expression = filters.arrow_expression(predicate) if predicate else None
        limit = opts.limit if opts is not None and opts.limit > 0 else None
        asked = set(opts.columns) if opts is not None and opts.columns else None
        wanted = (asked or set()) | {rowid_field().name}
        keep = Keep(live, expression)
        # a count: its rows, no values (with a filter, a forged ticket's, the rows are read)
        counted = opts is not None and opts.rows_only and expression is None

        def batches() -> Iterator[pa.RecordBatch]:
            # A scan never started keeps its mask held: the next DELETE marks a copy.
            try:
                remaining = limit
                for batch in _scan_sized(data.to_batches(max_chunksize=SCAN_BATCH_ROWS)):
                    ctx.raise_if_done()
                    # a count keeps rows, not values: the mask filters no column
                    kept = keep(batch.select([]) if counted else batch)
                    if remaining is not None:
                        kept = kept.slice(0, remaining)
                        remaining -= kept.num_rows
                    if counted and kept.num_rows:
                        yield null_batch(schema, kept.num_rows)
                    elif kept.num_rows:  # full width; the columns not asked for null
                        yield kept if asked is None else full_width(kept, schema, wanted)
                    if remaining == 0:
                        return
            finally:
                self.store.done_reading(mask)

        return pa.RecordBatchReader.from_batches(schema, batches())

    # --- PartitionedTable: ranges of stored rows of one kept version ------------------------

    def scan_partitions(self, ctx: Context, opts: ScanOptions) -> list[ScanPartition]:
        """Ranges of the stored rows of the version the scan reads (now, or its time
        point), as many as scan_parts.SPLIT says: every part reads that version, whatever is
        committed or compacted meanwhile; a scan of one part is the whole scan."""
        version = self.store.version_at(opts.time_point)
        stored = version.data.num_rows
        count = SPLIT.parts(stored, stored)
        if count == 1:  # one part pins nothing: its DoGet reads the table as a scan does, not
            # a version the table may no longer keep once writers commit more than it keeps
            live = version.live(0, stored)
            return [ScanPartition(token="", rows=stored if live is None else int(live.sum()))]
        bounds = [stored * i // count for i in range(count + 1)]
        parts = []
        for start, stop in zip(bounds, bounds[1:], strict=False):
            live = version.live(start, stop)
            rows = stop - start if live is None else int(np.count_nonzero(live))
            token = json.dumps({"version": version.number, "start": start, "stop": stop})
            parts.append(ScanPartition(token=token, rows=rows))
        return parts

    def _part(self, token: str) -> tuple[Version, int, int]:
        part = part_fields(token)
        number = part_count(part, "version", self.store.latest_number())  # none not yet made
        version = self.store.kept_version(number)
        if version is None:
            raise TimePointInvalid(
                error=f"version {number} of table {self._name} is no longer kept"
            )
        stop = part_count(part, "stop", version.data.num_rows)
        return version, part_count(part, "start", stop), stop

    # --- StatisticsTable ---------------------------------------------------------------------

    def column_statistics(self, ctx: Context, column_name: str, column_type: str) -> ColumnStats:
        """The column's statistics over the live rows, computed once per committed state."""
        return self.store.column_stats(column_name)

    # --- DynamicSchemaTable: time travel (history.py) ------------------------------------------

    def schema_for_request(self, ctx: Context, request: SchemaRequest) -> pa.Schema:
        """The schema at request.time_point: the kept version's."""
        if request.time_point is None:
            return self.schema
        return self.store.version_at(request.time_point).schema

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
        self.store.alter(change, ignore_not_found)

    @property
    def num_rows(self) -> int:
        return self.store.num_rows

    def to_table(self) -> pa.Table:
        """The committed rows (rowid first), for tests and tools."""
        return self.store.snapshot()

    # --- storage (committed.py) ------------------------------------------------------------

    def _seed(self, rows: pa.Table) -> None:
        rowid = self.schema[0].name
        if rowid in rows.column_names:
            rows = sorted_by_rowid(rows, rowid)
            ids = rows.column(rowid).to_numpy()
        else:
            ids = self.store.allocate(rows.num_rows)
        batch = conform_insert(
            rows.combine_chunks().to_batches()[0],
            self.schema,
            np.asarray(ids, dtype=np.int64),
            self._id_from_rowid,
        )
        self.store.apply(Pending(inserts=[batch]))

    def _new_pending(self) -> Pending:
        return Pending()

    def _commit_pending(self, ctx: Context, pending: Pending) -> None:
        self.store.apply(pending)

    # --- the operations the capability mixins expose ------------------------------------------

    def insert_rows(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        pending, immediate = self._stage(ctx)
        staged: list[pa.RecordBatch] = []
        for batch in rows:
            ctx.raise_if_done()
            conformed = conform_insert(
                batch, self.schema, self.store.allocate(batch.num_rows), self._id_from_rowid
            )
            staged.append(conformed)
        pending.inserts.extend(staged)
        if immediate:
            self.store.apply(pending)
        return DMLResult(
            affected_rows=sum(b.num_rows for b in staged),
            returning_data=returning_reader(self.schema, staged, opts),
        )

    def update_rows(
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
            committed, lookup = self.store.lookup(ids)
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
            _, lookup = self.store.lookup(ids)
            pending.updates.append(Update(lookup, columns))
            affected += int(lookup.found.valid.sum())
        if immediate:
            self.store.apply(pending)
        return DMLResult(
            affected_rows=affected, returning_data=returning_reader(self.schema, returned, opts)
        )

    def delete_rows(
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
            committed, lookup = self.store.lookup(ids)
            found = lookup.found
            pending.deletes.append(lookup)
            affected += count_distinct(found.positions)
            returned.append(committed.rows_at(found.positions, wanted.names))
        if unread:
            _, lookup = self.store.lookup(np.concatenate(unread))
            pending.deletes.append(lookup)
            affected += count_distinct(lookup.found.positions)
        if immediate:
            self.store.apply(pending)
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
