"""The Spark backend: Delta tables in a warehouse folder, changed by Flight DML.

Layout: `<warehouse>/<schema>/<table>/` is a Delta table; Spark databases are the Airport
schemas. At start-up every Delta table found there is registered again, so data (and each
table's capabilities, kept in its TBLPROPERTIES) survive a restart.

rowid: a BIGINT column the backend assigns (max(rowid)+1 at open, then an in-process
counter). Delta row tracking and identity columns assign their values only when the write
commits, but INSERT ... RETURNING must hand rowids back before the statement commits (DuckDB
reads them batch by batch); identity columns also rule out concurrent transactions. The
assigned rowid never changes, so it is stable across UPDATE and MERGE. One server process
writes a table (several writer processes would need a shared counter).

Each statement is one Delta commit: INSERT batches are staged as parquet files (memory stays
bounded however large the input) and appended once at commit; UPDATE and DELETE stage
rowids and values and commit as one Delta UPDATE, DELETE or MERGE, whose own metrics give
the statement's row count (Statement.changed_rows), so no query counts rows beforehand. A
failure, a rollback, a disconnect or a killed server commits nothing: staged files are only
ever read by the commit.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airport_contracts import (
    Context,
    DMLOptions,
    DMLResult,
    ScanOptions,
    rowid_field,
)

from .. import filters
from ..catalog import CatalogSchema, MutableCatalog
from .base import BackendTable
from .capabilities import ALL_CAPABILITIES, with_capabilities
from .shaping import conform_insert, conform_update, returning_reader
from .spark_session import is_connect

log = logging.getLogger("pyairport.spark")
T = TypeVar("T")

ROWID = "rowid"
CAPABILITIES_PROPERTY = "pyairport.capabilities"
ID_FROM_ROWID_PROPERTY = "pyairport.id_from_rowid"
# Spark takes a "comment" property as the table comment and leaves it out of SHOW TBLPROPERTIES.
COMMENT_PROPERTY = "pyairport.comment"
COMMIT_ATTEMPTS = 4
SCAN_BATCH_ROWS = 65_536
READ_BUFFER_BYTES = 1 << 20  # a direct scan reads each column of a file through this much
SCAN_RANGE_ROWIDS = 1 << 20  # rowids per Spark query of a streamed scan
STAGE_FILE_ROWS = 65_536  # staged INSERT rows per parquet file (DuckDB sends 2048 at a time)
# Statements this small run as Spark's own UPDATE/DELETE with the rowids in the statement, as
# a SQL user would type them, and read rows by a filter Delta can skip files with; larger
# ones join or MERGE against the rowids sent as a view. (A MERGE and a join cost Spark
# several jobs more than the statement itself: most of a one-row statement's time. A long
# IN list costs more to plan than the join: 10,000 rowids took three times the MERGE's time.)
INLINE_ROWIDS = 100
# Table features whose commits may be held outside the _delta_log folder until later.
COMMITS_ELSEWHERE = ("coordinatedCommits", "catalogManaged", "catalogOwned")
INLINE_UPDATE_ROWS = 64  # rows whose values differ per row, one CASE branch each


def _where(frame: Any, predicate: filters.Predicate | None) -> Any:
    return frame if predicate is None else frame.where(filters.spark_column(predicate, frame))


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _plain(data_type: pa.DataType) -> pa.DataType:
    """Spark hands strings/binaries back as large types; the table declares the plain ones."""
    if pa.types.is_large_string(data_type):
        return pa.string()
    if pa.types.is_large_binary(data_type):
        return pa.binary()
    return data_type


@dataclass
class _Pending:
    """One statement's staged changes to one table."""

    directory: Path
    files: int = 0
    buffer: list[pa.RecordBatch] = field(default_factory=list)  # staged rows not yet in a file
    buffered_rows: int = 0
    updates: list[tuple[np.ndarray, dict[str, pa.Array]]] = field(default_factory=list)
    deletes: list[np.ndarray] = field(default_factory=list)


