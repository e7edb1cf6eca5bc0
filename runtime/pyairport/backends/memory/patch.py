"""UPDATE values not yet written into the columns: the patch, its runs, and the snapshot a
reader takes of the columns with the patch on top."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from .storage import Found, Lookup, merge_lookups, replace_rows, rows_at, with_values

_RUN_MERGE_ROWS = 65_536  # patch runs are merged up to this size (a large UPDATE's run stays)


@dataclass
class Update:
    lookup: Lookup
    columns: dict[str, pa.Array]


def group_updates(updates: list[Update]) -> Iterator[Update]:
    """Consecutive updates of the same columns, merged: one O(n) pass per group."""
    group: list[Update] = []
    for update in updates:
        if group and set(update.columns) != set(group[0].columns):
            yield _merge(group)
            group = []
        group.append(update)
    if group:
        yield _merge(group)


def _merge(group: list[Update]) -> Update:
    if len(group) == 1:
        return group[0]
    columns = {
        name: pa.concat_arrays([u.columns[name] for u in group]) for name in group[0].columns
    }
    return Update(merge_lookups([u.lookup for u in group]), columns)


@dataclass(frozen=True)
class Run:
    """Patched rows of one column: their positions (ascending, unique) and new values."""

    positions: np.ndarray
    values: pa.Array

    def then(self, newer: Run) -> Run:
        """This run with newer's values on top (newer wins where both have a row)."""
        positions, pick = _last_of_each(np.concatenate([self.positions, newer.positions]))
        return Run(positions, pa.concat_arrays([self.values, newer.values]).take(pick))


def _last_of_each(positions: np.ndarray) -> tuple[np.ndarray, pa.Array]:
    """The distinct positions, ascending, and where in `positions` each occurs last."""
    order = np.argsort(positions, kind="stable")  # equal positions keep their order
    ordered = positions[order]
    last = np.append(ordered[1:] != ordered[:-1], True)
    return ordered[last], pa.array(order[last])


def _mergeable(older: Run, newer: Run) -> bool:
    size, newer_size = len(older.positions), len(newer.positions)
    return 2 * newer_size >= size and size + newer_size <= _RUN_MERGE_ROWS


@dataclass(frozen=True)
class Patch:
    """Committed UPDATE values not yet written into the columns: per column, runs of patched
    rows, oldest first (a later run wins). A new run is merged into the one before it while
    it is at least half that one's size, up to _RUN_MERGE_ROWS: however many small
    statements patched a column (DuckDB sends each single-row UPDATE as its own statement),
    it keeps O(log rows) small runs, and a row is merged O(log rows) times. Runs of large
    UPDATEs are kept as they are (merging them would cost each such UPDATE the size of the
    patch); the table writes the patch into its columns once a column has more than
    _MAX_RUNS runs. Immutable: add() returns a new patch, so a reader's snapshot never
    changes under it."""

    columns: dict[str, tuple[Run, ...]] = field(default_factory=dict)  # never mutated

    @property
    def rows(self) -> int:
        """Patched values held for the most patched column (a row patched by several runs
        counts once per run)."""
        return max(
            (sum(len(r.positions) for r in runs) for runs in self.columns.values()), default=0
        )

    @property
    def most_runs(self) -> int:
        return max((len(runs) for runs in self.columns.values()), default=0)

    def add(self, found: Found, columns: dict[str, pa.Array]) -> Patch:
        """found's rows take columns' values (aligned with found.valid); the last value wins
        for a repeated rowid."""
        if not len(found.positions):
            return self
        positions = found.positions
        if len(positions) == len(found.valid):  # every rowid found (the common case): no copy
            values = dict(columns)
        else:
            mask = pa.array(found.valid)
            values = {name: column.filter(mask) for name, column in columns.items()}
        if len(positions) > 1 and not bool(np.all(positions[1:] > positions[:-1])):
            positions, pick = _last_of_each(positions)
            values = {name: column.take(pick) for name, column in values.items()}
        patched = dict(self.columns)
        for name, column in values.items():
            runs = (*patched.get(name, ()), Run(positions, column))
            while len(runs) > 1 and _mergeable(runs[-2], runs[-1]):
                runs = (*runs[:-2], runs[-2].then(runs[-1]))
            patched[name] = runs
        return Patch(patched)

    def overlay(self, batch: pa.RecordBatch, positions: np.ndarray) -> pa.RecordBatch:
        """batch (the stored rows at positions) with the patched values in."""
        columns = dict(zip(batch.schema.names, batch.columns, strict=True))
        for name, runs in self.columns.items():
            if name not in columns:  # not a column the reader asked for
                continue
            for run in runs:
                at = np.minimum(np.searchsorted(run.positions, positions), len(run.positions) - 1)
                hit = run.positions[at] == positions
                if hit.any():
                    patched = run.values.take(pa.array(at[hit]))
                    columns[name] = with_values(columns[name], np.flatnonzero(hit), patched)
        return pa.RecordBatch.from_arrays(
            [columns[n] for n in batch.schema.names], schema=batch.schema
        )


@dataclass(frozen=True)
class Committed:
    """A reader's snapshot of the committed rows: the columns and the patch on top."""

    data: pa.Table
    patch: Patch

    def rows_at(self, positions: np.ndarray, names: Sequence[str]) -> pa.RecordBatch:
        """The named columns of the rows at positions, in this order."""
        batch = rows_at(self.data.select(list(names)), positions)
        return self.patch.overlay(batch, positions) if self.patch.columns else batch


def materialize(data: pa.Table, patch: Patch) -> pa.Table:
    """data with the patch written in: per column, its runs (later ones win) applied in one
    pass over the chunks they touch."""
    for name, runs in patch.columns.items():
        positions = np.concatenate([run.positions for run in runs])
        values = pa.concat_arrays([run.values for run in runs])
        found = Found(positions, np.ones(len(positions), dtype=bool))
        data = replace_rows(data, found, {name: values})  # last wins: later runs win
    return data
