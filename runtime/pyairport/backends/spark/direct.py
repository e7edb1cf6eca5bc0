"""Reading a Delta table without Spark: delta-rs (the `deltalake` package) reads a version's
log and data files, partition values, column mapping and deletion vectors included, and
streams the rows as Arrow batches. No Spark job runs for such a scan, the first after a commit
included: the latest version is found from the log folder's file names and opened by delta-rs
(a few milliseconds: it replays the log from its last checkpoint).

A table is read this way when this process sees its folder and delta-rs supports every reader
feature the version needs (READER_FEATURES); Spark reads the rest (scans.py), with the same
answer. The served types are Spark's (the layout is Spark's reading of the table): delta-rs's
batches are cast to them, which also turns DataFusion's string views into strings.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airport_contracts import Context

from ... import filters
from ..shaping import digits_checked, full_width, null_batch
from .delta_stats import files_of, misread_timestamps
from .file_parts import keep_masks
from .row_ids import base_row_ids
from .scans import SCAN_BATCH_ROWS, log_version

log = logging.getLogger("pyairport.spark")

# The reader features delta-rs 1.6 reads exactly as Spark does (tests/backend/test_lake.py
# compares them). Type widening is the one Spark 4.2 writes that delta-rs refuses to read.
READER_FEATURES = frozenset({"columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint"})
# What the reader versions before table features imply (protocol versions 1 and 2).
LEGACY_READER_FEATURES = {1: frozenset[str](), 2: frozenset({"columnMapping"})}
# Table features whose commits may be held outside the _delta_log folder until later: the
# folder alone does not say what the latest version is.
COMMITS_ELSEWHERE = ("coordinatedCommits", "catalogManaged", "catalogOwned")
# Column metadata that changes with the rows, not the table's shape: an identity column's
# high-water mark moves with every INSERT that fills it.
ROW_DEPENDENT_METADATA = ("delta.identity.highWaterMark",)


def reader_features(snapshot: Any) -> frozenset[str] | None:
    """The reader features a version needs, or None for a reader version past table features."""
    protocol = snapshot.protocol()
    version = protocol.min_reader_version
    if version in LEGACY_READER_FEATURES:
        return LEGACY_READER_FEATURES[version]
    if version == 3:
        return frozenset(protocol.reader_features or ())
    return None


def shape(snapshot: Any) -> str:
    """What the served layout of a version depends on (columns, partitioning, properties,
    protocol, comment), as one comparable text: two versions of the same shape are served
    with the same schema, so a new version of the same shape needs nothing from Spark."""
    columns = json.loads(snapshot.schema().to_json())
    for column in columns.get("fields", []):
        for key in ROW_DEPENDENT_METADATA:
            column.get("metadata", {}).pop(key, None)
    metadata = snapshot.metadata()
    protocol = snapshot.protocol()
    return json.dumps(
        {
            "columns": columns,
            "partitions": list(metadata.partition_columns),
            "configuration": dict(metadata.configuration),
            "description": metadata.description,
            "reader": [protocol.min_reader_version, sorted(protocol.reader_features or ())],
            "writer": [protocol.min_writer_version, sorted(protocol.writer_features or ())],
        },
        sort_keys=True,
    )


_KEPT_DERIVED = 32


def _row_count(snapshot: Any) -> int | None:
    records = files_of(snapshot).column("num_records")
    if records.null_count:
        return None
    deleted = 0
    with pa.RecordBatchReader.from_stream(snapshot.deletion_vectors()) as masks:
        for batch in masks:
            keep = pc.list_flatten(batch.column("selection_vector"))
            deleted += len(keep) - pc.sum(keep).as_py() if len(keep) else 0
    return int(pc.sum(records).as_py() or 0) - deleted


FOOTERS_READ = 64
"""The most files whose footers a scan's filter is held against (planning.filter_prunes): a
footer is one small read per file, once per version; beyond this many files the log's
bounds alone decide."""


def _footers(location: Path, files: pa.Table) -> list[Any] | None:
    if files.num_rows > FOOTERS_READ:
        return None
    local = [_local_file(location, p) for p in files.column("path").to_pylist()]
    if None in local:
        return None  # a file in another store
    try:
        return [pq.read_metadata(f) for f in local if f is not None]
    except (OSError, pa.ArrowException) as exc:  # a file gone
        log.info("footers of %s not read: %s", location.name, exc)
        return None


def _local_file(location: Path, path: str) -> Path | None:
    """Where a data file the log names is on this machine: a path relative to the table's
    folder, or a file: URI (a shallow clone's files are another table's); None for a file in
    another store."""
    uri = urlparse(path)
    if not uri.scheme:
        return location / unquote(path)
    return Path(unquote(uri.path)) if uri.scheme == "file" else None


def _base_row_ids(location: Path, snapshot: Any) -> dict[str, int] | None:
    try:
        bases = base_row_ids(location, snapshot.version())
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException) as exc:
        log.warning("row ids of %s not read from its log: %s", location.name, exc)
        return None
    live = [unquote(p) for p in files_of(snapshot).column("path").to_pylist()]
    if any(path not in bases for path in live):
        return None
    return {path: bases[path] for path in live}


class Snapshots:
    """delta-rs's view of one table folder: the latest version, opened once per commit."""

    def __init__(self, location: Path) -> None:
        self.location = location
        self._lock = threading.Lock()
        self._latest: Any = None
        self._unreadable: int | None = None  # the latest version delta-rs failed to open
        self._kept: dict[tuple[int, str], Any] = {}

    def latest(self, version: int | None = None) -> Any:
        """The table's latest version as a deltalake.DeltaTable, or None when delta-rs cannot
        open it (Spark reads it then). version: the latest version if the caller has just
        read it from the log (saves listing the log again)."""
        if version is None:
            version = log_version(self.location / "_delta_log")
        with self._lock:
            if self._latest is not None and self._latest.version() == version:
                return self._latest
            if version is not None and version == self._unreadable:
                return None  # tried once: the next commit may make it readable
        opened = self._open(None)
        with self._lock:
            if opened is None:
                self._unreadable = version
            elif self._latest is None or self._latest.version() < opened.version():
                self._latest = opened
        return opened

    def row_count(self, snapshot: Any) -> int | None:
        """How many rows a version has, from its log alone: the files' record counts less the
        rows their deletion vectors delete; None when a file was committed without its
        count."""
        count: int | None = self._derived(snapshot, "rows", lambda: _row_count(snapshot))
        return count

    def files(self, snapshot: Any) -> pa.Table:
        """The version's data files with their statistics (delta_stats.files_of)."""
        files: pa.Table = self._derived(snapshot, "files", lambda: files_of(snapshot))
        return files

    def shape(self, snapshot: Any) -> str:
        """shape() of a version, worked out once: it decodes the whole schema, and a scan and
        each column's first statistics ask it (a 2,000-column table: ms a time)."""
        text: str = self._derived(snapshot, "shape", lambda: shape(snapshot))
        return text

    def misread_timestamps(self, snapshot: Any, schema: pa.Schema) -> bool:
        """delta_stats.misread_timestamps of a version, worked out once. schema: the served
        schema of the version's shape (one per version)."""
        misread: bool = self._derived(
            snapshot, "misread", lambda: misread_timestamps(self.files(snapshot), schema)
        )
        return misread

    def files_gone(self, snapshot: Any) -> bool:
        """Whether a data file the version reads is gone from the folder: VACUUM removes an
        old version's files once they are past the table's retention. Asked anew each time (a
        version readable now may be vacuumed later); one stat per file, only for time travel."""
        paths = self.files(snapshot).column("path").to_pylist()
        local = (_local_file(self.location, p) for p in paths)
        return not all(f.exists() for f in local if f is not None)

    def base_row_ids(self, snapshot: Any) -> dict[str, int] | None:
        """Each live file's base row id (row_ids.py), or None when the log does not give one
        to every file (Spark computes the row ids then)."""
        bases: dict[str, int] | None = self._derived(
            snapshot, "base_row_ids", lambda: _base_row_ids(self.location, snapshot)
        )
        return bases

    def keep_masks(self, snapshot: Any) -> dict[str, Any]:
        """The version's deletion vectors as keep masks by file (file_parts.keep_masks)."""
        masks: dict[str, Any] = self._derived(
            snapshot, "masks", lambda: keep_masks(snapshot, self.location)
        )
        return masks

    def footers(self, snapshot: Any) -> list[Any] | None:
        """The Parquet footers of the version's files (pyarrow's FileMetaData), or None for a
        version of more than FOOTERS_READ files or one whose files cannot be read here."""
        footers: list[Any] | None = self._derived(
            snapshot, "footers", lambda: _footers(self.location, self.files(snapshot))
        )
        return footers

    def _derived(self, snapshot: Any, what: str, compute: Callable[[], Any]) -> Any:
        """What is read from a version's log, kept per version (a version never changes)."""
        key = (snapshot.version(), what)
        with self._lock:
            if key in self._kept:
                return self._kept[key]
        value = compute()
        with self._lock:
            if len(self._kept) >= _KEPT_DERIVED:
                self._kept.pop(next(iter(self._kept)))
            self._kept[key] = value
        return value

    def at(self, version: int) -> Any:
        """The table at a version (time travel), or None when delta-rs cannot open it: a
        version the log no longer has, or never had, is Spark's to explain."""
        with self._lock:
            if self._latest is not None and self._latest.version() == version:
                return self._latest
        return self._open(version)

    def shape_at(self, version: int | None) -> str | None:
        """shape() of the table at version, None where delta-rs does not open it."""
        snapshot = self.at(version) if version is not None else None
        return self.shape(snapshot) if snapshot is not None else None

    def _open(self, version: int | None) -> Any:
        from deltalake import DeltaTable

        try:
            return DeltaTable(str(self.location), version=version)
        except Exception as exc:  # delta-rs's errors: DeltaError, DeltaProtocolError, OSError
            log.debug("delta-rs cannot open %s at %s: %s", self.location, version, exc)
            return None


