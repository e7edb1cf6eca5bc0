"""One statement's staged changes to a Delta table, kept until the statement commits: INSERT
rows as parquet files (memory stays bounded however large the input), UPDATE values and DELETE
rowids in memory, each folded into one Delta command at commit."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..distinct_ids import sorted_distinct

STAGE_FILE_ROWS = 65_536  # staged INSERT rows per parquet file (DuckDB sends 2048 at a time)

# A staged file is written once and read once, whole, by Spark's INSERT … SELECT: encoding it
# (compression, dictionaries, statistics) costs both sides and saves only disk, where the
# files hold about the rows' Arrow size until the statement ends (docs/benchmarks.md,
# bulk_load.py: a quarter of a large load's time).
STAGE_FILE_OPTIONS = {"compression": "NONE", "use_dictionary": False, "write_statistics": False}


@dataclass
class Pending:
    """One statement's staged changes to one table."""

    directory: Path
    files: int = 0
    buffer: list[pa.RecordBatch] = field(default_factory=list)  # staged rows not yet in a file
    buffered_rows: int = 0
    updates: list[tuple[np.ndarray, dict[str, pa.Array]]] = field(default_factory=list)
    deletes: list[np.ndarray] = field(default_factory=list)
    given: set[str] = field(default_factory=set)  # computed columns some INSERT row set


def distinct_count(staged: list[np.ndarray]) -> int:
    return len(sorted_distinct(np.concatenate(staged))) if staged else 0


def flush(pending: Pending) -> None:
    """Write the buffered INSERT rows of a statement to one staged parquet file."""
    if not pending.buffer:
        return
    pending.directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.Table.from_batches(pending.buffer),
        pending.directory / f"{pending.files:06d}.parquet",
        **STAGE_FILE_OPTIONS,
    )
    pending.files += 1
    pending.buffer, pending.buffered_rows = [], 0


def last_positions(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rowids sorted, the position of each one's last occurrence in ids)."""
    distinct, first_from_end = np.unique(ids[::-1], return_index=True)
    return distinct, len(ids) - 1 - first_from_end


def overlay(
    current: pa.Table, ids: np.ndarray, columns: dict[str, pa.Array], rowid_name: str
) -> pa.Table:
    """current's rows with the new values of columns (rowid ids[i] takes row i of columns;
    the last value wins for a repeated rowid). current holds only rowids that are in ids."""
    distinct, last = last_positions(ids)
    positions = pa.array(
        last[np.searchsorted(distinct, current.column(rowid_name).to_numpy())], pa.int64()
    )
    for name, values in columns.items():
        index = current.schema.get_field_index(name)
        current = current.set_column(index, current.schema.field(index), values.take(positions))
    return current


def update_frame(
    updates: list[tuple[np.ndarray, dict[str, pa.Array]]], schema: pa.Schema, rowid_name: str
) -> pa.Table:
    """All staged updates as one table: each distinct rowid once, each updated column with
    the value of the last update that set it for that rowid, and a __set_<column> flag saying
    whether any did (calls of one statement may set different columns of the same row)."""
    distinct = sorted_distinct(np.concatenate([ids for ids, _ in updates]))
    arrays: dict[str, pa.Array] = {rowid_name: pa.array(distinct, pa.int64())}
    for column in schema:
        setting = [
            (ids, columns[column.name]) for ids, columns in updates if column.name in columns
        ]
        if not setting:
            continue
        keys, last = last_positions(np.concatenate([ids for ids, _ in setting]))
        positions = np.zeros(len(distinct), dtype=np.int64)
        is_set = np.zeros(len(distinct), dtype=bool)
        where = np.searchsorted(distinct, keys)
        positions[where], is_set[where] = last, True
        values = pa.concat_arrays([values for _, values in setting])
        arrays[column.name] = values.take(pa.array(positions, pa.int64(), mask=~is_set))
        arrays["__set_" + column.name] = pa.array(is_set)
    return pa.table(arrays)
