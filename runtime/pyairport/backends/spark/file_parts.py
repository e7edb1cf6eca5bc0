"""A part of a Delta version's scan read straight from its Parquet files: the files of one
endpoint (several_endpoints), with what the log says of them applied.

delta-rs reads a version whole; a part is a subset of its files, which delta-rs cannot be
asked for. So a part's files are read with pyarrow's Parquet reader, and the log supplies
what the files alone do not say: each file's partition values (the log's, which win over
any copy in the file), the rows its deletion vector deletes (delta-rs's keep masks), and the
columns a file was written without (null). The served types come from the layout, as
delta-rs's batches' do (full_width). A table with column mapping (files name columns by
physical ids) is not read this way; it is scanned whole by delta-rs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from airport_contracts import Context

from ... import filters
from ..shaping import full_width, null_column
from .scans import SCAN_BATCH_ROWS


def readable_by_files(snapshot: Any, location: Path | None) -> bool:
    """Whether the version's files can be read as they are: on this machine, and naming
    their columns as the table does (no column mapping)."""
    if location is None:
        return False
    protocol = snapshot.protocol()
    mode = dict(snapshot.metadata().configuration).get("delta.columnMapping.mode", "none")
    return "columnMapping" not in (protocol.reader_features or ()) and mode == "none"


def digest(files: pa.Table) -> str:
    """Which files (in which order) a part's indexes are into."""
    paths = "\n".join(files.column("path").to_pylist())
    return hashlib.sha256(paths.encode()).hexdigest()[:16]


def groups(live_rows: list[int], count: int) -> list[list[int]]:
    """The version's files (by index) in count groups of about the same number of rows."""
    target = sum(live_rows) / count
    out: list[list[int]] = [[]]
    held = 0
    for index, rows in enumerate(live_rows):
        if held >= target and len(out) < count:
            out.append([])
            held = 0
        out[-1].append(index)
        held += rows
    return [group for group in out if group]


def keep_masks(snapshot: Any, location: Path) -> dict[str, np.ndarray]:
    """Each file with a deletion vector (by its path relative to the table), and which of
    its rows are kept."""
    masks: dict[str, np.ndarray] = {}
    root = str(location.resolve())
    with pa.RecordBatchReader.from_stream(snapshot.deletion_vectors()) as reader:
        for batch in reader:
            vectors = batch.column("selection_vector")
            for row, path in enumerate(batch.column("filepath").to_pylist()):
                absolute = unquote(urlparse(path).path) if "://" in path else path
                relative = str(Path(absolute).resolve().relative_to(root))
                masks[relative] = vectors[row].values.to_numpy(zero_copy_only=False)
    return masks


@dataclass(frozen=True)
class PartFiles:
    """What reading a part needs of its version: the table's folder and layout schema, its
    partition columns, the files' table (files_of) and the deletion vectors' keep masks."""

    location: Path
    schema: pa.Schema
    partitions: tuple[str, ...]
    files: pa.Table
    masks: dict[str, np.ndarray]


def read(
    ctx: Context,
    part: PartFiles,
    indexes: list[int],
    wanted: list[str],
    predicate: filters.Predicate | None,
    limit: int,
) -> pa.RecordBatchReader:
    """The rows of the files at indexes, full width in the served schema (the columns not
    wanted null), filtered; limit > 0 stops after that many rows."""
    expression = filters.arrow_expression(predicate) if predicate is not None else None
    needed = list(dict.fromkeys(wanted + (filters.columns_of(predicate) if predicate else [])))

    def batches() -> Iterator[pa.RecordBatch]:
        remaining = limit or None
        for index in indexes:
            for batch in _file_batches(part, index, needed, expression):
                ctx.raise_if_done()
                if remaining is not None:
                    batch = batch.slice(0, remaining)
                    remaining -= batch.num_rows
                if batch.num_rows:
                    yield full_width(batch, part.schema, wanted)
                if remaining == 0:
                    return

    return pa.RecordBatchReader.from_batches(part.schema, batches())


def _file_batches(
    part: PartFiles, index: int, needed: list[str], expression: Any
) -> Iterator[pa.RecordBatch]:
    relative = unquote(part.files.column("path")[index].as_py())
    path = part.location / relative
    stored = [n for n in needed if n not in part.partitions]
    dataset = ds.dataset(str(path), format="parquet")
    present = [n for n in stored if n in dataset.schema.names]
    mask = part.masks.get(str(Path(relative)))
    # With a deletion vector the rows are read in file order to line up with its mask, and
    # filtered after; without one the filter also skips row groups by their statistics.
    scanner = dataset.scanner(
        columns=present,
        filter=expression if mask is None and _on(expression, present, needed) else None,
        batch_size=SCAN_BATCH_ROWS,
        use_threads=mask is None,
    )
    offset = 0
    for batch in scanner.to_batches():
        if mask is not None:
            keep = mask[offset : offset + batch.num_rows]
            offset += batch.num_rows
            batch = batch.filter(pa.array(keep))
        batch = _completed(part, index, batch, needed)
        if expression is not None and (mask is not None or not _on(expression, present, needed)):
            batch = batch.filter(expression)
        if batch.num_rows:
            yield batch


def _on(expression: Any, present: list[str], needed: list[str]) -> bool:
    """Whether the file holds every column the filter names (else it runs after the
    partition values and missing columns are added)."""
    return expression is not None and len(present) == len(needed)


def _completed(
    part: PartFiles, index: int, batch: pa.RecordBatch, needed: list[str]
) -> pa.RecordBatch:
    """The needed columns of a file's batch: its own, the file's partition values from the
    log, and null for a column the file was written without."""
    columns = []
    for name in needed:
        field = part.schema.field(name)
        if name in part.partitions:
            value = part.files.column(f"partition.{name}")[index]
            columns.append(pa.repeat(value, batch.num_rows).cast(field.type))
        elif name in batch.schema.names:
            columns.append(batch.column(name))
        else:
            columns.append(null_column(batch.num_rows, field.type))
    return pa.RecordBatch.from_arrays(columns, names=needed)
