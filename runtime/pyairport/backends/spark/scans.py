"""Reading a Delta table through Spark, for the scans delta-rs cannot serve (direct.py): a
table whose folder this process cannot see, a reader feature delta-rs lacks, row tracking's
row ids where the log does not give every file's (row_ids.py), a timestamp time point whose
version the log does not name as Delta would (commit_times.py), or a version of another
shape than today's.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import reduce
from pathlib import Path
from typing import Any

import pyarrow as pa

from airport_contracts import Context, TimePoint

from ... import filters
from ..shaping import full_width
from ..time_points import parsed
from . import file_pieces
from .commit_times import commit_version
from .file_pieces import Piece
from .layout import ROWID, Layout
from .partition_stream import arrow_partitions, collected
from .session import functions_for, is_connect
from .sql import quote

SCAN_BATCH_ROWS = 65_536
# A table whose rowids span at most this many is read by one Spark query.
SCAN_RANGE_ROWIDS = 1 << 20
# Data files per Spark Connect query of a streamed scan, by their size on disk: what the
# server holds of such a scan at once is about one group's rows (file_pieces.py).
SCAN_GROUP_BYTES = 32 << 20
_FILE = "__pyairport_file"


def as_of(point: TimePoint | None) -> str:
    """The `VERSION AS OF` / `TIMESTAMP AS OF` clause for a time point ("" for now)."""
    if point is None:
        return ""
    at = parsed(point)
    if isinstance(at, int):
        return f" VERSION AS OF {at}"
    return f" TIMESTAMP AS OF TIMESTAMP'{at.isoformat(' ')}'"


def batches_of(read: pa.Table, schema: pa.Schema, wanted: list[str]) -> list[pa.RecordBatch]:
    """A table Spark read, in scan-sized batches of the served schema."""
    return [full_width(batch, schema, wanted) for batch in read.to_batches(SCAN_BATCH_ROWS)]


@dataclass(frozen=True)
class _Read:
    """What one scan reads: the table, its served schema, the columns filled, the filter and
    the time point's clause."""

    layout: Layout
    schema: pa.Schema
    wanted: list[str]
    predicate: filters.Predicate | None
    clause: str

    def batches(self, frame: Any) -> list[pa.RecordBatch]:
        return batches_of(collected(frame), self.schema, self.wanted)