class SparkTable(BackendTable["_Pending"]):
    """A Delta table; `with_capabilities` adds the DML interfaces it serves."""

    def __init__(
        self,
        backend: SparkBackend,
        schema_name: str,
        name: str,
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
        self.fqn = f"{_quote(schema_name)}.{_quote(name)}"
        spark_schema = self.spark.table(self.fqn).limit(0).toArrow().schema
        fields = [
            pa.field(f.name, _plain(f.type), f.nullable) for f in spark_schema if f.name != ROWID
        ]
        self.schema = pa.schema([rowid_field(), *fields])
        self._next_rowid: int | None = None
        self._lock = threading.Lock()  # rowid allocation and commits of this table
        # The files of the last Delta version scanned directly (see _snapshot_files), and
        # the table's _delta_log folder (None: not a local folder, or not read yet).
        self._version_files: tuple[int, list[str] | None] | None = None
        self._log_dir: Path | None = None
        self._log_dir_read = False

    # --- Table ------------------------------------------------------------------------------

    def scan(self, ctx: Context, opts: ScanOptions | None = None) -> pa.RecordBatchReader:
        """The table, full width as the contract asks. Only the columns the client asked for
        (opts.columns, plus the rowid) are read, the others come back null; DuckDB's
        pushed-down filters run in Spark where they translate.

        Where this process can read the table's files and they hold exactly its rows (see
        _snapshot_files), pyarrow reads the files of the latest Delta version, streamed
        batch by batch with the filter and projection applied: Spark only names the files,
        once per version.
        Otherwise Spark reads. A table whose rowids may span more than SCAN_RANGE_ROWIDS is
        then streamed from one Delta version (a consistent snapshot however long the client
        takes) one rowid range at a time, so the server never holds the table; a smaller one
        — or a scan with a limit — is one query, which is its own snapshot."""
        ctx.raise_if_done()
        wanted = [
            n
            for n in self.schema.names
            if opts is None or not opts.columns or n in opts.columns or n == ROWID
        ]
        limit = opts.limit if opts is not None and opts.limit > 0 else 0
        predicate = filters.parse(opts.filter, self.schema) if opts is not None else None
        if not limit:
            files = self._snapshot_files()
            if files is not None:  # pyarrow skips row groups by their statistics
                return self._read_files(ctx, files, predicate, wanted)
        with self._lock:
            next_rowid = self._next_rowid
        one_range = next_rowid is not None and next_rowid - 1 <= SCAN_RANGE_ROWIDS
        if one_range or limit:
            frame = self._scan_frame(self.spark.table(self.fqn), opts, wanted)
            read = (frame.limit(limit) if limit else frame).toArrow()
            return pa.RecordBatchReader.from_batches(
                self.schema, self._full_width(read, wanted).to_batches(SCAN_BATCH_ROWS)
            )
        (version,) = (
            self.spark.sql(f"DESCRIBE HISTORY {self.fqn} LIMIT 1").select("version").first()
        )
        pinned = self.spark.sql(f"SELECT * FROM {self.fqn} VERSION AS OF {int(version)}")
        frame = self._scan_frame(pinned, opts, wanted)
        low, high = frame.selectExpr(f"min({_quote(ROWID)})", f"max({_quote(ROWID)})").first()

        def ranges() -> Iterable[pa.RecordBatch]:
            if low is None:
                return
            rowid = frame[ROWID]
            for start in range(int(low), int(high) + 1, SCAN_RANGE_ROWIDS):
                ctx.raise_if_done()
                part = frame.where((rowid >= start) & (rowid < start + SCAN_RANGE_ROWIDS))
                yield from self._full_width(part.toArrow(), wanted).to_batches(SCAN_BATCH_ROWS)

        return pa.RecordBatchReader.from_batches(self.schema, ranges())

    def _snapshot_files(self) -> list[str] | None:
        """The parquet files of the latest Delta version, when they hold exactly its rows and
        this process can read them: not through a remote Spark Connect server, and no
        deletion vectors (rows deleted inside a file), column mapping (other physical names),
        partition columns (values kept outside the files) or commits kept outside the log
        folder. None otherwise. Spark names them once per version; the version is read from
        the log folder's file names, so a scan of an unchanged table asks Spark nothing."""
        if not self.backend.shares_files:
            return None
        if not self._log_dir_read:
            location = urlparse(self.spark.sql(f"DESCRIBE DETAIL {self.fqn}").first()["location"])
            if location.scheme == "file":
                self._log_dir = Path(unquote(location.path)) / "_delta_log"
            self._log_dir_read = True
        if self._log_dir is None:  # files elsewhere (a cluster's storage): Spark reads them
            return None
        version = self._log_version()
        cached = self._version_files
        if version is not None and cached is not None and cached[0] == version:
            return cached[1]
        # Read after the version: its features are those of `version` or of a later one.
        detail = self.spark.sql(f"DESCRIBE DETAIL {self.fqn}").first()
        features = set(detail["tableFeatures"] or [])
        if (
            version is None
            or detail["partitionColumns"]
            or features & {"deletionVectors", "columnMapping"}
            or any(f.startswith(COMMITS_ELSEWHERE) for f in features)
        ):
            paths = None
        else:  # a table gains features, never loses them: the current ones cover `version`
            pinned = self.spark.sql(f"SELECT * FROM {self.fqn} VERSION AS OF {version}")
            uris = pinned.inputFiles()
            paths = [unquote(urlparse(uri).path) for uri in uris if uri.startswith("file:")]
            paths = paths if len(paths) == len(uris) else None
        if version is not None:
            self._version_files = (version, paths)
        return paths

    def _log_version(self) -> int | None:
        """The latest version committed to the table's _delta_log folder (its highest
        `<version>.json`), or None when it is not a local folder or cannot be read."""
        if self._log_dir is None:
            return None
        try:
            names = os.listdir(self._log_dir)
        except OSError:
            return None
        versions = [
            int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json") and n[:20].isdigit()
        ]
        return max(versions, default=None)

    def _read_files(
        self,
        ctx: Context,
        files: list[str],
        predicate: filters.Predicate | None,
        wanted: list[str],
    ) -> pa.RecordBatchReader:
        """The rows of files (one Delta version's), filtered and projected by pyarrow, one
        file and one batch at a time: row groups the filter rules out by their statistics are
        skipped, and the others are read page by page through a small buffer. (pyarrow's
        dataset scanner, reading whole row groups and a file ahead, held ~140 MiB of Arrow
        memory and ~300 MiB of RSS while streaming 10M rows; this holds tens of MiB.)"""
        import pyarrow.dataset as ds

        expression = filters.arrow_expression(predicate) if predicate is not None else None
        filtered = filters.columns_of(predicate) if predicate is not None else []
        read = wanted + [name for name in filtered if name not in wanted]

        def batches() -> Iterable[pa.RecordBatch]:
            for path in files:
                groups = None
                if expression is not None:
                    (whole,) = ds.dataset(
                        path, format="parquet", schema=self.schema
                    ).get_fragments()
                    pieces = whole.split_by_row_group(expression)
                    groups = [group.id for piece in pieces for group in piece.row_groups]
                    if not groups:
                        continue
                source = pq.ParquetFile(path, buffer_size=READ_BUFFER_BYTES, pre_buffer=False)
                present = set(source.schema_arrow.names)
                columns = [name for name in read if name in present]
                for batch in source.iter_batches(
                    SCAN_BATCH_ROWS, row_groups=groups, columns=columns, use_threads=True
                ):
                    ctx.raise_if_done()
                    for name in read:  # a column added after this file was written: null
                        if name not in present:
                            field = self.schema.field(name)
                            batch = batch.append_column(field, pa.nulls(batch.num_rows, field.type))
                    if expression is not None:
                        batch = batch.filter(expression)
                    if batch.num_rows:
                        yield from self._full_width(
                            pa.Table.from_batches([batch]), wanted
                        ).to_batches()

        return pa.RecordBatchReader.from_batches(self.schema, batches())

    def _scan_frame(self, frame: Any, opts: ScanOptions | None, wanted: list[str]) -> Any:
        """frame filtered by the pushed-down predicate, then projected to the wanted columns."""
        if opts is not None:
            frame = _where(frame, filters.parse(opts.filter, self.schema))
        return frame.select(*[_quote(n) for n in wanted])

    def _full_width(self, read: pa.Table, wanted: list[str]) -> pa.Table:
        """read (the wanted columns) as the table schema: types cast, the rest null."""
        columns = [
            read.column(f.name).cast(f.type)
            if f.name in wanted
            else pa.nulls(read.num_rows, f.type)
            for f in self.schema
        ]
        return pa.Table.from_arrays(columns, schema=self.schema)

    def to_table(self) -> pa.Table:
        """The committed rows ordered by rowid (for tests and tools)."""
        return self.scan(Context.background()).read_all().sort_by(ROWID)

    @property
    def num_rows(self) -> int:
        return int(self.spark.table(self.fqn).count())

    # --- rowids and staging --------------------------------------------------------------------

    def _allocate(self, count: int) -> np.ndarray:
        with self._lock:
            if self._next_rowid is None:
                (largest,) = self.spark.sql(f"SELECT max({ROWID}) FROM {self.fqn}").collect()[0]
                self._next_rowid = (largest or 0) + 1
            start = self._next_rowid
            self._next_rowid += count
        return np.arange(start, start + count, dtype=np.int64)

    def _new_pending(self) -> _Pending:
        return _Pending(self.backend.staging / uuid.uuid4().hex)

    def _discard_pending(self, pending: _Pending) -> None:
        shutil.rmtree(pending.directory, ignore_errors=True)

    def _commit_pending(self, pending: _Pending) -> int | None:
        try:
            return self._commit(pending)
        finally:
            self._discard_pending(pending)  # committed or failed, the staged files are done with

    def _finish_now(self, pending: _Pending, immediate: bool) -> int | None:
        """Commit now when the call is outside any statement: the rows changed, if counted."""
        return self._commit_pending(pending) if immediate else None

    def _by_rowid_result(
        self,
        pending: _Pending,
        immediate: bool,
        affected: int,
        staged: list[np.ndarray],
        returned: list[pa.RecordBatch],
        opts: DMLOptions | None,
    ) -> DMLResult:
        """An UPDATE's or DELETE's result. With RETURNING, affected counts the rows read;
        without, no row is read before the commit, which counts them (Statement.changed_rows):
        until then it is at most the distinct rowids given."""
        if not (opts is not None and opts.returning):
            affected = _distinct_count(staged)
        counted = self._finish_now(pending, immediate)
        return DMLResult(
            affected_rows=affected if counted is None else counted,
            returning_data=returning_reader(self.schema, returned, opts),
        )

    def _with_rowids(self, ids: np.ndarray) -> Any:
        """The committed rows with these rowids, as a DataFrame: a filter for few rowids (Delta
        skips the files whose rowid range holds none), a join with them for many."""
        distinct = np.unique(ids)
        table = self.spark.table(self.fqn)
        if len(distinct) <= INLINE_ROWIDS:
            return table.where(table[ROWID].isin([int(i) for i in distinct]))
        keys = self.spark.createDataFrame(pa.table({ROWID: pa.array(distinct, pa.int64())}))
        return keys.join(table, ROWID)

    def _rows_for(self, ids: np.ndarray) -> pa.Table:
        """The committed rows with these rowids (table schema; order not kept)."""
        if not len(ids):
            return self.schema.empty_table()
        frame = self._with_rowids(ids).select(*[_quote(n) for n in self.schema.names])
        return frame.toArrow().cast(self.schema)

    # --- the operations the capability mixins expose ------------------------------------------

    def _insert(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        pending, immediate = self._stage(ctx)
        count, returned = 0, []
        try:
            for batch in rows:
                ctx.raise_if_done()
                staged = conform_insert(
                    batch, self.schema, self._allocate(batch.num_rows), self._id_from_rowid
                )
                pending.buffer.append(staged)
                pending.buffered_rows += staged.num_rows
                if pending.buffered_rows >= STAGE_FILE_ROWS:
                    _flush(pending)
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
        affected, returned, staged = 0, [], []
        for ids, values in chunks:
            ctx.raise_if_done()
            columns = conform_update(values, self.schema)
            pending.updates.append((ids, columns))
            staged.append(ids)
            if returning:  # RETURNING needs each batch's rows now; otherwise none are read
                current = self._rows_for(ids)
                affected += current.num_rows
                returned.extend(_overlay(current, ids, columns).to_batches())
        return self._by_rowid_result(pending, immediate, affected, staged, returned, opts)

    def _delete(
        self, ctx: Context, id_chunks: Iterable[np.ndarray], opts: DMLOptions | None
    ) -> DMLResult:
        pending, immediate = self._stage(ctx)
        returning = opts is not None and opts.returning
        affected, returned, staged = 0, [], []
        for ids in id_chunks:
            ctx.raise_if_done()
            pending.deletes.append(ids)
            staged.append(ids)
            if returning:
                current = self._rows_for(ids)
                affected += current.num_rows
                returned.extend(current.to_batches())
        return self._by_rowid_result(pending, immediate, affected, staged, returned, opts)

    # --- commit: one Delta commit per kind of change (a statement has one kind) --------------

    def _commit(self, pending: _Pending) -> int | None:
        """Apply the staged changes; the rows an UPDATE or DELETE changed, as Delta counted them
        (an INSERT's count is known before: None)."""
        _flush(pending)
        with self._lock:
            if pending.files:
                self._retrying(lambda: self._append(pending.directory))
            if pending.updates:
                return self._retrying(lambda: self._merge_updates(pending.updates))
            if pending.deletes:
                return self._retrying(lambda: self._merge_deletes(np.concatenate(pending.deletes)))
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

    def _append(self, directory: Path) -> None:
        if self.backend.shares_files:
            frame = self.spark.read.parquet(str(directory))
        else:  # a remote Spark Connect server cannot read our files: send the rows
            frame = self.spark.createDataFrame(pq.read_table(directory))
        frame.select(*[_quote(n) for n in self.schema.names]).write.format("delta").mode(
            "append"
        ).saveAsTable(self.fqn)

    def _merge_updates(self, updates: list[tuple[np.ndarray, dict[str, pa.Array]]]) -> int:
        changes = _update_frame(updates, self.schema)
        statement = self._update_statement(changes)
        if statement is not None:
            return _affected(self.spark.sql(statement))
        assignments, source = [], changes.select([ROWID])
        for name in changes.column_names:
            if name == ROWID or name.startswith("__set_"):
                continue
            source = source.append_column(name, changes.column(name))
            flag = changes.column("__set_" + name)
            if pc.all(flag).as_py():  # every row sets it (always, from DuckDB): as Spark's own
                assignments.append(f"t.{_quote(name)} = s.{_quote(name)}")
                continue
            source = source.append_column("__set_" + name, flag)
            assignments.append(
                f"t.{_quote(name)} = CASE WHEN s.{_quote('__set_' + name)} THEN s.{_quote(name)} ELSE t.{_quote(name)} END"
            )
        return self._merge(source, f"UPDATE SET {', '.join(assignments)}")

    def _update_statement(self, changes: pa.Table) -> str | None:
        """A small UPDATE as Spark's own: `UPDATE t SET c = <value, or CASE rowid WHEN …>
        WHERE rowid IN (…)`, values written as exact, typed SQL literals (`_sql_literal`).
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
            literals = [_sql_literal(v, data_type) for _, v in pairs]
            if any(literal is None for literal in literals):
                return None
            if len(pairs) == len(rowids) and len(set(literals)) == 1:
                assignments.append(f"{_quote(name)} = {literals[0]}")  # every row takes one value
                continue
            if len(pairs) > INLINE_UPDATE_ROWS:
                return None
            branches = " ".join(
                f"WHEN {key} THEN {literal}"
                for (key, _), literal in zip(pairs, literals, strict=True)
            )  # rowids are distinct (_update_frame)
            assignments.append(f"{_quote(name)} = CASE {ROWID} {branches} ELSE {_quote(name)} END")
        listed = ", ".join(str(k) for k in rowids)
        return f"UPDATE {self.fqn} SET {', '.join(assignments)} WHERE {ROWID} IN ({listed})"

    def _merge_deletes(self, ids: np.ndarray) -> int:
        distinct = np.unique(ids)
        if len(distinct) <= INLINE_ROWIDS:  # Spark's own DELETE; rowids are integers
            listed = ", ".join(str(int(i)) for i in distinct)
            return _affected(self.spark.sql(f"DELETE FROM {self.fqn} WHERE {ROWID} IN ({listed})"))
        return self._merge(pa.table({ROWID: pa.array(distinct, pa.int64())}), "DELETE")

    def _merge(self, source: pa.Table, action: str) -> int:
        """One MERGE of the rows of source (as a view) into the table, matched on rowid: the
        rows it changed."""
        view = self.backend.view(source)
        try:
            return _affected(
                self.spark.sql(
                    f"MERGE INTO {self.fqn} t USING {view} s ON t.{ROWID} = s.{ROWID} WHEN MATCHED THEN {action}"
                )
            )
        finally:
            self.backend.drop_view(view)


def _affected(result: Any) -> int:
    """The rows a Delta UPDATE, DELETE or MERGE changed, from the row the command answers
    (its own metrics: no further query)."""
    return int(result.first()["num_affected_rows"])


def _distinct_count(staged: list[np.ndarray]) -> int:
    return len(np.unique(np.concatenate(staged))) if staged else 0


def _sql_literal(value: Any, data_type: pa.DataType) -> str | None:
    """value as a Spark SQL literal of exactly that value and type, or None for a type that
    has none here. Nothing a client sent reaches the SQL text as written: numbers are
    re-rendered from Python numbers, strings and binaries go in as hex."""
    spark_type = _SPARK_TYPES.get(data_type)
    if spark_type is None and pa.types.is_decimal(data_type):
        spark_type = f"DECIMAL({data_type.precision},{data_type.scale})"
    if spark_type is None:
        return None
    if value is None:
        return f"CAST(NULL AS {spark_type})"
    if pa.types.is_boolean(data_type):
        return "TRUE" if value else "FALSE"
    if pa.types.is_integer(data_type):
        return f"CAST({int(value)} AS {spark_type})"
    if pa.types.is_floating(data_type):
        text = "NaN" if math.isnan(value) else repr(float(value)).replace("inf", "Infinity")
        return f"CAST('{text}' AS {spark_type})"  # repr round-trips; Spark reads these names
    if pa.types.is_decimal(data_type):
        return f"CAST('{format(value, 'f')}' AS {spark_type})"
    if pa.types.is_date(data_type):
        return f"DATE'{value.isoformat()}'"
    if pa.types.is_binary(data_type):
        return f"X'{bytes(value).hex()}'"
    return f"CAST(X'{str(value).encode().hex()}' AS STRING)"


# The types a Spark table's columns come back as (SparkTable.schema), with their SQL names.
_SPARK_TYPES = {
    pa.bool_(): "BOOLEAN",
    pa.int8(): "TINYINT",
    pa.int16(): "SMALLINT",
    pa.int32(): "INT",
    pa.int64(): "BIGINT",
    pa.float32(): "FLOAT",
    pa.float64(): "DOUBLE",
    pa.string(): "STRING",
    pa.binary(): "BINARY",
    pa.date32(): "DATE",
}


def _flush(pending: _Pending) -> None:
    """Write the buffered INSERT rows of a statement to one staged parquet file."""
    if not pending.buffer:
        return
    pending.directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.Table.from_batches(pending.buffer), pending.directory / f"{pending.files:06d}.parquet"
    )
    pending.files += 1
    pending.buffer, pending.buffered_rows = [], 0


def _last_positions(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rowids sorted, the position of each one's last occurrence in ids)."""
    distinct, first_from_end = np.unique(ids[::-1], return_index=True)
    return distinct, len(ids) - 1 - first_from_end


def _overlay(current: pa.Table, ids: np.ndarray, columns: dict[str, pa.Array]) -> pa.Table:
    """current's rows with the new values of columns (rowid ids[i] takes row i of columns;
    the last value wins for a repeated rowid). current holds only rowids that are in ids."""
    distinct, last = _last_positions(ids)
    positions = pa.array(
        last[np.searchsorted(distinct, current.column(ROWID).to_numpy())], pa.int64()
    )
    for name, values in columns.items():
        index = current.schema.get_field_index(name)
        current = current.set_column(index, current.schema.field(index), values.take(positions))
    return current


def _update_frame(
    updates: list[tuple[np.ndarray, dict[str, pa.Array]]], schema: pa.Schema
) -> pa.Table:
    """All staged updates as one table: each distinct rowid once, each updated column with
    the value of the last update that set it for that rowid, and a __set_<column> flag saying
    whether any did (calls of one statement may set different columns of the same row)."""
    distinct = np.unique(np.concatenate([ids for ids, _ in updates]))
    arrays: dict[str, pa.Array] = {ROWID: pa.array(distinct, pa.int64())}
    for column in schema:
        setting = [
            (ids, columns[column.name]) for ids, columns in updates if column.name in columns
        ]
        if not setting:
            continue
        keys, last = _last_positions(np.concatenate([ids for ids, _ in setting]))
        positions = np.zeros(len(distinct), dtype=np.int64)
        is_set = np.zeros(len(distinct), dtype=bool)
        where = np.searchsorted(distinct, keys)
        positions[where], is_set[where] = last, True
        values = pa.concat_arrays([values for _, values in setting])
        arrays[column.name] = values.take(pa.array(positions, pa.int64(), mask=~is_set))
        arrays["__set_" + column.name] = pa.array(is_set)
    return pa.table(arrays)


class SparkBackend:
    """Delta tables under one warehouse folder, served as a MutableCatalog."""

    def __init__(self, spark: Any, warehouse: Path, remote: str | None = None) -> None:
        """remote: the Spark Connect URL the session uses, if any. A Connect server on this
        machine (loopback) reads staged files by path; a remote one is sent the rows."""
        self.spark = spark
        self.shares_files = not is_connect(spark) or _is_loopback(remote)
        self.warehouse = warehouse.resolve()
        self.warehouse.mkdir(parents=True, exist_ok=True)
        self.staging = self.warehouse / ".pyairport-staging"
        # Files staged by a server that died are from statements that never committed.
        shutil.rmtree(self.staging, ignore_errors=True)
        self.staging.mkdir()
        self.catalog = MutableCatalog("", refresh=self.refresh)
        self._lock = threading.Lock()
        self._discover()

    def _location(self, schema_name: str, table_name: str | None = None) -> Path:
        path = self.warehouse / schema_name
        return path / table_name if table_name else path

    def _ensure_database(self, schema_name: str) -> CatalogSchema:
        self.spark.sql(
            f"CREATE DATABASE IF NOT EXISTS {_quote(schema_name)} LOCATION '{self._location(schema_name)}'"
        )
        return self.catalog.add_schema(CatalogSchema(schema_name))

    def _discover(self) -> None:
        """Register every Delta table of the warehouse (what a previous run created, or what
        was created there on the Spark side), and forget tables whose folder is gone."""
        found = set()
        for log_dir in sorted(self.warehouse.glob("*/*/_delta_log")):
            table_dir = log_dir.parent
            schema_name, table_name = table_dir.parent.name, table_dir.name
            if schema_name.startswith("."):
                continue
            found.add((schema_name, table_name))
            schema = self.catalog.schema(Context.background(), schema_name)
            if schema is not None and schema.table(Context.background(), table_name) is not None:
                continue
            self._ensure_database(schema_name)
            fqn = f"{_quote(schema_name)}.{_quote(table_name)}"
            self.spark.sql(f"CREATE TABLE IF NOT EXISTS {fqn} USING delta LOCATION '{table_dir}'")
            self._open(schema_name, table_name)
        for schema in self.catalog.schemas(Context.background()):
            for table in schema.tables(Context.background()):
                if (schema.name(), table.name()) not in found:
                    schema.drop(table.name())

    def refresh(self) -> None:
        """Pick up tables created or dropped in the warehouse since the last look; the
        catalog's version goes up with each change, so clients reload it."""
        with self._lock:
            self._discover()

    def _properties(self, fqn: str) -> dict[str, str]:
        return {row[0]: row[1] for row in self.spark.sql(f"SHOW TBLPROPERTIES {fqn}").collect()}

    def _open(self, schema_name: str, table_name: str) -> SparkTable:
        fqn = f"{_quote(schema_name)}.{_quote(table_name)}"
        properties = self._properties(fqn)
        capabilities = [
            c
            for c in properties.get(CAPABILITIES_PROPERTY, ",".join(ALL_CAPABILITIES)).split(",")
            if c
        ]
        table: SparkTable = with_capabilities(SparkTable, capabilities)(
            self,
            schema_name,
            table_name,
            comment=properties.get(COMMENT_PROPERTY, ""),
            id_from_rowid=properties.get(ID_FROM_ROWID_PROPERTY) or None,
        )
        self.catalog.add_schema(CatalogSchema(schema_name)).add(table)
        return table

    def table(
        self,
        schema_name: str,
        table_name: str,
        columns: pa.Schema,
        capabilities: Sequence[str] = ALL_CAPABILITIES,
        comment: str = "",
        rows: pa.Table | None = None,
        id_from_rowid: str | None = None,
    ) -> SparkTable:
        """The table schema_name.table_name: opened if it exists, else created (with rows)."""
        with self._lock:
            schema = self.catalog.schema(Context.background(), schema_name)
            existing = (
                schema.table(Context.background(), table_name) if schema is not None else None
            )
            if existing is not None:
                return existing  # type: ignore[return-value]
            self._ensure_database(schema_name)
            location = self._location(schema_name, table_name)
            fqn = f"{_quote(schema_name)}.{_quote(table_name)}"
            if not (location / "_delta_log").exists():
                from pyspark.sql.pandas.types import (
                    from_arrow_schema,
                )  # Spark Connect cannot infer it

                empty = pa.schema([pa.field(ROWID, pa.int64()), *columns]).empty_table()
                self.spark.createDataFrame(
                    empty, schema=from_arrow_schema(empty.schema)
                ).write.format("delta").option("path", str(location)).saveAsTable(fqn)
                properties = {
                    COMMENT_PROPERTY: comment,
                    CAPABILITIES_PROPERTY: ",".join(capabilities),
                    ID_FROM_ROWID_PROPERTY: id_from_rowid or "",
                }
                settings = ", ".join(
                    f"'{k}' = '{v.replace(chr(39), '')}'" for k, v in properties.items()
                )
                self.spark.sql(f"ALTER TABLE {fqn} SET TBLPROPERTIES ({settings})")
                table = self._open(schema_name, table_name)
                if rows is not None and rows.num_rows:
                    table._insert(
                        Context.background(),
                        pa.RecordBatchReader.from_batches(rows.schema, rows.to_batches()),
                        None,
                    )
                return table
            self.spark.sql(f"CREATE TABLE IF NOT EXISTS {fqn} USING delta LOCATION '{location}'")
            return self._open(schema_name, table_name)

    def view(self, data: pa.Table) -> str:
        """A temporary view over Arrow data, for MERGE; drop it with drop_view."""
        name = f"pyairport_{uuid.uuid4().hex}"
        self.spark.createDataFrame(data).createOrReplaceTempView(name)
        return name

    def drop_view(self, name: str) -> None:
        self.spark.catalog.dropTempView(name)


def _is_loopback(url: str | None) -> bool:
    from urllib.parse import urlparse

    host = urlparse(url or "").hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")
