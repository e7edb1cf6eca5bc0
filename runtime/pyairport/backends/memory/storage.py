"""The memory table's storage operations, vectorised: rowid lookups (an offset while the
rowids have no gap, else a searchsorted), taking rows, appending batches, and rewriting only
the chunks that hold changed rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..distinct_ids import distinct_count

MAX_CHUNKS = 256  # the compactor merges chunks once a table has this many
CHUNKS_BACKSTOP = 4096  # merged at commit beyond this: the compactor has not kept up
_SMALL_BATCH_ROWS = 16_384  # trailing chunks smaller than this are merged into one


@dataclass
class Found:
    positions: np.ndarray  # positions of the rowids that exist
    valid: np.ndarray  # mask over the input rowids: which exist


@dataclass
class Lookup:
    """Rowids and where they were found in the data version `version` (reused at commit
    when nothing else committed in between, so each rowid is looked up once)."""

    ids: np.ndarray
    found: Found
    version: int


class Keep:
    """Which rows of a scan's batches to send: not deleted (live, a mask over the whole
    table, consumed batch by batch) and kept by DuckDB's pushed-down filter — unless pyarrow
    cannot evaluate it (e.g. a constant of another type), then every row: DuckDB filters
    again anyway."""

    def __init__(self, live: np.ndarray | None, expression: Any) -> None:
        self.live = live
        self.expression = expression
        self.offset = 0

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if self.live is not None:
            mask = self.live[self.offset : self.offset + batch.num_rows]
            self.offset += batch.num_rows
            batch = batch.filter(pa.array(mask))
        if self.expression is not None:
            try:
                batch = batch.filter(self.expression)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                self.expression = None
        return batch


def rows_at(data: pa.Table, positions: np.ndarray) -> pa.RecordBatch:
    """The rows at these positions, in this order. Taken chunk by chunk: a take on a
    chunked column would first concatenate the whole column (O(n) per RETURNING batch)."""
    if not len(positions):
        return pa.RecordBatch.from_pylist([], schema=data.schema)
    first, count = int(positions[0]), len(positions)
    if data.num_columns and int(positions[-1]) - first == count - 1 and _ascending(positions):
        # consecutive rows (DuckDB sends the rowids of a range in order): a zero-copy slice
        return data.slice(first, count).combine_chunks().to_batches()[0]
    columns = []
    plans: dict[tuple[int, ...], _TakePlan] = {}
    indices: pa.Array | None = None
    for column in data.columns:
        if column.num_chunks == 1:  # the common case (inserts are coalesced): a plain take
            indices = pa.array(positions) if indices is None else indices
            columns.append(column.chunk(0).take(indices))
            continue
        lengths = tuple(len(chunk) for chunk in column.chunks)
        plan = plans.get(lengths) or plans.setdefault(lengths, _TakePlan.of(lengths, positions))
        pieces = [
            column.chunk(c).take(pa.array(local))
            for c, local in zip(plan.chunks, plan.local, strict=True)
        ]
        grouped = pieces[0] if len(pieces) == 1 else pa.concat_arrays(pieces)
        columns.append(grouped if plan.restore is None else grouped.take(plan.restore))
    return pa.RecordBatch.from_arrays(columns, schema=data.schema)


@dataclass
class _TakePlan:
    """positions (row numbers of a chunked column) grouped by chunk: which chunks, which of
    the positions fall in each (`groups`, indices into positions, in their given order),
    their offsets within the chunk (`local`), and how to put rows taken chunk by chunk back
    in the given order (`restore`; None when positions ascend, as DuckDB sends them)."""

    chunks: list[int]
    groups: list[np.ndarray]
    local: list[np.ndarray]
    restore: pa.Array | None

    @classmethod
    def of(cls, lengths: Sequence[int], positions: np.ndarray) -> _TakePlan:
        starts = np.cumsum((0, *lengths))
        chunk_of = np.searchsorted(starts, positions, side="right") - 1
        ascending = bool(np.all(chunk_of[1:] >= chunk_of[:-1]))
        order = np.arange(len(positions)) if ascending else np.argsort(chunk_of, kind="stable")
        grouped = chunk_of[order]
        first = np.concatenate(([0], np.flatnonzero(np.diff(grouped)) + 1))
        groups = np.split(order, first[1:])
        chunks = [int(c) for c in grouped[first]]
        return cls(
            chunks=chunks,
            groups=groups,
            local=[positions[g] - starts[c] for c, g in zip(chunks, groups, strict=True)],
            restore=None if ascending else pa.array(np.argsort(order, kind="stable")),
        )


def sorted_by_rowid(rows: pa.Table, rowid: str) -> pa.Table:
    """Seed rows in rowid order; lookups need the rowids ascending and unique."""
    ids = rows.column(rowid)
    if ids.null_count:
        raise ValueError(f"seed rows have a null {rowid}")
    ordered = np.asarray(ids.to_numpy(), dtype=np.int64)
    if len(ordered) > 1 and not bool(np.all(ordered[1:] > ordered[:-1])):
        rows = rows.sort_by(rowid)
        ordered = np.asarray(rows.column(rowid).to_numpy(), dtype=np.int64)
        repeated = ordered[1:][ordered[1:] == ordered[:-1]]
        if len(repeated):
            raise ValueError(f"seed rows repeat {rowid} {int(repeated[0])}")
    return rows


def positions_of(rowids: np.ndarray, live: np.ndarray | None, ids: np.ndarray) -> Found:
    """Where the live rows with these rowids are (deleted rows are not found)."""
    n = len(rowids)
    if n == 0:
        return Found(np.empty(0, dtype=np.int64), np.zeros(len(ids), dtype=bool))
    first, last = int(rowids[0]), int(rowids[-1])
    if last - first == n - 1:
        # Ascending unique rowids without a gap (inserts allocate them consecutively; deleted
        # rows stay in place, masked, until compaction): a rowid's offset is its position.
        if live is None and len(ids) and first <= ids.min() and ids.max() <= last:
            return Found(ids - first, np.ones(len(ids), dtype=bool))  # all found: no mask
        valid = (ids >= first) & (ids <= last)
        clipped = np.where(valid, ids - first, 0)
    else:
        pos = np.searchsorted(rowids, ids)
        clipped = np.minimum(pos, n - 1)
        valid = (pos < n) & (rowids[clipped] == ids)
    if live is not None:
        valid &= live[clipped]
    return Found(clipped[valid], valid)


def rowid_array(data: pa.Table) -> np.ndarray:
    return np.asarray(data.column(0).to_numpy(), dtype=np.int64)


def extended(
    front: np.ndarray, buffer: np.ndarray | None, added: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(front followed by added, the buffer it is the front of), in O(len(added))
    amortised. front is buffer's front when buffer is given; added goes into its free tail
    while there is room. Every view handed out before ends where front ends, so none of
    them sees the write. Otherwise front moves into a new buffer twice its size."""
    n, k = len(front), len(added)
    if buffer is None or len(buffer) < n + k:
        buffer = np.empty(max(2 * (n + k), 1024), dtype=added.dtype)
        buffer[:n] = front
    buffer[n : n + k] = added
    return buffer[: n + k], buffer