def readable(snapshot: Any, features: frozenset[str]) -> bool:
    """Whether delta-rs reads this version as Spark does. features: the table's features
    (Spark's list, writer features included)."""
    needed = reader_features(snapshot)
    return (
        needed is not None
        and needed <= READER_FEATURES
        and not any(f.startswith(COMMITS_ELSEWHERE) for f in features)
    )


def read(
    ctx: Context,
    snapshot: Any,
    schema: pa.Schema,
    wanted: list[str],
    predicate: filters.Predicate | None,
    limit: int,
    prunes: bool = True,
) -> pa.RecordBatchReader:
    """The rows of one version, streamed in batches of SCAN_BATCH_ROWS: only the wanted
    columns are read, files the filter rules out by their statistics are skipped and the
    filter keeps exactly the matching rows (DataFusion evaluates it per row); full width as
    the contract asks, the columns not wanted null. limit > 0 stops after that many rows.
    prunes: False where the bounds show the filter skipping no file and no row group
    (planning.filter_prunes): it then runs as one term."""
    from deltalake import QueryBuilder

    narrowed = [n for n in wanted if pa.types.is_decimal64(schema.field(n).type)]
    columns = ", ".join(
        _narrowed(n, schema.field(n).type) if n in narrowed else filters.sql_identifier(n)
        for n in wanted
    )
    # no column wanted (a count): one constant per row, so the batches still count the rows
    columns = columns or '1 AS "rows"'
    query = f'SELECT {columns} FROM "snapshot"'
    if predicate is not None:
        condition = filters.sql_text(predicate)
        # delta-rs 1.6 hands a table's filter (one without deletion vectors) to its Parquet
        # reader split at every AND, and the reader decodes the columns of each term again
        # (q6 of TPC-H: ten terms over three columns; its filter over SF 1's lineitem 0.18-
        # 0.24 s, as one term 0.11 s). The terms are also what DataFusion skips row groups
        # and files by (a key's point lookup: 6 ms as terms, 29 ms as one), so they stay
        # apart unless the bounds show nothing skipped. `IS TRUE` keeps the same rows (a
        # NULL is not TRUE).
        query += f" WHERE {condition}" if prunes else f" WHERE ({condition}) IS TRUE"
    if limit:
        query += f" LIMIT {int(limit)}"
    engine = QueryBuilder({"datafusion.execution.batch_size": str(SCAN_BATCH_ROWS)})
    source = pa.RecordBatchReader.from_stream(engine.register("snapshot", snapshot).execute(query))

    def batches() -> Iterable[pa.RecordBatch]:
        with source:
            for batch in source:
                ctx.raise_if_done()
                if batch.num_rows:
                    yield full_width(digits_checked(batch, narrowed), schema, wanted)

    return pa.RecordBatchReader.from_batches(schema, batches())


