"""Reading a Delta table for a scan: straight from its parquet files with pyarrow where they
hold exactly the rows of the version read, else through Spark.

The direct read needs the files on this machine and files that hold exactly their rows: no
deletion vectors (rows deleted inside a file), column mapping (other physical names),
partition columns (values kept outside the files), row-tracked rowids (computed from the log)
or commits kept outside the log folder. Spark names a version's files once; the latest version
is read from the log folder's file names, so a scan of an unchanged table asks Spark nothing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.parquet as pq

from airport_contracts import Context, TimePoint

from ... import filters
from .layout import ROWID, Layout
from .sql import quote

SCAN_BATCH_ROWS = 65_536
READ_BUFFER_BYTES = 1 << 20  # a direct scan reads each column of a file through this much
SCAN_RANGE_ROWIDS = 1 << 20  # rowids per Spark query of a streamed scan
# Table features whose commits may be held outside the _delta_log folder until later.
COMMITS_ELSEWHERE = ("coordinatedCommits", "catalogManaged", "catalogOwned")


class TimePointError(ValueError):
    """A time point the table cannot be read at (its unit or value): the client's error."""


def as_of(point: TimePoint | None) -> str:
    """The `VERSION AS OF` / `TIMESTAMP AS OF` clause for a time point ("" for now). Units
    are compared without case; values are re-rendered, never pasted."""
    if point is None:
        return ""
    unit = point.unit.lower()
    if unit == "version":
        text = point.value.strip()
        if not text.isdigit():
            raise TimePointError(
                f"version must be a non-negative integer, got {point.value!r}"[:120]
            )
        return f" VERSION AS OF {int(text)}"
    if unit in ("timestamp", "timestamp_ns"):
        try:
            moment = datetime.fromisoformat(point.value.strip())
        except ValueError:
            raise TimePointError(f"not a timestamp: {point.value!r}"[:120]) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return f" TIMESTAMP AS OF TIMESTAMP'{moment.astimezone(UTC).isoformat(' ')}'"
    raise TimePointError(f"unit {point.unit!r} is not one of version, timestamp"[:120])