def fewer_chunks(data: pa.Table) -> pa.Table:
    """data in fewer chunks, rows where they were (positions, the mask and the patch stay
    valid): the trailing chunks smaller than _SMALL_BATCH_ROWS become one, O(their rows);
    if there are not two of those, every chunk becomes one (amortised O(n))."""
    lengths = [len(chunk) for chunk in data.column(0).chunks]
    small = 0
    while small < len(lengths) and lengths[-1 - small] < _SMALL_BATCH_ROWS:
        small += 1
    if small < 2:
        return data.combine_chunks()
    kept = sum(lengths[: len(lengths) - small])
    return pa.concat_tables([data.slice(0, kept), data.slice(kept).combine_chunks()])


def with_values(array: pa.Array, rows: np.ndarray, values: pa.Array) -> pa.Array:
    """array with values[i] at rows[i] (a repeated row takes its last value). Rows in
    ascending order (a patch run, DuckDB's order) are written between slices when they are
    consecutive, else by a mask where Arrow has the kernel: both 3-4x faster than the take
    that puts values anywhere, in any type."""
    if len(rows) and _ascending(rows):
        first, last = int(rows[0]), int(rows[-1])
        if last - first == len(rows) - 1:  # consecutive rows: the values between two slices
            return pa.concat_arrays([array.slice(0, first), values, array.slice(last + 1)])
        written = _masked(array, rows, values)
        if written is not None:
            return written
    take = np.arange(len(array), dtype=np.int64)
    take[rows] = len(array) + np.arange(len(rows))  # in order: the last value wins
    return pa.concat_arrays([array, values]).take(pa.array(take))


