"""What DuckDB plans a Delta table's scan with, from the table's log (delta_stats.py): the
scan split into parts of one version (PartitionedTable: DuckDB reads each endpoint on a
thread), column statistics (StatisticsTable), and, where the server allows it, the scan left
to DuckDB's own delta_scan (TableRef). A mixin of SparkTable.

A part's token pins the version, so every part reads the same one whatever is committed
meanwhile: a count is split into row counts, a scan into groups of its files
(file_parts.py). Scans delta-rs cannot serve (Spark's) are one part, unpinned; a table whose
files cannot be read as they are (column mapping) is one part, pinned.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pyarrow as pa

from airport_contracts import (
    ColumnStats,
    Context,
    FunctionCall,
    FunctionCallArg,
    FunctionCallRequest,
    InvalidTicket,
    NotFound,
    ScanOptions,
    ScanPartition,
)

from ... import filters
from ..scan_parts import NOT_A_PART, SPLIT, part_count, part_fields, part_indexes
from . import delta_stats, direct, file_parts, row_ids
from .layout import ROWID, Layout
from .stored_types import stored_type


class DeltaScanPlanning:
    """PartitionedTable and StatisticsTable for a Delta table read by delta-rs."""

    # SparkTable's: its delta-rs view, its layout as it is now (with the log's latest
    # version), the version to read as delta-rs opened it (or None: Spark reads it), and its
    # way of turning Spark's failures into what a client may see
    snapshots: direct.Snapshots | None
    fresh_layout: Callable[[], tuple[Layout, int | None]]
    direct_snapshot: Callable[..., Any]
    client_errors: Callable[[str], AbstractContextManager[None]]
    backend: Any  # its SparkBackend (delta_scan_refs: the server's --delta-scan-refs)
    statistics_memo: StatisticsMemo  # its columns' statistics at the latest version

    def scan_partitions(self, ctx: Context, opts: ScanOptions) -> list[ScanPartition]:
        layout, latest = self.fresh_layout()
        with self.client_errors("scan"):
            snapshot = self.direct_snapshot(layout, opts.time_point, latest)
        # a row-tracked table's rowids are computed from the log and the files, file by file
        # (part_files), when the scan asks for them; else delta-rs reads it, as a plain one
        wanted = scan_columns(layout, layout.schema, opts, by_delta_rs=True)
        tracked_rowids = layout.rowids == "tracked" and ROWID in wanted
        if snapshot is None or self.snapshots is None:
            return [ScanPartition(token="")]  # Spark reads it, whole
        version = snapshot.version()
        predicate = filters.parse(opts.filter, pushable(layout)) if opts.filter else None
        count = self.snapshots.row_count(snapshot)
        if opts.rows_only and predicate is None and count is not None:
            parts = SPLIT.parts(count, count)
            sizes = [count * (i + 1) // parts - count * i // parts for i in range(parts)]
            return [
                ScanPartition(token=json.dumps({"version": version, "rows": n}), rows=n)
                for n in sizes
            ]
        part_files = self.part_files(layout, snapshot)
        if part_files is None and tracked_rowids:
            return [ScanPartition(token="")]  # Spark reads it, whole, for its row ids
        if part_files is None:
            return [ScanPartition(token=json.dumps({"version": version}), rows=_known(count))]
        files = part_files.files
        records = files.column("num_records").to_pylist()
        if None in records and not tracked_rowids:
            return [ScanPartition(token=json.dumps({"version": version}), rows=_known(count))]
        live = [-1 if rows is None else rows for rows in part_files.live_rows()]
        parts = SPLIT.parts(sum(live), len(live))
        if parts == 1 and not tracked_rowids:  # delta-rs reads it whole, skipping files
            return [ScanPartition(token=json.dumps({"version": version}), rows=sum(live))]
        digest = file_parts.digest(files)
        return [
            ScanPartition(
                token=json.dumps({"version": version, "files": group, "digest": digest}),
                rows=sum(live[i] for i in group),
            )
            for group in file_parts.groups(live, parts)
        ]

    def _read_part(
        self,
        ctx: Context,
        layout: Layout,
        token: str,
        wanted: list[str],
        predicate: filters.Predicate | None,
        limit: int,
    ) -> pa.RecordBatchReader:
        """One part of a scan_partitions answer (the version it pins, as delta-rs reads it)."""
        if self.snapshots is None:
            raise RuntimeError("the table cannot be read by parts here")
        return read_part(ctx, self.snapshots, layout, token, wanted, predicate, limit)

    def part_files(self, layout: Layout, snapshot: Any) -> file_parts.PartFiles | None:
        """What reading the version's files one by one needs (the module's part_files)."""
        if self.snapshots is None:
            return None
        return part_files(self.snapshots, layout, snapshot)

    def function_calls(self, ctx: Context, request: FunctionCallRequest) -> list[FunctionCall]:
        """delta_scan of the table's folder, for DuckDB to read this scan itself, when the
        server allows it (`--delta-scan-refs`) and DuckDB's reader gives the table as served:
        a folder on this machine, no rowid column (DuckDB's UPDATE and DELETE scans ask for
        it), no column stored as another type, today's rows, and no deletion vector (DuckDB's
        delta_scan applies them when called itself, but not when the Airport extension runs
        it for an endpoint: it would return deleted rows). Else none: DoGet serves it."""
        layout, latest = self.fresh_layout()
        if (
            not self.backend.delta_scan_refs
            or layout.location is None
            or layout.rowids is not None
            or layout.retyped
            or request.time_point is not None
        ):
            return []
        with self.client_errors("scan"):
            snapshot = self.direct_snapshot(layout, None, latest)
        if snapshot is None or self.snapshots is None or self.snapshots.keep_masks(snapshot):
            return []
        location = str(layout.location.resolve())
        return [FunctionCall("delta_scan", [FunctionCallArg(location, pa.string())])]

    def column_statistics(self, ctx: Context, column_name: str, column_type: str) -> ColumnStats:
        """A column's statistics from the latest version's log; unknown for the columns Delta
        keeps no usable statistics of (partition columns, those stored as another type, the
        rowid row tracking computes) and for tables Spark reads. A version's are worked out
        once: DuckDB 1.4.4 asks twice for each column of every query, keeping no answer."""
        layout, latest = self.fresh_layout()
        if layout.schema.get_field_index(column_name) < 0:
            raise NotFound()
        memo = self.statistics_memo.of_version(latest)
        known = memo.get(column_name)
        if known is None:
            known = memo[column_name] = self._column_statistics(layout, latest, column_name)
        return known

    def _column_statistics(self, layout: Layout, latest: int | None, column: str) -> ColumnStats:
        with self.client_errors("statistics"):
            snapshot = self.direct_snapshot(layout, None, latest)
        unknowable = set(layout.retyped) | set(layout.partitions)
        if layout.rowids == "tracked":
            unknowable.add(ROWID)
        if snapshot is None or self.snapshots is None or column in unknowable:
            return ColumnStats()
        files = self.snapshots.files(snapshot)
        return delta_stats.column_stats(files, layout.schema.field(column))


class StatisticsMemo:
    """The column statistics of one version of a table, by column: a version's statistics
    never change. Asked for another version, it forgets the last; an unknown version (a log
    that cannot be listed) is never kept."""

    def __init__(self) -> None:
        self._version: int | None = None
        self._by_column: dict[str, ColumnStats] = {}

    def of_version(self, version: int | None) -> dict[str, ColumnStats]:
        """The memo for version (an empty dict that keeps nothing for None)."""
        if version is None:
            return {}
        if version != self._version:
            self._version, self._by_column = version, {}
        return self._by_column


def scan_columns(
    layout: Layout, schema: pa.Schema, opts: ScanOptions | None, by_delta_rs: bool
) -> list[str]:
    """The columns a scan fills (the others come back null). The rowid comes along where it
    is a stored column; a row-tracked table's are computed file by file, in order, so only
    when asked for (DuckDB asks by its own column id), and the rest of the scan stays on
    delta-rs' parallel reader. A count reads none, or for Spark's SELECT one."""
    tracked = layout.rowids == "tracked"
    wanted = [
        n
        for n in schema.names
        if opts is None or not opts.columns or n in opts.columns or (n == ROWID and not tracked)
    ]
    if opts is not None and opts.rows_only:
        wanted = [] if by_delta_rs or opts.partition else wanted[:1]
    return wanted


class PartGone(RuntimeError):
    """A scan part that can no longer be read as planned: the client's query should run
    again (the message says so, and names no path)."""


def read_part(
    ctx: Context,
    snapshots: direct.Snapshots,
    layout: Layout,
    token: str,
    wanted: list[str],
    predicate: filters.Predicate | None,
    limit: int,
) -> pa.RecordBatchReader:
    """One part of a scan_partitions answer: the version its token pins, read by delta-rs
    (here or in a data worker, detached.py); PartGone when that version is gone or no longer
    has today's shape, InvalidTicket when the token is not one this table planned (tickets
    come back from clients)."""
    part = part_fields(token)
    latest = snapshots.latest()
    # no part names a version not yet written
    version = part_count(part, "version", latest.version() if latest is not None else None)
    snapshot = snapshots.at(version)
    if snapshot is None or not direct.readable(snapshot, layout.features):
        raise PartGone(f"version {version} of the table cannot be read any more")
    if snapshots.shape(snapshot) != snapshots.shape(latest):
        raise PartGone("the table's columns changed while it was read; run the query again")
    if "rows" in part:
        rows = part_count(part, "rows", snapshots.row_count(snapshot) or 0)
        return direct.null_rows(layout.schema, rows)
    if "files" not in part or layout.location is None:
        return read_version(ctx, snapshots, layout, snapshot, wanted, predicate, limit)
    files_read = part_files(snapshots, layout, snapshot)
    if files_read is None:
        raise PartGone(f"version {version} of the table cannot be read by parts any more")
    if part.get("digest") != file_parts.digest(files_read.files):
        # a version's files never change: another list is not one this table planned
        raise InvalidTicket(reason=NOT_A_PART)
    indexes = part_indexes(part, "files", files_read.files.num_rows)
    return file_parts.read(ctx, files_read, indexes, wanted, predicate, limit)


def read_version(
    ctx: Context,
    snapshots: direct.Snapshots,
    layout: Layout,
    snapshot: Any,
    wanted: list[str],
    predicate: filters.Predicate | None,
    limit: int,
    files: file_parts.PartFiles | None = None,
) -> pa.RecordBatchReader:
    """A version whole, in today's shape: by delta-rs, or file by file by pyarrow where
    delta-rs would misread its timestamps (delta_stats.misread_timestamps; SparkTable.
    direct_snapshot leaves to Spark a version neither reads) or a row-tracked table's rowids
    are asked for (a ticket may ask for them with any part). files: the version's part_files
    when the caller has made them already."""
    log_files = snapshots.files(snapshot)
    misread = snapshots.misread_timestamps(snapshot, layout.schema)
    if misread or (layout.rowids == "tracked" and ROWID in wanted):
        if files is None:
            files = part_files(snapshots, layout, snapshot)
        if files is None:
            raise RuntimeError("this version of the table cannot be read without Spark here")
        every = list(range(files.files.num_rows))
        return file_parts.read(ctx, files, every, wanted, predicate, limit)
    prunes = predicate is not None and filter_prunes(snapshots, snapshot, log_files, predicate)
    return direct.read(ctx, snapshot, layout.schema, wanted, predicate, limit, prunes)


def filter_prunes(
    snapshots: direct.Snapshots, snapshot: Any, files: pa.Table, predicate: filters.Predicate
) -> bool:
    """Whether DataFusion may skip some of the version's files or row groups by predicate's
    bounds (direct.read): unless the log's bounds keep every file and the files' footers
    every row group."""
    if not delta_stats.rules_out_none(files, predicate):
        return True
    footers = snapshots.footers(snapshot)
    if footers is None:
        return True
    groups = delta_stats.row_groups_of(footers, filters.columns_of(predicate))
    return groups is None or not delta_stats.rules_out_none(groups, predicate)


def part_files(
    snapshots: direct.Snapshots, layout: Layout, snapshot: Any
) -> file_parts.PartFiles | None:
    """What reading the version's files one by one needs, or None when they cannot be read
    as they are (file_parts.physical_names) or, for a row-tracked table, the log does not give
    every file its base row id."""
    physical = file_parts.physical_names(snapshot, layout.location)
    if physical is None or layout.location is None:
        return None
    bases = None
    materialized = None
    if layout.rowids == "tracked":
        bases = snapshots.base_row_ids(snapshot)
        if bases is None:
            return None
        configuration = dict(snapshot.metadata().configuration)
        materialized = configuration.get(row_ids.MATERIALIZED_ROW_ID)
    return file_parts.PartFiles(
        location=layout.location,
        schema=layout.schema,
        partitions=layout.partitions,
        files=snapshots.files(snapshot),
        masks=snapshots.keep_masks(snapshot),
        physical=physical,
        base_row_ids=bases,
        materialized_row_id=materialized,
    )


def _known(count: int | None) -> int:
    return -1 if count is None else count


def pushable(layout: Layout, schema: pa.Schema | None = None) -> pa.Schema:
    """The columns of schema (by default the layout's) a filter is pushed down on, in the
    types they are stored as, where it runs: not those stored as a type they came as another
    (retyped); a decimal served as decimal64 is filtered as the stored decimal128."""
    fields = layout.schema if schema is None else schema
    return pa.schema(
        [f.with_type(stored_type(f.type) or f.type) for f in fields if f.name not in layout.retyped]
    )