def full_width(read: pa.Table, schema: pa.Schema, wanted: list[str]) -> pa.Table:
    """read (the wanted columns) as the table schema: types cast, the rest null."""
    columns = [
        read.column(f.name).cast(f.type) if f.name in wanted else pa.nulls(read.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


class Scanner:
    """The scans of one table; it remembers the files of the last version read directly."""

    def __init__(self, spark: Any, shares_files: bool) -> None:
        self.spark = spark
        self.shares_files = shares_files
        self._lock = threading.Lock()
        self._version_files: dict[int, list[str] | None] = {}

    def scan(
        self,
        ctx: Context,
        layout: Layout,
        schema: pa.Schema,
        wanted: list[str],
        predicate: filters.Predicate | None,
        limit: int,
        point: TimePoint | None,
        files: list[str] | None,
        next_rowid: Callable[[], int | None],
    ) -> pa.RecordBatchReader:
        """The table (at point) with the wanted columns filled: from files when given (see
        files()), else through Spark."""
        clause = as_of(point)
        if files is not None:  # pyarrow skips row groups by their statistics
            return self._read_files(ctx, schema, files, predicate, wanted)
        frame = self.frame(layout, clause, predicate, wanted)
        upper = next_rowid() if layout.rowids == "column" else None
        if (
            limit
            or layout.rowids != "column"
            or (upper is not None and upper - 1 <= SCAN_RANGE_ROWIDS)
        ):
            read = (frame.limit(limit) if limit else frame).toArrow()
            return pa.RecordBatchReader.from_batches(
                schema, full_width(read, schema, wanted).to_batches(SCAN_BATCH_ROWS)
            )
        return self._ranges(ctx, layout, schema, predicate, wanted, clause)

    def schema_at(self, layout: Layout, clause: str) -> pa.Schema:
        """The served schema of the table as it was at a time point."""
        from .layout import layout_of

        arrow = self.spark.sql(f"SELECT * FROM {layout.ident}{clause}").limit(0).toArrow().schema
        # rows are addressed as today: a tracked table's past rows keep their row ids
        properties = {"delta.enableRowTracking": "true"} if layout.rowids == "tracked" else {}
        return layout_of(layout.ident, arrow, None, properties, (), frozenset(), frozenset()).schema

    def frame(
        self, layout: Layout, clause: str, predicate: filters.Predicate | None, wanted: list[str]
    ) -> Any:
        """The table (at a time point) as a DataFrame, filtered, then projected."""
        filtered = filters.columns_of(predicate) if predicate is not None else []
        read = wanted + [name for name in filtered if name not in wanted]
        columns = [
            f"{layout.rowid_sql} AS {quote(ROWID)}" if n == ROWID else quote(n) for n in read
        ]
        frame = self.spark.sql(f"SELECT {', '.join(columns)} FROM {layout.ident}{clause}")
        if predicate is not None:
            frame = frame.where(filters.spark_column(predicate, frame))
        return frame.select(*[quote(n) for n in wanted])

    def _ranges(
        self,
        ctx: Context,
        layout: Layout,
        schema: pa.Schema,
        predicate: filters.Predicate | None,
        wanted: list[str],
        clause: str,
    ) -> pa.RecordBatchReader:
        """A table whose rowids span more than one range, streamed from one version (a
        consistent snapshot however long the client takes) one rowid range at a time, so the
        server never holds the table."""
        if not clause:
            (version,) = (
                self.spark.sql(f"DESCRIBE HISTORY {layout.ident} LIMIT 1").select("version").first()
            )
            clause = f" VERSION AS OF {int(version)}"
        frame = self.frame(layout, clause, predicate, wanted)
        low, high = frame.selectExpr(f"min({quote(ROWID)})", f"max({quote(ROWID)})").first()

        def ranges() -> Iterable[pa.RecordBatch]:
            if low is None:
                return
            rowid = frame[ROWID]
            for start in range(int(low), int(high) + 1, SCAN_RANGE_ROWIDS):
                ctx.raise_if_done()
                part = frame.where((rowid >= start) & (rowid < start + SCAN_RANGE_ROWIDS))
                yield from full_width(part.toArrow(), schema, wanted).to_batches(SCAN_BATCH_ROWS)

        return pa.RecordBatchReader.from_batches(schema, ranges())

    # --- the direct read ------------------------------------------------------------------

    def files(self, layout: Layout, point: TimePoint | None) -> list[str] | None:
        """The parquet files of the version to read, when they hold exactly its rows and
        this process can read them; None otherwise."""
        if (
            not self.shares_files
            or layout.location is None
            or layout.rowids == "tracked"
            or layout.partitions
            or layout.features & {"deletionVectors", "columnMapping"}
            or any(f.startswith(COMMITS_ELSEWHERE) for f in layout.features)
        ):
            return None
        if point is None:
            version = log_version(layout.location / "_delta_log")
        elif point.unit.lower() == "version":
            version = int(point.value.strip())
        else:
            return None  # a timestamp: Spark finds the version
        if version is None:
            return None
        with self._lock:
            if version in self._version_files:
                return self._version_files[version]
        pinned = self.spark.sql(f"SELECT * FROM {layout.ident} VERSION AS OF {version}")
        uris = pinned.inputFiles()
        paths: list[str] | None = [
            unquote(urlparse(uri).path) for uri in uris if uri.startswith("file:")
        ]
        paths = paths if paths is not None and len(paths) == len(uris) else None
        with self._lock:
            self._version_files = {version: paths}  # only the latest is read again
        return paths

    def _read_files(
        self,
        ctx: Context,
        schema: pa.Schema,
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
                    (whole,) = ds.dataset(path, format="parquet", schema=schema).get_fragments()
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
                            field = schema.field(name)
                            batch = batch.append_column(field, pa.nulls(batch.num_rows, field.type))
                    if expression is not None:
                        batch = batch.filter(expression)
                    if batch.num_rows:
                        yield from full_width(
                            pa.Table.from_batches([batch]), schema, wanted
                        ).to_batches()

        return pa.RecordBatchReader.from_batches(schema, batches())


def log_version(log_dir: Path) -> int | None:
    """The latest version committed to a _delta_log folder (its highest `<version>.json`), or
    None when it cannot be read."""
    try:
        names = os.listdir(log_dir)
    except OSError:
        return None
    versions = [
        int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json") and n[:20].isdigit()
    ]
    return max(versions, default=None)