def _masked(array: pa.Array, rows: np.ndarray, values: pa.Array) -> pa.Array | None:
    """array with values at rows (ascending, each once) by Arrow's mask kernel, or None for a
    type it has no kernel for (nested, dictionary and extension types, durations, 32- and
    64-bit decimals in Arrow 26)."""
    mask = np.zeros(len(array), dtype=bool)
    mask[rows] = True
    try:
        return pc.replace_with_mask(array, pa.array(mask), values)
    except pa.ArrowNotImplementedError:
        return None


def _ascending(positions: np.ndarray) -> bool:
    """Whether positions strictly ascend (so name each row once)."""
    return len(positions) < 2 or bool(np.all(positions[1:] > positions[:-1]))


def count_distinct(positions: np.ndarray) -> int:
    """How many different rows positions name (a client may repeat a rowid)."""
    if _ascending(positions):
        return len(positions)
    return distinct_count(positions)


def lookup_positions(
    rowids: np.ndarray, live: np.ndarray | None, version: int, lookup: Lookup
) -> Found:
    """Where lookup's rowids are in the current data: its cached answer if it was made
    against this version, else a fresh search."""
    return lookup.found if lookup.version == version else positions_of(rowids, live, lookup.ids)


def merge_lookups(lookups: list[Lookup]) -> Lookup:
    if len(lookups) == 1:
        return lookups[0]
    ids = np.concatenate([lookup.ids for lookup in lookups])
    versions = {lookup.version for lookup in lookups}
    if len(versions) > 1:  # made against different data: search again at commit
        return Lookup(ids, Found(np.empty(0, dtype=np.int64), np.zeros(0, dtype=bool)), -1)
    found = Found(
        np.concatenate([lookup.found.positions for lookup in lookups]),
        np.concatenate([lookup.found.valid for lookup in lookups]),
    )
    return Lookup(ids, found, versions.pop())


def replace_rows(data: pa.Table, found: Found, columns: dict[str, pa.Array]) -> pa.Table:
    """The found rows take columns' values (the last value wins for a repeated rowid). Only
    the chunks holding an updated row are rewritten, so a few rows of a large table cost
    one chunk per column, not the column."""
    if not found.valid.any():
        return data
    value_rows = np.flatnonzero(found.valid)
    plans: dict[tuple[int, ...], _TakePlan] = {}
    for name, values in columns.items():
        index = data.schema.get_field_index(name)
        column = data.column(index)
        lengths = tuple(len(chunk) for chunk in column.chunks)
        plan = plans.get(lengths) or plans.setdefault(
            lengths, _TakePlan.of(lengths, found.positions)
        )
        chunks = list(column.chunks)
        for c, group, local in zip(plan.chunks, plan.groups, plan.local, strict=True):
            rows = value_rows[group]
            # a chunk holding every found row takes the values as they are (within a chunk
            # the plan keeps the given order), so they need no take
            taken = values if len(rows) == len(values) else values.take(pa.array(rows))
            chunks[c] = with_values(chunks[c], local, taken)
        data = data.set_column(
            index, data.schema.field(index), pa.chunked_array(chunks, type=column.type)
        )
    return data
