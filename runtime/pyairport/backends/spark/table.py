"""A Delta table served over Flight: scans, and DML staged per statement and applied as one
Delta commit when the statement commits.

Each statement is one Delta commit: INSERT batches are staged as parquet files and appended
once at commit; UPDATE and DELETE stage rowids and values and commit as one Delta UPDATE,
DELETE or MERGE, whose own metrics give the statement's row count (Statement.changed_rows). A
failure, a rollback, a disconnect or a killed server commits nothing: staged files are only
ever read by the commit.

Rows are addressed as the table's layout says (layout.py). pyairport's rowid column: the
backend assigns rowids (max(rowid)+1 at first use, then a counter), checked at commit against
what other writers committed meanwhile. Row tracking: Delta assigns them at commit. Delta 4.4
takes `_metadata.row_id` in queries but not in UPDATE, DELETE or MERGE conditions
([DELTA_CANNOT_RESOLVE_COLUMN]), so a row-tracked table's rows are changed by their values:
the rows the rowids name are read at the version the commit starts from, and a MERGE matches
them by their first column where no other row holds its values (one semi join says so), else
by every column; rows that share every value with another row (which nothing could tell
apart) are refused, not guessed. Delta's UPDATE and MERGE keep the row ids.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airport_contracts import (
    AirportError,
    Context,
    DMLOptions,
    DMLResult,
    EngineUnavailable,
    RowsRefused,
    ScanOptions,
    SchemaRequest,
    TimePoint,
    TimePointInvalid,
)

from ... import filters
from ..arrow_convert import convert
from ..base import BackendTable
from ..shaping import UpdateColumns, conform_insert, full_width, returning_reader
from ..time_points import TimePointError
from . import direct, file_parts
from .ddl import DeltaColumns
from .lake import Lake
from .layout import ROWID, Layout, read_layout
from .planning import DeltaScanPlanning
from .scans import Scanner, as_of, log_version
from .session import SPARK_STOPPED, engine_lost
from .sql import affected, client_cause, one_line, quote, sql_literal
from .staging import (
    STAGE_FILE_ROWS,
    Pending,
    distinct_count,
    flush,
    overlay,
    update_frame,
)

log = logging.getLogger("pyairport.spark")
T = TypeVar("T")

COMMIT_ATTEMPTS = 4
# Statements this small run as Spark's own UPDATE/DELETE with the rowids in the statement, as
# a SQL user would type them, and read rows by a filter Delta can skip files with; larger
# ones join or MERGE against the rowids sent as a view. (A MERGE and a join cost Spark
# several jobs more than the statement itself: most of a one-row statement's time. A long
# IN list costs more to plan than the join: 10,000 rowids took three times the MERGE's time.)
INLINE_ROWIDS = 100
INLINE_UPDATE_ROWS = 64  # rows whose values differ per row, one CASE branch each
ROWIDS_TAKEN = "pyairport: rowids taken by another writer"  # SQL text: no quotes


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
        self._layout_shape: str | None = None  # direct.shape of the version layout was read at
        self._next_rowid: int | None = None
        self._lock = threading.Lock()  # rowid allocation and commits of this table
        self._scanner = Scanner(self.spark)
        # delta-rs reads the table where this process sees its files (direct.py)
        self.snapshots = (
            direct.Snapshots(layout.location)
            if layout.location is not None and backend.shares_files
            else None
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
        if latest is None:
            if version != self._layout_version:
                self.reread_layout()
        elif self._layout_shape is None and version == self._layout_version:
            self._layout_shape = direct.shape(latest)  # of the version the layout was read at
        elif direct.shape(latest) != self._layout_shape:
            self.reread_layout()
        else:
            self._layout_version = version
        return self.layout, version

    def reread_layout(self) -> None:
        """Spark's reading of the table's layout, with the version and shape it was read at."""
        latest = self.snapshots.latest() if self.snapshots is not None else None
        self.layout = read_layout(self.spark, self.layout.ident)
        if self.layout.location is not None:
            self._layout_version = log_version(self.layout.location / "_delta_log")
        self._layout_shape = direct.shape(latest) if latest is not None else None

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
            # The rowid comes along where it is a stored column; a row-tracked table's are
            # computed file by file, in order, so only when asked for (DuckDB asks by its own
            # column id), and the rest of the scan stays on delta-rs' parallel reader.
            tracked = layout.rowids == "tracked"
            wanted = [
                n
                for n in schema.names
                if opts is None
                or not opts.columns
                or n in opts.columns
                or (n == ROWID and not tracked)
            ]
            if opts is not None and opts.rows_only:  # Spark's SELECT needs one column
                wanted = [] if snapshot is not None or opts.partition else wanted[:1]
            # Not pushed down: columns stored as another type (stored_types.py); DuckDB
            # filters them itself.
            pushable = pa.schema([f for f in schema if f.name not in layout.retyped])
            predicate = filters.parse(opts.filter, pushable) if opts is not None else None
            if opts is not None and opts.partition:
                return self._read_part(ctx, layout, opts.partition, wanted, predicate, limit)
            if snapshot is not None and not wanted and predicate is None and not limit:
                count = self.snapshots.row_count(snapshot) if self.snapshots else None
                if count is not None:  # counted from the log: no file is read
                    return direct.null_rows(schema, count)
            if snapshot is not None and not (layout.rowids == "tracked" and ROWID in wanted):
                return direct.read(ctx, snapshot, schema, wanted, predicate, limit)
            files = self.part_files(layout, snapshot) if snapshot is not None else None
            if files is not None:  # a row-tracked table's row ids, from its log and files
                every = list(range(files.files.num_rows))
                return file_parts.read(ctx, files, every, wanted, predicate, limit)
            return self._scanner.scan(
                ctx, layout, schema, wanted, predicate, limit, point, self._peek_next_rowid
            )

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
        elif point.unit.lower() == "version":
            as_of(point)  # the version's text checked: the client's error, in its words
            snapshot = self.snapshots.at(int(point.value.strip()))
        else:
            return None  # a timestamp: Spark finds the version as Delta defines it
        if snapshot is None or not direct.readable(snapshot, layout.features):
            return None
        if direct.shape(snapshot) != self._layout_shape:
            return None  # another shape (a past one, or a commit since the layout was read)
        return snapshot

    def schema_for_request(self, ctx: Context, request: SchemaRequest) -> pa.Schema:
        """The schema at request.time_point (Delta keeps every version's)."""
        layout, _ = self.fresh_layout()
        if request.time_point is None:
            return layout.schema
        with self.client_errors("scan"):
            if self.direct_snapshot(layout, request.time_point) is not None:
                return layout.schema  # the version has today's shape
            return self._scanner.schema_at(layout, as_of(request.time_point))

    def _peek_next_rowid(self) -> int | None:
        with self._lock:
            return self._next_rowid

    def to_table(self) -> pa.Table:
        """The committed rows ordered by rowid (for tests and tools)."""
        table = self.scan(Context.background()).read_all()
        return table.sort_by(ROWID) if ROWID in table.column_names else table

    @property
    def num_rows(self) -> int:
        return int(self.spark.sql(f"SELECT count(*) FROM {self.fqn}").first()[0])

    @contextmanager
    def client_errors(self, operation: str) -> Iterator[None]:
        """Spark's failures as a client may see them: the client's own (a constraint, a
        time point that does not exist) as INVALID_ARGUMENT, the rest as one line; the plan
        and the stack only in the server's log."""
        try:
            yield
        except TimePointError as exc:
            raise TimePointInvalid(error=str(exc)) from None
        except (AirportError, ValueError, TypeError):
            raise
        except Exception as exc:
            log.error("%s on %s failed", operation, self.fqn, exc_info=exc)
            if engine_lost(exc):
                raise EngineUnavailable(error=SPARK_STOPPED) from None
            cause = client_cause(exc)
            if cause == "time point":
                raise TimePointInvalid(error=one_line(exc)) from None
            if cause == "rows":
                raise RowsRefused(operation=operation.upper(), reason=one_line(exc)) from None
            raise RuntimeError(one_line(exc)) from None

    # --- rowids and staging --------------------------------------------------------------------

    def _allocate(self, count: int) -> np.ndarray | None:
        """Rowids for new rows of a table with pyairport's rowid column (None otherwise)."""
        if self.layout.rowids != "column":
            return None
        with self._lock:
            if self._next_rowid is None:
                with self.client_errors("insert"):
                    query = self.spark.sql(f"SELECT max({quote(ROWID)}) FROM {self.fqn}")
                    (largest,) = query.first()
                self._next_rowid = (largest or 0) + 1
            start = self._next_rowid
            self._next_rowid += count
        return np.arange(start, start + count, dtype=np.int64)

    def _new_pending(self) -> Pending:
        return Pending(self.backend.staging / uuid.uuid4().hex)

    def _discard_pending(self, pending: Pending) -> None:
        shutil.rmtree(pending.directory, ignore_errors=True)

    def _commit_pending(self, pending: Pending) -> int | None:
        try:
            return self._commit(pending)
        finally:
            self._discard_pending(pending)  # committed or failed, the staged files are done with

    def _finish_now(self, pending: Pending, immediate: bool) -> int | None:
        """Commit now when the call is outside any statement: the rows changed, if counted."""
        return self._commit_pending(pending) if immediate else None

    def _by_rowid_result(
        self,
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
            affected_rows = distinct_count(staged)
        counted = self._finish_now(pending, immediate)
        return DMLResult(
            affected_rows=affected_rows if counted is None else counted,
            returning_data=returning_reader(self.schema, returned, opts),
        )

    def _with_rowids(self, ids: np.ndarray, clause: str = "") -> Any:
        """The rows with these rowids (at a version), as a DataFrame with a rowid column: a
        filter for few rowids (Delta skips the files whose rowid range holds none), a join
        with them for many."""
        distinct = np.unique(ids)
        columns = ", ".join(
            f"{self.layout.rowid_sql} AS {quote(ROWID)}" if n == ROWID else quote(n)
            for n in self.schema.names
        )
        table = self.spark.sql(f"SELECT {columns} FROM {self.fqn}{clause}")
        if len(distinct) <= INLINE_ROWIDS:
            return table.where(table[ROWID].isin([int(i) for i in distinct]))
        keys = self.spark.createDataFrame(pa.table({ROWID: pa.array(distinct, pa.int64())}))
        return keys.join(table, ROWID)

    def _rows_for(self, ids: np.ndarray, clause: str = "") -> pa.Table:
        """The committed rows with these rowids (table schema; order not kept)."""
        if not len(ids):
            return self.schema.empty_table()
        frame = self._with_rowids(ids, clause).select(*[quote(n) for n in self.schema.names])
        read = frame.toArrow()
        served = [full_width(b, self.schema, self.schema.names) for b in read.to_batches()]
        return pa.Table.from_batches(served, schema=self.schema)

    # --- the operations the capability mixins expose ------------------------------------------

    def _insert(
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
                if ids is not None and len(ids):
                    low, high = pending.rowids or (int(ids[0]), int(ids[-1]))
                    pending.rowids = (min(low, int(ids[0])), max(high, int(ids[-1])))
                for name in self.layout.computed:  # Delta fills them where none was given
                    if staged.column(name).null_count < staged.num_rows:
                        pending.given.add(name)
                pending.buffer.append(staged)
                pending.buffered_rows += staged.num_rows
                if pending.buffered_rows >= STAGE_FILE_ROWS:
                    flush(pending)
                count += staged.num_rows
                if opts is not None and opts.returning:
                    returned.append(staged)
            self._finish_now(pending, immediate)
        except BaseException:
            if immediate:
                self._discard_pending(pending)
            raise
        return DMLResult(
            affected_rows=count, returning_data=returning_reader(self.schema, returned, opts)
        )

    def _update(
        self,
        ctx: Context,
        chunks: Iterable[tuple[np.ndarray, pa.RecordBatch]],
        opts: DMLOptions | None,
    ) -> DMLResult:
        pending, immediate = self._stage(ctx)
        returning = opts is not None and opts.returning
        affected_rows, returned, staged = 0, [], []
        conform = UpdateColumns(self.schema)
        for ids, values in chunks:
            ctx.raise_if_done()
            columns = conform(values)
            pending.updates.append((ids, columns))
            staged.append(ids)
            if returning:  # RETURNING needs each batch's rows now; otherwise none are read
                with self.client_errors("update"):
                    current = self._rows_for(ids)
                affected_rows += current.num_rows
                returned.extend(overlay(current, ids, columns, ROWID).to_batches())
        return self._by_rowid_result(pending, immediate, affected_rows, staged, returned, opts)

    def _delete(
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
                    current = self._rows_for(ids)
                affected_rows += current.num_rows
                returned.extend(current.to_batches())
        return self._by_rowid_result(pending, immediate, affected_rows, staged, returned, opts)

    # --- commit: one Delta commit per kind of change (a statement has one kind) --------------

    def _commit(self, pending: Pending) -> int | None:
        """Apply the staged changes; the rows an UPDATE or DELETE changed, as Delta counted them
        (an INSERT's count is known before: None)."""
        flush(pending)
        with self._lock:
            if pending.files:
                with self.client_errors("insert"):
                    self._append(pending)
            if pending.updates:
                with self.client_errors("update"):
                    return self._retrying(lambda: self._apply_updates(pending.updates))
            if pending.deletes:
                with self.client_errors("delete"):
                    ids = np.unique(np.concatenate(pending.deletes))
                    return self._retrying(lambda: self._apply_deletes(ids))
        return None

    def _retrying(self, commit: Callable[[], T]) -> T:
        """Delta's optimistic concurrency decides; a conflict with another writer is retried."""
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            try:
                return commit()
            except Exception as exc:
                if (
                    "Concurrent" not in type(exc).__name__ + str(exc)[:200]
                    or attempt == COMMIT_ATTEMPTS
                ):
                    raise
                log.warning("Delta commit conflict on %s (attempt %d), retrying", self.fqn, attempt)
                time.sleep(0.05 * attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _append(self, pending: Pending) -> None:
        """One INSERT … SELECT of the staged rows, by column name (partitions and renamed
        columns land where Spark puts them; generated and identity columns no row set are
        Delta's to fill). A table with pyairport's rowid column checks, in the same Delta
        transaction, that no row holds the statement's rowids: another server (or this
        one's earlier run) may have taken them, and Delta fails the commit of a concurrent
        writer of the same range. Then the rowids move past what the table holds and the
        INSERT runs again."""
        if self.backend.shares_files:
            source, view = f"parquet.{quote(str(pending.directory))}", None
        else:  # a remote Spark Connect server cannot read our files: send the rows
            view = self.backend.view(pq.read_table(pending.directory))
            source = view
        written = [
            n
            for n in self.layout.stored.names
            if n not in self.layout.computed or n in pending.given
        ]
        listed = ", ".join(quote(n) for n in written)
        shift = 0
        try:
            for attempt in range(1, COMMIT_ATTEMPTS + 1):
                select, guard = listed, ""
                if self.layout.rowids == "column" and pending.rowids is not None:
                    low, high = pending.rowids[0] + shift, pending.rowids[1] + shift
                    select = ", ".join(
                        f"{quote(n)} + {shift} AS {quote(n)}" if n == ROWID else quote(n)
                        for n in written
                    )
                    guard = (
                        f" WHERE assert_true((SELECT count(*) FROM {self.fqn} WHERE {quote(ROWID)}"
                        f" BETWEEN {low} AND {high}) = 0, '{ROWIDS_TAKEN}') IS NULL"
                    )
                try:
                    self.spark.sql(
                        f"INSERT INTO {self.fqn} ({listed}) SELECT {select} FROM {source}{guard}"
                    )
                    return
                except Exception as exc:
                    taken = ROWIDS_TAKEN in str(exc) or "Concurrent" in str(exc)[:2000]
                    if not (guard and taken) or attempt == COMMIT_ATTEMPTS:
                        raise
                    shift = self._rowids_past_the_table(low - shift, high - shift)
                    log.warning(
                        "rowids of %s taken by another writer: moved by %d", self.fqn, shift
                    )
        finally:
            if view is not None:
                self.backend.drop_view(view)

    def _rowids_past_the_table(self, low: int, high: int) -> int:
        """How far to move the rowids low..high so that they follow every rowid the table and
        this server have given out (called with the table's lock held)."""
        (largest,) = self.spark.sql(f"SELECT max({quote(ROWID)}) FROM {self.fqn}").first()
        start = max((largest or 0) + 1, self._next_rowid or 0)
        self._next_rowid = start + (high - low) + 1
        return start - low

    # --- UPDATE and DELETE ----------------------------------------------------------------------

    def _apply_updates(self, updates: list[tuple[np.ndarray, dict[str, pa.Array]]]) -> int:
        changes = as_stored(update_frame(updates, self.schema, ROWID), self.layout.stored)
        if self.layout.rowids == "tracked":
            return self._merge_by_values(changes, "update")
        statement = self._update_statement(changes)
        if statement is not None:
            return affected(self.spark.sql(statement))
        assignments, source = self._assignments(changes, changes.select([ROWID]))
        return self._merge(
            source, f"t.{quote(ROWID)} = s.{quote(ROWID)}", f"UPDATE SET {assignments}"
        )

    def _assignments(self, changes: pa.Table, source: pa.Table) -> tuple[str, pa.Table]:
        """The MERGE's SET list for the staged changes, and source with the columns it reads."""
        assignments = []
        for name in changes.column_names:
            if name == ROWID or name.startswith("__set_"):
                continue
            source = source.append_column(name, changes.column(name))
            flag = changes.column("__set_" + name)
            if pc.all(flag).as_py():  # every row sets it (always, from DuckDB): as Spark's own
                assignments.append(f"t.{quote(name)} = s.{quote(name)}")
                continue
            source = source.append_column("__set_" + name, flag)
            assignments.append(
                f"t.{quote(name)} = CASE WHEN s.{quote('__set_' + name)} THEN s.{quote(name)}"
                f" ELSE t.{quote(name)} END"
            )
        return ", ".join(assignments), source

    def _update_statement(self, changes: pa.Table) -> str | None:
        """A small UPDATE as Spark's own: `UPDATE t SET c = <value, or CASE rowid WHEN …>
        WHERE rowid IN (…)`, values written as exact, typed SQL literals (`sql_literal`).
        None when it does not fit: too many rows with differing values, or a column type
        without such a literal."""
        if changes.num_rows > INLINE_ROWIDS:
            return None
        rowids = [int(k) for k in changes.column(ROWID).to_pylist()]
        assignments = []
        for name in changes.column_names:
            if name == ROWID or name.startswith("__set_"):
                continue
            data_type = self.schema.field(name).type
            setting = changes.column("__set_" + name).to_pylist()
            try:
                given = changes.column(name).to_pylist()
            except (ValueError, OverflowError):  # a date beyond Python's; the MERGE takes it
                return None
            pairs = [(k, v) for k, v, s in zip(rowids, given, setting, strict=True) if s]
            literals = [sql_literal(v, data_type) for _, v in pairs]
            if any(literal is None for literal in literals):
                return None
            if len(pairs) == len(rowids) and len(set(literals)) == 1:
                assignments.append(f"{quote(name)} = {literals[0]}")  # every row takes one value
                continue
            if len(pairs) > INLINE_UPDATE_ROWS:
                return None
            branches = " ".join(
                f"WHEN {key} THEN {literal}"
                for (key, _), literal in zip(pairs, literals, strict=True)
            )  # rowids are distinct (update_frame)
            assignments.append(f"{quote(name)} = CASE {ROWID} {branches} ELSE {quote(name)} END")
        listed = ", ".join(str(k) for k in rowids)
        return f"UPDATE {self.fqn} SET {', '.join(assignments)} WHERE {ROWID} IN ({listed})"

    def _apply_deletes(self, ids: np.ndarray) -> int:
        if self.layout.rowids == "tracked":
            return self._merge_by_values(pa.table({ROWID: pa.array(ids, pa.int64())}), "delete")
        if len(ids) <= INLINE_ROWIDS:  # Spark's own DELETE; rowids are integers
            listed = ", ".join(str(int(i)) for i in ids)
            return affected(self.spark.sql(f"DELETE FROM {self.fqn} WHERE {ROWID} IN ({listed})"))
        return self._merge(
            pa.table({ROWID: pa.array(ids, pa.int64())}),
            f"t.{quote(ROWID)} = s.{quote(ROWID)}",
            "DELETE",
        )

    def _merge(self, source: pa.Table, on: str, action: str) -> int:
        """One MERGE of the rows of source (as a view) into the table: the rows it changed."""
        view = self.backend.view(source)
        try:
            return affected(
                self.spark.sql(
                    f"MERGE INTO {self.fqn} t USING {view} s ON {on} WHEN MATCHED THEN {action}"
                )
            )
        finally:
            self.backend.drop_view(view)

    def _merge_by_values(self, changes: pa.Table, operation: str) -> int:
        """UPDATE or DELETE of a row-tracked table's rows, matched by their stored values as
        they are at the version the commit starts from (see the module's doc): by the first
        column alone where that names exactly these rows (a key, as most tables lead with),
        else by every column."""
        version = self._latest_version()
        clause = f" VERSION AS OF {int(version)}"
        ids = changes.column(ROWID).to_numpy()
        stored = self.layout.stored
        leading = [stored.names[0]]
        current = self._tracked_rows(ids, int(version), leading)
        if not current.num_rows:
            return 0
        source = self._keyed(current, leading)
        keys = _distinct(source.drop_columns([ROWID]))
        # an UPDATE's MERGE sets each row from one source row: its key values must not repeat
        narrow = keys is not None and (operation == "delete" or keys.num_rows == current.num_rows)
        if narrow and self._names_only(keys, current.num_rows, clause):
            if operation == "delete":
                source = keys  # each value once: the lines of one order are one source row
        else:
            columns = list(stored.names)
            current = self._tracked_rows(ids, int(version), columns)
            source = self._keyed(current, columns)
            matches = self._count_joined(source, "JOIN", self._on(source), clause)
            if matches != current.num_rows:
                raise ValueError(
                    f"{self.schema_name}.{self._name}: {matches - current.num_rows} other row(s)"
                    " hold every value of a row to change; rows that no column tells apart"
                    f" cannot be changed one by one (give the table a key column, or"
                    f" {operation} them all)"
                )
        on = self._on(source)
        if operation == "delete":
            return self._merge(source, on, "DELETE")
        positions = pc.index_in(current.column(ROWID), changes.column(ROWID))
        assignments, with_values = self._assignments(changes.take(positions), source)
        return self._merge(with_values, on, f"UPDATE SET {assignments}")

    def _latest_version(self) -> int:
        """The table's latest committed version: from its log's folder where the server
        reads it (a file listing), else as Spark says (a job)."""
        if self.layout.location is not None:
            version = log_version(self.layout.location / "_delta_log")
            if version is not None:
                return version
        (version,) = (
            self.spark.sql(f"DESCRIBE HISTORY {self.fqn} LIMIT 1").select("version").first()
        )
        return int(version)

    def _keyed(self, current: pa.Table, columns: list[str]) -> pa.Table:
        """The MERGE's source: the rows' values of columns, in the stored types, as key
        columns (named apart from the table's own), and their rowids."""
        stored = self.layout.stored
        keys = {"__key_" + n: convert(current.column(n), stored.field(n).type) for n in columns}
        return pa.table(keys | {ROWID: current.column(ROWID)})

    def _on(self, source: pa.Table) -> str:
        """The MERGE's condition: each of the table's columns keyed in source equal to the
        source's key; null-safely only where the key holds a null (a MERGE on `<=>` took a
        fifth longer than on `=`, measured on TPC-H's lineitem)."""
        conditions = []
        for name in source.column_names:
            if not name.startswith("__key_"):
                continue
            data_type = self.layout.stored.field(name.removeprefix("__key_")).type
            # a nested value's nulls may sit inside it, where `=` gives null
            null_safe = pa.types.is_nested(data_type) or source.column(name).null_count > 0
            column = quote(name.removeprefix("__key_"))
            conditions.append(
                _same(data_type, f"t.{column}", f"s.{quote(name)}", null_safe=null_safe)
            )
        return " AND ".join(conditions)

    def _names_only(self, keys: pa.Table, rows: int, clause: str) -> bool:
        """Whether the table (at clause's version) has just `rows` rows holding one of the
        values of keys' one column: then it names the rows to change and no other. A semi
        join on one column; matching every column of a wide table costs Spark several times
        the MERGE itself."""
        return self._count_joined(keys, "LEFT SEMI JOIN", self._on(keys), clause) == rows

    def _tracked_rows(self, ids: np.ndarray, version: int, columns: list[str]) -> pa.Table:
        """Columns (and the rowid) of the rows of a row-tracked table with these rowids at
        version: read from its files where the log gives their row ids (no Spark job), else
        by Spark."""
        names = [*columns, ROWID]
        snapshot = self.direct_snapshot(self.layout, None, version)
        files = None
        if snapshot is not None and snapshot.version() == version:
            files = self.part_files(self.layout, snapshot)
        if files is None:
            return self._rows_for(ids, f" VERSION AS OF {version}").select(names)
        wanted = filters.In(ROWID, tuple(int(i) for i in np.unique(ids)), negated=False)
        every = list(range(files.files.num_rows))
        read = file_parts.read(Context.background(), files, every, names, wanted, 0).read_all()
        return read.select(names)

    def _count_joined(self, source: pa.Table, join: str, on: str, clause: str) -> int:
        """How many rows the table (at clause's version) joined (JOIN, LEFT SEMI JOIN) to
        source's rows, sent as a view, gives."""
        view = self.backend.view(source)
        try:
            (count,) = self.spark.sql(
                f"SELECT count(*) FROM {self.fqn}{clause} t {join} {view} s ON {on}"
            ).first()
            return int(count)
        finally:
            self.backend.drop_view(view)


def _same(data_type: pa.DataType, left: str, right: str, *, null_safe: bool) -> str:
    """Equality of two values of a column in Spark SQL, null-safe if asked. Maps have none:
    their entries, in the order the value was read with, compare instead."""
    equal = "<=>" if null_safe else "="
    if pa.types.is_map(data_type):
        return f"map_entries({left}) {equal} map_entries({right})"
    return f"{left} {equal} {right}"


def _distinct(keys: pa.Table) -> pa.Table | None:
    """keys' distinct rows, or None for a type Arrow cannot group by (nested, maps)."""
    try:
        return keys.group_by(keys.column_names).aggregate([])
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def as_stored(changes: pa.Table, stored: pa.Schema) -> pa.Table:
    """An UPDATE's values (the served types) in the types the table stores them as."""
    for index, name in enumerate(changes.column_names):
        at = stored.get_field_index(name)
        if at >= 0 and not changes.column(index).type.equals(stored.field(at).type):
            field = pa.field(name, stored.field(at).type)
            changes = changes.set_column(index, field, convert(changes.column(index), field.type))
    return changes
