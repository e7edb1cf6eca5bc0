"""One statement's staged changes to a Delta table, kept until the statement commits: INSERT
rows as parquet files (memory stays bounded however large the input), UPDATE values in memory
until they pass SPILL_BYTES and then as parquet files too (only their rowids stay), DELETE
rowids in memory, each folded into one Delta command at commit."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import distinct_ids
from ..arrow_convert import convert
from ..distinct_ids import sorted_distinct
from .layout import ROWID
from .scans import SCAN_BATCH_ROWS

STAGE_FILE_ROWS = 65_536  # staged INSERT rows per parquet file (DuckDB sends 2048 at a time)

# A staged file is written once and read once, whole, by Spark's INSERT … SELECT: encoding it
# (compression, dictionaries, statistics) costs both sides and saves only disk, where the
# files hold about the rows' Arrow size until the statement ends (docs/benchmarks.md,
# bulk_load.py: a quarter of a large load's time).
STAGE_FILE_OPTIONS = {"compression": "NONE", "use_dictionary": False, "write_statistics": False}

# An UPDATE's values held in memory past this many bytes go to a staged file: DuckDB sends
# every column of every row it updates, and an UPDATE of SF 1's lineitem held 2 GiB of them.
SPILL_BYTES = 64 * 1024 * 1024
SPILLED = "updates"  # the folder of a statement's staged UPDATE values, in its own


@dataclass
class Pending:
    """One statement's staged changes to one table."""

    directory: Path
    files: int = 0
    buffer: list[pa.RecordBatch] = field(default_factory=list)  # staged rows not yet in a file
    buffered_rows: int = 0
    updates: list[tuple[np.ndarray, dict[str, pa.Array]]] = field(default_factory=list)
    held_bytes: int = 0  # of updates
    spilled: list[np.ndarray] = field(default_factory=list)  # each spilled file's rowids
    spilled_columns: tuple[str, ...] = ()  # the columns every spilled file sets
    deletes: list[np.ndarray] = field(default_factory=list)
    given: set[str] = field(default_factory=set)  # computed columns some INSERT row set


def distinct_staged(staged: list[np.ndarray]) -> int:
    """How many distinct rowids the staged arrays of a statement name together."""
    return distinct_ids.distinct_count(np.concatenate(staged)) if staged else 0


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


class Spilled(NamedTuple):
    """A statement's UPDATE whose values are all in staged files: its rowids (distinct, in
    ascending order, as the rows' reads take them), the files' folder (each file a rowid
    column and the columns set, in the stored types), and the columns they set."""

    ids: np.ndarray
    directory: Path
    columns: tuple[str, ...]

    def files(self) -> list[Path]:
        return spilled_files(self.directory)

    def column(self, name: str) -> Iterator[pa.Array]:
        """One column of the staged files, batch by batch."""
        for path in self.files():
            with pq.ParquetFile(path) as file:
                for batch in file.iter_batches(batch_size=SCAN_BATCH_ROWS, columns=[name]):
                    yield batch.column(0)


def spilled_files(directory: Path) -> list[Path]:
    """A statement's spilled files, in the order they were written."""
    return sorted(directory.glob("*.parquet"))


def stage_update(
    pending: Pending, ids: np.ndarray, columns: dict[str, pa.Array], stored: pa.Schema | None
) -> None:
    """Keep one call's UPDATE values: in memory, and in a staged file once those held pass
    SPILL_BYTES. stored: the table's stored types where Spark reads this process's files,
    else None (all held)."""
    pending.updates.append((ids, columns))
    pending.held_bytes += ids.nbytes + sum(values.nbytes for values in columns.values())
    if stored is not None and pending.held_bytes > SPILL_BYTES:
        spill(pending, stored)


def spill(pending: Pending, stored: pa.Schema) -> bool:
    """Write the UPDATE values held in memory to one staged file (rowids as they came), where
    every call set the same columns as the files before and Spark reads their types back as
    they are (kept_by_files): whether it did."""
    names = set(pending.updates[0][1]) if pending.updates else set()
    if not names or any(set(columns) != names for _, columns in pending.updates):
        return False
    order = tuple(n for n in stored.names if n in names)
    if pending.spilled and order != pending.spilled_columns:
        return False
    if not kept_by_files(pa.schema([stored.field(n) for n in order])):
        return False
    ids = np.concatenate([ids for ids, _ in pending.updates])
    values = {n: pa.concat_arrays([columns[n] for _, columns in pending.updates]) for n in order}
    arrays = {ROWID: pa.array(ids, pa.int64())} | in_stored_types(values, stored)
    directory = pending.directory / SPILLED
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{len(pending.spilled):06d}.parquet"
    pq.write_table(pa.table(arrays), path, **STAGE_FILE_OPTIONS)
    pending.spilled.append(ids)
    pending.spilled_columns = order
    pending.updates, pending.held_bytes = [], 0
    return True


def spilled_update(pending: Pending, stored: pa.Schema) -> Spilled | None:
    """Where a statement's UPDATE values went to files: those still held written too, and
    the statement's Spilled, where its rowids are distinct (a MERGE sets each row from one
    source row). Else (a rowid repeated, or calls that set other columns) every file read
    back into pending.updates ahead of those held, every value in the stored types, so the
    last value of a row still wins; then None, as where nothing was spilled."""
    if not pending.spilled:
        return None
    if not pending.updates or spill(pending, stored):
        ids = np.concatenate(pending.spilled)
        distinct = sorted_distinct(ids)
        if len(distinct) == len(ids):
            return Spilled(distinct, pending.directory / SPILLED, pending.spilled_columns)
    read_back = []
    for path in spilled_files(pending.directory / SPILLED):
        table = pq.read_table(path)
        values = {n: table.column(n).combine_chunks() for n in pending.spilled_columns}
        read_back.append((table.column(ROWID).to_numpy(), values))
    held = [(ids, in_stored_types(columns, stored)) for ids, columns in pending.updates]
    pending.updates, pending.spilled, pending.spilled_columns = read_back + held, [], ()
    return None


def in_stored_types(columns: dict[str, pa.Array], stored: pa.Schema) -> dict[str, pa.Array]:
    """An UPDATE's values (the served types) in the types the table stores them as."""
    return {name: convert(values, stored.field(name).type) for name, values in columns.items()}


def kept_by_files(schema: pa.Schema) -> bool:
    """Whether Spark reads data of schema from a staged Parquet file as a MERGE needs it: not
    when a nested value says it holds no null (a struct field, list item or map value), which
    every file Spark reads loses, and which a MERGE then cannot set into a column that says
    so."""

    def nullable_within(data_type: pa.DataType) -> bool:
        if pa.types.is_struct(data_type):
            inner = [data_type.field(i) for i in range(data_type.num_fields)]
        elif pa.types.is_map(data_type):
            inner = [data_type.item_field]
        elif (
            pa.types.is_list(data_type)
            or pa.types.is_large_list(data_type)
            or pa.types.is_fixed_size_list(data_type)
        ):
            inner = [data_type.value_field]
        else:
            return True
        return all(f.nullable and nullable_within(f.type) for f in inner)

    return all(nullable_within(field.type) for field in schema)


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
