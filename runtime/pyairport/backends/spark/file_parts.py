"""A part of a Delta version's scan read straight from its Parquet files: the files of one
endpoint (several_endpoints), with what the log says of them applied.

delta-rs reads a version whole; a part is a subset of its files, which delta-rs cannot be
asked for. So a part's files are read with pyarrow's Parquet reader, and the log supplies
what the files alone do not say: each file's partition values (the log's, which win over
any copy in the file), the rows its deletion vector deletes (delta-rs's keep masks), and the
columns a file was written without (null), and a row-tracked table's row ids (row_ids.py).
The served types come from the layout, as delta-rs's batches' do (full_width). A TIMESTAMP
Spark wrote as Parquet's INT96 (its default) is read as microseconds, the Delta type, so
that every value from year 1 to 9999 reads exactly (through nanoseconds, pyarrow's default,
a value outside 1677–2262 wraps around). A table with
column mapping is read by the columns' physical names where only its top-level columns have
physical names of their own; one whose nested fields have them too is scanned whole by
delta-rs (and Spark, for its row ids).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from airport_contracts import Context

from ... import filters
from ..shaping import full_width, null_column
from .layout import MAPPING_MODE, ROWID
from .row_ids import row_ids
from .scans import SCAN_BATCH_ROWS

PHYSICAL_NAME = "delta.columnMapping.physicalName"
PARQUET = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit="us"))
_LOCAL = pafs.LocalFileSystem()


def physical_names(snapshot: Any, location: Path | None) -> dict[str, str] | None:
    """How the version's files name each top-level column (its own name without column
    mapping), or None when its files cannot be read as they are: not on this machine, or
    column mapping that renamed a nested field too."""
    if location is None:
        return None
    mode = dict(snapshot.metadata().configuration).get(MAPPING_MODE, "none")
    columns = json.loads(snapshot.schema().to_json()).get("fields", [])
    if mode == "none":
        return {c["name"]: c["name"] for c in columns}
    if mode != "name" or any(_renames_nested(c["type"]) for c in columns):
        return None
    return {c["name"]: c.get("metadata", {}).get(PHYSICAL_NAME, c["name"]) for c in columns}


def _renames_nested(data_type: Any) -> bool:
    if not isinstance(data_type, dict):
        return False
    kind = data_type.get("type")
    if kind == "struct":
        return any(
            f.get("metadata", {}).get(PHYSICAL_NAME, f["name"]) != f["name"]
            or _renames_nested(f["type"])
            for f in data_type["fields"]
        )
    if kind == "array":
        return _renames_nested(data_type["elementType"])
    if kind == "map":
        return _renames_nested(data_type["keyType"]) or _renames_nested(data_type["valueType"])
    return False


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
    physical: dict[str, str] = field(default_factory=dict)  # column → its name in the files
    # a row-tracked table's: each file's base row id, and the column a rewritten row's id is
    # kept in (None: the table's rowid is not row tracking's)
    base_row_ids: dict[str, int] | None = None
    materialized_row_id: str | None = None

    def in_files(self, name: str) -> str:
        return self.physical.get(name, name)

    def live_rows(self) -> list[int | None]:
        """Each file's rows at the version: its records but those its deletion vector drops
        (None where the log does not count the file's records)."""
        records = self.files.column("num_records").to_pylist()
        paths = [unquote(p) for p in self.files.column("path").to_pylist()]
        return [
            int(self.masks[path].sum()) if path in self.masks else rows
            for rows, path in zip(records, paths, strict=True)
        ]

    def total_live_rows(self) -> int | None:
        """The version's rows (live_rows summed); None where the log does not count them all."""
        live = self.live_rows()
        return None if None in live else sum(n or 0 for n in live)


def read(
    ctx: Context,
    part: PartFiles,
    indexes: list[int],
    wanted: list[str],
    predicate: filters.Predicate | None,
    limit: int,
    rowids: np.ndarray | None = None,
) -> pa.RecordBatchReader:
    """The rows of the files at indexes, full width in the served schema (the columns not
    wanted null), filtered; limit > 0 stops after that many rows. rowids (sorted): only the
    rows with these ids, and no file whose ids (a row-tracked table's base row ids, a rowid
    column's bounds in the log) miss them all read."""
    expression = filters.arrow_expression(predicate) if predicate is not None else None
    needed = list(dict.fromkeys(wanted + (filters.columns_of(predicate) if predicate else [])))
    if rowids is not None and ROWID not in needed:
        needed.append(ROWID)

    def batches() -> Iterator[pa.RecordBatch]:
        remaining = limit or None
        for index in indexes:
            for batch in _file_batches(part, index, needed, expression, rowids):
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
    part: PartFiles, index: int, needed: list[str], expression: Any, rowids: np.ndarray | None
) -> Iterator[pa.RecordBatch]:
    relative = unquote(part.files.column("path")[index].as_py())
    path = part.location / relative
    tracked = part.base_row_ids is not None and ROWID in needed
    base = part.base_row_ids.get(str(Path(relative))) if part.base_row_ids is not None else None
    if tracked and base is None:
        raise RuntimeError(f"the log gives no base row id for {relative}")
    # A rowid column's bounds in the log rule a file out before its footer is read.
    if rowids is not None and base is None and not _bounds_may_hold(part, index, rowids):
        return
    stored = [n for n in needed if n not in part.partitions and not (tracked and n == ROWID)]
    mask = part.masks.get(str(Path(relative)))
    # With a deletion vector (or row ids, which are positions) every row is read in the
    # file's order and filtered after; else the filter also skips row groups by their
    # statistics (a dataset's scan).
    in_order = mask is not None or tracked
    file: _InOrder | ds.Dataset = _InOrder(part, path) if in_order else _dataset(part, path)
    present = [n for n in stored if part.in_files(n) in file.schema.names]
    read = [part.in_files(n) for n in present]
    materialized = part.materialized_row_id if tracked else None
    if materialized is not None and materialized in file.schema.names:
        read.append(materialized)
    else:
        materialized = None
    # A row-tracked file's ids are base + each row's position, unless it keeps rewritten
    # rows' own ids in the materialized column (known from its footer): then it is read.
    if rowids is not None and base is not None and materialized is None:
        records = part.files.column("num_records")[index].as_py()
        if records is not None and not _any_within(rowids, base, base + records):
            return
    pushed = not in_order and _on(expression, present, needed) and read == present
    if isinstance(file, _InOrder):
        batches = file.batches(read)
    else:
        batches = file.scanner(
            columns=read,
            filter=expression if pushed else None,
            batch_size=SCAN_BATCH_ROWS,
            use_threads=True,
        ).to_batches()
    offset = 0
    for batch in batches:
        rows = batch.num_rows
        columns = {name: batch.column(i) for i, name in enumerate(present)}
        if tracked:
            kept = batch.column(materialized) if materialized is not None else None
            columns[ROWID] = row_ids(base, offset, rows, kept)  # type: ignore[arg-type]
        named = (
            pa.RecordBatch.from_arrays(list(columns.values()), names=list(columns))
            if columns
            else batch.select([])
        )
        keep = mask[offset : offset + rows] if mask is not None else None
        if rowids is not None:
            asked = (
                _within(rowids, base + offset, rows)
                if tracked and base is not None and materialized is None
                else _members(named.column(ROWID), rowids)
            )
            keep = asked if keep is None else keep & asked
        if keep is not None:
            named = named.filter(pa.array(keep))
        offset += rows
        named = _completed(part, index, named, needed)
        if expression is not None and not pushed:
            named = named.filter(expression)
        if named.num_rows:
            yield named