class Scanner:
    """The scans of one table that Spark reads."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def scan(
        self,
        ctx: Context,
        layout: Layout,
        schema: pa.Schema,
        wanted: list[str],
        predicate: filters.Predicate | None,
        limit: int,
        point: TimePoint | None,
        next_rowid: Callable[[], int | None],
    ) -> pa.RecordBatchReader:
        """The table (at point) with the wanted columns filled, streamed: never more than a
        Spark partition (a classic session) or a group of files (Spark Connect) in the server
        at once, whatever the table's size."""
        read = _Read(layout, schema, wanted, predicate, as_of(point))
        upper = next_rowid() if layout.rowids == "column" else None
        if limit or (upper is not None and upper - 1 <= SCAN_RANGE_ROWIDS):
            frame = self.frame(read)
            return pa.RecordBatchReader.from_batches(
                schema, read.batches(frame.limit(limit) if limit else frame)
            )
        if not read.clause:  # one version, however long the client takes
            read = replace(read, clause=self._pinned(layout))
        if not is_connect(self.spark):
            return self._partitions(ctx, read)
        return self._pieces(ctx, read)

    def schema_at(self, layout: Layout, clause: str) -> pa.Schema:
        """The served schema of the table as it was at a time point."""
        from .layout import layout_of

        arrow = self.spark.sql(f"SELECT * FROM {layout.ident}{clause}").limit(0).toArrow().schema
        # rows are addressed as today: a tracked table's past rows keep their row ids
        properties = {"delta.enableRowTracking": "true"} if layout.rowids == "tracked" else {}
        return layout_of(layout.ident, arrow, None, properties, (), frozenset(), frozenset()).schema

    def frame(self, read: _Read, piece: Piece | None = None) -> Any:
        """The table (at a time point) as a DataFrame, filtered, then projected; piece: only
        the rows of its data files."""
        layout, wanted = read.layout, read.wanted
        predicate = filters.spark_safe(read.predicate) if read.predicate is not None else None
        filtered = filters.columns_of(predicate) if predicate is not None else []
        ranged = [piece.column] if piece is not None and piece.column is not None else []
        selected = list(dict.fromkeys(wanted + filtered + ranged))
        columns = [
            f"{layout.rowid_sql} AS {quote(ROWID)}" if n == ROWID else quote(n) for n in selected
        ]
        if piece is not None:
            columns.append(f"_metadata.file_path AS {_FILE}")
        frame = self.spark.sql(f"SELECT {', '.join(columns) or 1} FROM {layout.ident}{read.clause}")
        if piece is not None:
            frame = frame.where(frame[_FILE].isin(list(piece.files)))
            if piece.column is not None:
                frame = frame.where(_within(frame, piece))
        if predicate is not None:
            frame = frame.where(filters.spark_column(predicate, frame))
        return frame.select(*[quote(n) for n in wanted])

    def _partitions(self, ctx: Context, read: _Read) -> pa.RecordBatchReader:
        """A classic session's scan, read once, one Spark partition at a time
        (partition_stream.py)."""
        streamed = arrow_partitions(self.frame(read), SCAN_BATCH_ROWS)

        def served() -> Iterable[pa.RecordBatch]:
            for batch in streamed:
                ctx.raise_if_done()
                yield full_width(batch, read.schema, read.wanted)

        return pa.RecordBatchReader.from_batches(read.schema, served())

    def _pinned(self, layout: Layout) -> str:
        """The clause that reads the table's latest version, whatever is committed after."""
        (version,) = (
            self.spark.sql(f"DESCRIBE HISTORY {layout.ident} LIMIT 1").select("version").first()
        )
        return f" VERSION AS OF {int(version)}"

    def _pieces(self, ctx: Context, read: _Read) -> pa.RecordBatchReader:
        """A Spark Connect session's scan, one query per group of the version's data files,
        each confined by Delta's data skipping to about its own files where a column's ranges
        allow it (file_pieces.py)."""
        table = self.spark.sql(f"SELECT * FROM {read.layout.ident}{read.clause}")
        columns = file_pieces.candidates(table.schema, read.layout)
        measures = "".join(
            f", min({quote(c)}), max({quote(c)}), count(*) > count({quote(c)})" for c in columns
        )
        rows = self.spark.sql(
            f"SELECT _metadata.file_path, max(_metadata.file_size){measures}"
            f" FROM {read.layout.ident}{read.clause} GROUP BY 1"
        ).collect()
        files = [
            file_pieces.FileRange(
                row[0],
                int(row[1]),
                {
                    c: (row[2 + 3 * i], row[3 + 3 * i], bool(row[4 + 3 * i]))
                    for i, c in enumerate(columns)
                },
            )
            for row in rows
        ]
        pieces = file_pieces.plan(files, columns, SCAN_GROUP_BYTES)

        def served() -> Iterable[pa.RecordBatch]:
            for piece in pieces:
                ctx.raise_if_done()
                yield from read.batches(self.frame(read, piece))

        return pa.RecordBatchReader.from_batches(read.schema, served())


def _within(frame: Any, piece: Piece) -> Any:
    """A piece's range of its column (file_pieces.widened), its nulls too where its files
    hold some: the condition Delta skips the other files by."""
    lit = functions_for(frame).lit
    column = frame[quote(str(piece.column))]
    kind = frame.schema[str(piece.column)].dataType
    terms = []
    if piece.low is not None:
        low, high = file_pieces.widened(piece)
        bounds = [column >= lit(low).cast(kind)] if low is not None else []
        bounds += [column <= lit(high).cast(kind)] if high is not None else []
        terms.append(reduce(operator.and_, bounds) if bounds else column.isNotNull())
    if piece.nulls:
        terms.append(column.isNull())
    return reduce(operator.or_, terms)


def log_version(log_dir: Path) -> int | None:
    """The latest version committed to a _delta_log folder (its highest `<version>.json`), or
    None when it cannot be read."""
    try:
        names = os.listdir(log_dir)
    except OSError:
        return None
    return max((v for n in names if (v := commit_version(n)) is not None), default=None)