def _narrowed(name: str, served: pa.DataType) -> str:
    """A DECIMAL of at most 18 digits, served as decimal64 (stored_types.served_type), in the
    query: narrowed by DataFusion on its own threads rather than by arrow_convert in this
    process (a two-column sum over SF 1's lineitem costs the server a seventh less CPU,
    docs/benchmarks.md). Its cast keeps a value too wide for the precision, so read's batches
    check the digits (shaping.digits_checked)."""
    column = filters.sql_identifier(name)
    return f"arrow_cast({column}, 'Decimal64({served.precision}, {served.scale})') AS {column}"


COUNT_BATCH_ROWS = 262_144
"""Rows per batch of a count's stream. Its batches carry no data, so fewer and larger ones
cost DuckDB less: each message is decoded and its buffers decompressed by tasks of Arrow's
thread pool (DuckDB 1.4.4's count(*) of SF 1's `lineitem`, compressed: 19 ms in batches of
this size, 38 ms in 65,536-row ones; a million rows gained nothing more)."""


def null_rows(schema: pa.Schema, count: int) -> pa.RecordBatchReader:
    """count rows of schema with every column null, in batches of COUNT_BATCH_ROWS: the
    answer to a scan that needs only the number of rows (deviation scan_needs_no_columns)."""

    def batches() -> Iterable[pa.RecordBatch]:
        for start in range(0, count, COUNT_BATCH_ROWS):
            yield null_batch(schema, min(COUNT_BATCH_ROWS, count - start))

    return pa.RecordBatchReader.from_batches(schema, batches())