def _bounds_may_hold(part: PartFiles, index: int, rowids: np.ndarray) -> bool:
    """Whether the file at index may hold a row with one of rowids (sorted) by its rowid
    column's bounds in the log; where the log gives none, yes."""
    if f"min.{ROWID}" not in part.files.column_names:
        return True
    low = part.files.column(f"min.{ROWID}")[index].as_py()
    high = part.files.column(f"max.{ROWID}")[index].as_py()
    return low is None or high is None or _any_within(rowids, int(low), int(high) + 1)


class _InOrder:
    """A file read batch by batch in its rows' order, each batch decoded as it is read, on
    Arrow's threads (one thread took 4.9 s for a 3M-row file of TPC-H's lineitem against
    0.7 s). A dataset's scan decodes a whole row group before its first batch, and Spark
    writes row groups of up to 128 MB of Parquet: SF 1's lineitem has one of 3M rows a file,
    a scan of every column held 830 MiB of it against 270 MiB read this way, as fast.
    Timestamp columns come in the layout's type, as _dataset gives them."""

    def __init__(self, part: PartFiles, path: Path) -> None:
        # its footer read once; closed when read to the end, else when dropped
        self._file = pq.ParquetFile(str(path), coerce_int96_timestamp_unit="us")
        self.schema = self._file.schema_arrow
        served = {part.in_files(f.name): f.type for f in part.schema}
        self._retyped = {
            field.name: served[field.name]
            for field in self.schema
            if pa.types.is_timestamp(field.type)
            and pa.types.is_timestamp(served.get(field.name, pa.null()))
        }

    def batches(self, columns: list[str]) -> Iterator[pa.RecordBatch]:
        with self._file as file:
            for batch in file.iter_batches(
                batch_size=SCAN_BATCH_ROWS, columns=columns, use_threads=True
            ):
                retyped = [n for n in batch.schema.names if n in self._retyped]
                for name in retyped:
                    at = batch.schema.get_field_index(name)
                    cast = batch.column(at).cast(self._retyped[name])
                    batch = batch.set_column(at, batch.schema.field(at).with_type(cast.type), cast)
                yield batch


def _dataset(part: PartFiles, path: Path) -> ds.Dataset:
    """A file as a dataset whose timestamp columns have the layout's type: an INT96 column
    (no time zone in the file) compares with a filter's instants as the table's TIMESTAMP.
    The file's footer is read once, by its fragment."""
    fragment = PARQUET.make_fragment(str(path), filesystem=_LOCAL)
    served = {part.in_files(f.name): f.type for f in part.schema}
    fields = [
        field.with_type(served[field.name])
        if pa.types.is_timestamp(field.type)
        and pa.types.is_timestamp(served.get(field.name, pa.null()))
        else field
        for field in fragment.physical_schema
    ]
    return ds.FileSystemDataset([fragment], pa.schema(fields), PARQUET, _LOCAL)


def _any_within(sorted_ids: np.ndarray, low: int, high: int) -> bool:
    """Whether any of sorted_ids is in [low, high)."""
    at = int(np.searchsorted(sorted_ids, low))
    return at < len(sorted_ids) and int(sorted_ids[at]) < high


def _within(sorted_ids: np.ndarray, start: int, count: int) -> np.ndarray:
    """Which of count rows whose ids run from start on are among sorted_ids."""
    low, high = np.searchsorted(sorted_ids, [start, start + count])
    asked = np.zeros(count, dtype=bool)
    asked[sorted_ids[low:high] - start] = True
    return asked


def _members(ids: pa.Array, sorted_ids: np.ndarray) -> np.ndarray:
    """Which of ids are among sorted_ids: a binary search each (Arrow's is_in would hash
    the whole set again for every batch)."""
    values = ids.to_numpy(zero_copy_only=False)
    if not len(sorted_ids):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_ids, values), len(sorted_ids) - 1)
    return np.asarray(sorted_ids[at] == values)


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
