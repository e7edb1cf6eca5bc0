"""A Delta table served over Flight: its layout, its scans, and DML staged per statement and
applied as one Delta commit when the statement commits (commits.py).

Each statement is one Delta commit: INSERT batches are staged (as parquet files, past a few
rows) and appended once at commit; UPDATE and DELETE stage rowids and values and commit as one
Delta UPDATE, DELETE or MERGE, whose own metrics give the statement's row count
(Statement.changed_rows). A failure, a rollback, a disconnect or a killed server commits
nothing: staged rows are only ever read by the commit.

Rows are addressed as the table's layout says (layout.py). pyairport's rowid column: the
backend assigns rowids from blocks it claimed in the table's log, which no other writer gives
out (rowid_claims.py). Row tracking: Delta assigns them at
commit. Delta 4.4 takes `_metadata.row_id` in queries but not in UPDATE, DELETE or MERGE
conditions ([DELTA_CANNOT_RESOLVE_COLUMN]), so a row-tracked table's rows are changed by their
values: the rows the rowids name are read at the version the commit starts from, and a
DELETE or MERGE matches them by their first column where no other row holds its values (a
count says so), else by the fewest leading columns that tell them apart and that no other row
holds, else by every column; rows that share every value with another row (which nothing
could tell apart) are refused, not guessed. Delta's UPDATE and MERGE keep the row ids.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa

from airport_contracts import (
    Context,
    DMLOptions,
    DMLResult,
    RowsRefused,
    ScanOptions,
    SchemaRequest,
    TimePoint,
)

from ... import filters
from ..base import BackendTable
from ..shaping import UpdateColumns, conform_insert, returning_reader
from ..time_points import TimePointError, parsed
from . import commit_times, detached, direct, file_parts
from .client_errors import client_errors
from .column_ddl import DeltaColumns
from .commits import DeltaChanges
from .interrupts import interrupted_when_done
from .lake import Lake
from .layout import ROWID, Layout
from .planning import DeltaScanPlanning, StatisticsMemo, pushable, read_version, scan_columns
from .rowid_claims import RowidClaims
from .rowid_counter import RowidCounter
from .scans import Scanner, as_of, log_version
from .staging import STAGE_FILE_ROWS, Pending, distinct_staged, flush, overlay, stage_update

log = logging.getLogger("pyairport.spark")


class SparkTable(BackendTable[Pending], DeltaColumns, DeltaScanPlanning):
    """A Delta table; `with_capabilities` adds the DML interfaces it serves."""

    def __init__(
        self,
        backend: Lake,
        schema_name: str,
        name: str,
        layout: Layout,
        *,
        comment: str = "",
        id_from_rowid: str | None = None,
    ) -> None:
        self.backend = backend
        self.spark = backend.spark
        self.schema_name = schema_name
        self._name = name
        self._comment = comment
        self._id_from_rowid = id_from_rowid
        self.layout = layout
        self._layout_version = (
            log_version(layout.location / "_delta_log") if layout.location else None
        )
        self._label = f"{schema_name}.{name}"  # its name in messages
        self._layout_shape: str | None = None  # direct.shape of the version layout was read at
        self._scanner = Scanner(self.spark)
        # delta-rs reads the table where this process sees its files (direct.py)
        self.snapshots = (
            direct.Snapshots(layout.location)
            if layout.location is not None and backend.shares_files
            else None
        )
        self.rowid_counter = RowidCounter(self._rowid_claims(), lambda: self.fqn)
        self.statistics_memo = StatisticsMemo()
        self.changes = DeltaChanges(
            backend,
            schema_name,
            self._label,
            lambda: self.layout,
            self._files_at,
        )

    @property
    def fqn(self) -> str:
        return self.layout.ident

    @property
    def schema(self) -> pa.Schema:
        return self.layout.schema

    # --- Table ------------------------------------------------------------------------------

    def fresh_layout(self) -> tuple[Layout, int | None]:
        """The layout as of the table's latest version, and that version (None when the log
        cannot be read): another writer may have changed its columns or features (ALTER
        TABLE) since it was read. Spark reads it again only when delta-rs says the version's
        shape changed (a commit of rows changes no layout)."""
        if self.layout.location is None:
            return self.layout, None
        version = log_version(self.layout.location / "_delta_log")
        if version is None or (
            version == self._layout_version
            and (self._layout_shape is not None or self.snapshots is None)
        ):
            return self.layout, version
        latest = self.snapshots.latest(version) if self.snapshots is not None else None
        if latest is None or self.snapshots is None:
            if version != self._layout_version:
                self.reread_layout()
            return self.layout, version
        if self._layout_shape is None:
            # the shape of the version the layout was read at, first needed now: a table
            # opened and then written (CREATE TABLE, then INSERT) is compared through delta-rs
            # rather than read by Spark again
            self._layout_shape = self.snapshots.shape_at(self._layout_version)
        if self.snapshots.shape(latest) != self._layout_shape:
            self.reread_layout()
        else:
            self._layout_version = version
        return self.layout, version

    def reread_layout(self) -> None:
        """Spark's reading of the table's layout, with the version and shape it was read at."""
        latest = self.snapshots.latest() if self.snapshots is not None else None
        self.layout = self.backend.layouts.read(self.layout.ident, self.layout.location)
        if self.layout.location is not None:
            self._layout_version = log_version(self.layout.location / "_delta_log")
        self._layout_shape = (
            self.snapshots.shape(latest)
            if latest is not None and self.snapshots is not None
            else None
        )

    def scan(self, ctx: Context, opts: ScanOptions | None = None) -> pa.RecordBatchReader:
        """The table, full width as the contract asks. Only the columns the client asked for
        (opts.columns, plus the rowid) are read, the others come back null; DuckDB's
        pushed-down filters run where they translate. With a time point, the table as it was
        then (its schema then, too). delta-rs reads it where it can (direct.py), else Spark."""
        ctx.raise_if_done()
        layout, version = self.fresh_layout()
        point = opts.time_point if opts is not None else None
        limit = opts.limit if opts is not None and opts.limit > 0 else 0
        with self.client_errors("scan"):
            snapshot = self.direct_snapshot(layout, point, version)
            schema = (
                layout.schema
                if point is None or snapshot is not None
                else self._scanner.schema_at(layout, as_of(point))
            )
            wanted = scan_columns(layout, schema, opts, by_delta_rs=snapshot is not None)
            # Not pushed down: columns stored as another type (stored_types.py); DuckDB
            # filters them itself.
            predicate = (
                filters.parse(opts.filter, pushable(layout, schema)) if opts is not None else None
            )
            if opts is not None and opts.partition:
                return self._read_part(ctx, layout, opts.partition, wanted, predicate, limit)
            if snapshot is not None and not wanted and predicate is None and not limit:
                count = self.snapshots.row_count(snapshot) if self.snapshots else None
                if count is not None:  # counted from the log: no file is read
                    return direct.null_rows(schema, count)
            # a row-tracked table's row ids come from its log and files, or else from Spark
            tracked_ids = layout.rowids == "tracked" and ROWID in wanted
            if snapshot is not None and self.snapshots is not None:
                files = self.part_files(layout, snapshot) if tracked_ids else None
                if not tracked_ids or files is not None:
                    return read_version(
                        ctx, self.snapshots, layout, snapshot, wanted, predicate, limit, files
                    )
            return self._scanner.scan(
                ctx, layout, schema, wanted, predicate, limit, point, self.rowid_counter.peek
            )

    def detached_part(self, ctx: Context, opts: ScanOptions) -> bytes | None:
        """The plan of the scan part opts.partition names, for a data worker to read without
        Spark or this process (detached.py); None for a scan delta-rs does not read by parts
        here (Spark's, or a folder elsewhere)."""
        ctx.raise_if_done()
        layout, _ = self.fresh_layout()
        if not opts.partition or layout.location is None or self.snapshots is None:
            return None
        wanted = scan_columns(layout, layout.schema, opts, by_delta_rs=True)
        return detached.DetachedPart(layout, opts.partition, wanted, opts.filter).encode()

    def direct_snapshot(
        self, layout: Layout, point: TimePoint | None = None, latest: int | None = None
    ) -> Any:
        """The version to read (the latest, or the time point's) as delta-rs opened it, when
        delta-rs reads it as Spark would and it has today's shape (so today's schema); None
        when Spark reads it. latest: the latest version if just read from the log."""
        if self.snapshots is None:
            return None
        if point is None:
            snapshot = self.snapshots.latest(latest)
        else:
            at = parsed(point)  # the time point's text checked: the client's error, its words
            version = at if isinstance(at, int) else self._version_at(layout, at)
            if version is None:
                return None  # Spark finds the timestamp's version, or says why there is none
            snapshot = self.snapshots.at(version)
            if snapshot is not None and self.snapshots.files_gone(snapshot):
                # else the read fails half-way, INTERNAL; it would with Spark too
                raise TimePointError(
                    f"version {version} can no longer be read: VACUUM removed its data files"
                )
        if snapshot is None or not direct.readable(snapshot, layout.features):
            return None
        if self.snapshots.shape(snapshot) != self._layout_shape:
            return None  # another shape (a past one, or a commit since the layout was read)
        if (
            self.snapshots.misread_timestamps(snapshot, layout.schema)
            and self.part_files(layout, snapshot) is None
        ):
            return None  # neither delta-rs nor pyarrow reads its timestamps exactly here
        return snapshot

    def _version_at(self, layout: Layout, moment: datetime) -> int | None:
        """The version a timestamp names, where the log's commit times say it as Delta
        would (commit_times.py)."""
        assert self.snapshots is not None
        return commit_times.version_at(
            self.snapshots.location / "_delta_log", moment, layout.properties
        )

    def schema_for_request(self, ctx: Context, request: SchemaRequest) -> pa.Schema:
        """The schema at request.time_point (Delta keeps every version's)."""
        layout, _ = self.fresh_layout()
        if request.time_point is None:
            return layout.schema
        with self.client_errors("scan"):
            if self.direct_snapshot(layout, request.time_point) is not None:
                return layout.schema  # the version has today's shape
            return self._scanner.schema_at(layout, as_of(request.time_point))

    def to_table(self) -> pa.Table:
        """The committed rows ordered by rowid (for tests and tools)."""
        table = self.scan(Context.background()).read_all()
        return table.sort_by(ROWID) if ROWID in table.column_names else table

    @property
    def num_rows(self) -> int:
        return int(self.spark.sql(f"SELECT count(*) FROM {self.fqn}").first()[0])

    @contextmanager
    def client_errors(self, operation: str) -> Iterator[None]:
        """Spark's failures on this table as a client may see them (client_errors.py)."""
        with client_errors(operation, self.fqn):
            yield

    def _files_at(self, version: int) -> file_parts.PartFiles | None:
        """What reading the table's files at version one by one needs, where delta-rs reads
        that version as it is served now (planning.part_files), else None."""
        layout, _ = self.fresh_layout()  # the shape delta-rs' version must have, known
        snapshot = self.direct_snapshot(layout, None, version)
        if snapshot is None or snapshot.version() != version:
            return None
        return self.part_files(layout, snapshot)

    # --- rowids and staging --------------------------------------------------------------------

    def _rowid_claims(self) -> RowidClaims:
        """Claims of rowid blocks (rowid_claims.py), read from the table's log folder where
        this server reads it and Delta keeps every commit there (no catalog holds them)."""
        features = self.layout.features
        local = self.snapshots is not None and not any(
            f.startswith(direct.COMMITS_ELSEWHERE) for f in features
        )
        latest = self.snapshots.latest if local and self.snapshots is not None else None
        return RowidClaims(self.backend, self._label, lambda: self.layout, latest)

    def _allocate(self, count: int) -> np.ndarray | None:
        """Rowids for new rows of a table with pyairport's rowid column (None otherwise)."""
        return self.rowid_counter.allocate(count) if self.layout.rowids == "column" else None

    def _new_pending(self) -> Pending:
        return Pending(self.backend.staging / uuid.uuid4().hex)

    def _discard_pending(self, pending: Pending) -> None:
        shutil.rmtree(pending.directory, ignore_errors=True)

    def _commit_pending(self, ctx: Context, pending: Pending) -> int | None:
        """The statement's one Delta commit; Spark's work stops if the call ends first
        (interrupts.py)."""
        try:
            with interrupted_when_done(self.spark, ctx):
                return self.changes.commit(pending)
        finally:
            self._discard_pending(pending)  # committed or failed, the staged files are done with

    def _finish_now(self, ctx: Context, pending: Pending, immediate: bool) -> int | None:
        """Commit now when the call is outside any statement: the rows changed, if counted."""
        return self._commit_pending(ctx, pending) if immediate else None

    def _by_rowid_result(
        self,
        ctx: Context,
        pending: Pending,
        immediate: bool,
        affected_rows: int,
        staged: list[np.ndarray],
        returned: list[pa.RecordBatch],
        opts: DMLOptions | None,
    ) -> DMLResult:
        """An UPDATE's or DELETE's result. With RETURNING, affected counts the rows read;
        without, no row is read before the commit, which counts them (Statement.changed_rows):
        until then it is at most the distinct rowids given."""
        if not (opts is not None and opts.returning):
            affected_rows = distinct_staged(staged)
        counted = self._finish_now(ctx, pending, immediate)
        return DMLResult(
            affected_rows=affected_rows if counted is None else counted,
            returning_data=returning_reader(self.schema, returned, opts),
        )

    # --- the operations the capability mixins expose ------------------------------------------

    def insert_rows(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        pending, immediate = self._stage(ctx)
        stored = self.layout.stored
        count, returned = 0, []
        try:
            for batch in rows:
                ctx.raise_if_done()
                ids = self._allocate(batch.num_rows)
                staged = conform_insert(batch, stored, ids, self._id_from_rowid)
                self._no_variant_value(staged)
                shown = staged
                if opts is not None and opts.returning:
                    with self.client_errors("insert"):
                        staged, shown = self._as_delta_fills(staged)
                for name in self.layout.computed:  # Delta fills them where none was given
                    if staged.column(name).null_count < staged.num_rows:
                        pending.given.add(name)
                pending.buffer.append(staged)
                pending.buffered_rows += staged.num_rows
                if pending.buffered_rows >= STAGE_FILE_ROWS:
                    flush(pending)
                count += staged.num_rows
                if opts is not None and opts.returning:
                    returned.append(shown)
            self._finish_now(ctx, pending, immediate)
        except BaseException:
            if immediate:
                self._discard_pending(pending)
            raise
        return DMLResult(
            affected_rows=count, returning_data=returning_reader(self.schema, returned, opts)
        )

    def _as_delta_fills(self, staged: pa.RecordBatch) -> tuple[pa.RecordBatch, pa.RecordBatch]:
        """An INSERT … RETURNING batch as it is to be written, and as RETURNING shows it: the
        columns it leaves to Delta (NULL in every row) as Delta fills them, since RETURNING's
        rows are sent before the statement commits. A DEFAULT is evaluated here and written,
        so the row stored is the row returned; a generated column is computed from the row as
        Delta will; an IDENTITY column Delta numbers only at the commit, so it is refused."""
        if not staged.num_rows:
            return staged, staged
        left = {n for n in staged.schema.names if staged.column(n).null_count == staged.num_rows}
        layout = self.layout
        numbered = sorted(layout.identities & left)
        if numbered:
            raise RowsRefused(
                operation="INSERT",
                reason=f"RETURNING cannot show IDENTITY column {numbered[0]}: Delta numbers it"
                " at the commit, after RETURNING's rows are sent (INSERT, then read the new rows)",
            )
        defaults = {n: text for n, text in layout.defaults if n in left}
        if defaults:
            staged = _with_values(staged, self.changes.evaluated(staged, defaults))
        generated = {n: text for n, text in layout.generated if n in left}
        if not generated:
            return staged, staged
        return staged, _with_values(staged, self.changes.evaluated(staged, generated))

    def _no_variant_value(self, staged: pa.RecordBatch) -> None:
        """A VARIANT column is read as Spark serves it (its value and metadata, encoded), but
        Spark turns no Arrow value into a variant: an INSERT leaves it NULL; a value for one
        is refused before anything is staged."""
        for name in self.layout.variants.intersection(staged.schema.names):
            if staged[name].null_count < staged.num_rows:
                raise _variant_refused("INSERT", name)

    def _as_stored_dropped(
        self, ids: np.ndarray, columns: dict[str, pa.Array], current: pa.Table
    ) -> dict[str, pa.Array]:
        """columns without those Delta gives the values of (IDENTITY and generated columns)
        or Spark takes none of from Arrow (VARIANT) where they hold the rows' stored values:
        DuckDB sends every column of an UPDATE … RETURNING, not only those SET, and Delta
        refuses to set an IDENTITY column, or a generated one to what its expression no longer
        gives. Changed, a VARIANT or IDENTITY column is refused; a generated one is Delta's to
        check. current: the rows' stored values (of these columns at least)."""
        sent = overlay(current, ids, columns, ROWID)  # current's rows, in its order
        kept = dict(columns)
        for name in self._given_by_delta.intersection(columns):
            if not sent.column(name).equals(current.column(name)):
                if name in self.layout.variants:
                    raise _variant_refused("UPDATE", name)
                if name in self.layout.identities:
                    raise RowsRefused(
                        operation="UPDATE",
                        reason=f"column {name} is an IDENTITY column: Delta gives its values,"
                        " an UPDATE may not change them",
                    )
                continue
            del kept[name]
        return kept

    @property
    def _given_by_delta(self) -> frozenset[str]:
        layout = self.layout
        return layout.variants | layout.identities | {n for n, _ in layout.generated}

    def update_rows(
        self,
        ctx: Context,
        chunks: Iterable[tuple[np.ndarray, pa.RecordBatch]],
        opts: DMLOptions | None,
    ) -> DMLResult:
        pending, immediate = self._stage(ctx)
        returning = opts is not None and opts.returning
        affected_rows, returned, staged = 0, [], []
        conform = UpdateColumns(self.schema)
        stored = self.layout.stored if self.backend.shares_files else None  # files Spark reads
        for ids, values in chunks:
            ctx.raise_if_done()
            columns = conform(values)
            given = sorted(self._given_by_delta.intersection(columns))
            # RETURNING needs each batch's rows now, a column Delta gives their values; else none
            if returning or given:
                with self.client_errors("update"):
                    current = self.changes.rows_for(
                        ids, columns=None if returning else [ROWID, *given]
                    )
                if given:
                    columns = self._as_stored_dropped(ids, columns, current)
            stage_update(pending, ids, columns, stored)
            staged.append(ids)
            if returning:
                affected_rows += current.num_rows
                rows = overlay(current, ids, columns, ROWID)
                if any(n not in columns for n, _ in self.layout.generated):
                    with self.client_errors("update"):
                        rows = self.changes.regenerated(rows)  # as Delta will compute them
                returned.extend(rows.to_batches())
        return self._by_rowid_result(ctx, pending, immediate, affected_rows, staged, returned, opts)

    def delete_rows(
        self, ctx: Context, id_chunks: Iterable[np.ndarray], opts: DMLOptions | None
    ) -> DMLResult:
        pending, immediate = self._stage(ctx)
        returning = opts is not None and opts.returning
        affected_rows, returned, staged = 0, [], []
        for ids in id_chunks:
            ctx.raise_if_done()
            pending.deletes.append(ids)
            staged.append(ids)
            if returning:
                with self.client_errors("delete"):
                    current = self.changes.rows_for(ids)
                affected_rows += current.num_rows
                returned.extend(current.to_batches())
        return self._by_rowid_result(ctx, pending, immediate, affected_rows, staged, returned, opts)


def _with_values(batch: pa.RecordBatch, values: dict[str, pa.Array]) -> pa.RecordBatch:
    """batch with the columns named in values replaced by them (of the same types)."""
    columns = [values.get(n, batch.column(n)) for n in batch.schema.names]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _variant_refused(operation: str, name: str) -> RowsRefused:
    return RowsRefused(
        operation=operation,
        reason=f"column {name} is VARIANT, which Spark takes no value of over Arrow: an INSERT"
        " may leave it out (NULL), an UPDATE may not change it",
    )
