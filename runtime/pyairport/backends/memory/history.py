"""The versions a memory table keeps for time travel (`AT (VERSION => n)`, `AT (TIMESTAMP =>
…)`): version 0 is the table as created, and every committed statement or column change
makes the next one, as Delta numbers its commits.

A version holds the storage as it was, not a copy: the columns and the patch are immutable,
and of the deletion mask, which DELETEs mark in place, it keeps how far the mask's log of
marks went (mask.py), undoing the later ones when it is read. So recording a version costs
nothing per row, and a DELETE stays O(rows deleted). Only the last `keep` versions are held,
and of them only those on the last GENERATIONS storages (a compaction, a column change or a
patch written in makes the columns anew, where an INSERT appends to them; a version on an
older storage keeps that one alive): older ones are
released for memory's sake, so a table's history holds at most a few copies of it, and asking
for one is refused, naming the oldest still kept."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa

from airport_contracts import TimePoint

from ..time_points import TimePointError, parsed
from .mask import DeletionMask
from .patch import Patch, Run, materialize

DEFAULT_VERSIONS_KEPT = 32
GENERATIONS = 3  # storages (column sets) the kept versions may hold, the current one included


@dataclass(frozen=True)
class Version:
    number: int
    committed_at: datetime
    schema: pa.Schema
    data: pa.Table
    patch: Patch
    mask: DeletionMask | None
    marks: int  # how many of the mask's marks were made by this version
    generation: int  # the table's storage generation (rewrites so far): appends share it

    def rows(self) -> pa.Table:
        """The version's rows (deleted ones left out)."""
        data = materialize(self.data, self.patch) if self.patch.columns else self.data
        live = self.live(0, data.num_rows)
        return data if live is None else data.filter(pa.array(live))

    def live(self, start: int, stop: int) -> np.ndarray | None:
        """Which of the version's stored rows start..stop were live then (None: all), the
        DELETEs marked since undone."""
        if self.mask is None:
            return None
        live = np.array(self.mask.live[start:stop])
        for positions in self.mask.marked[self.marks :]:
            inside = positions[(positions >= start) & (positions < stop)]
            live[inside - start] = True
        return live

    def stored_between(self, start: int, stop: int) -> pa.Table:
        """The version's stored rows start..stop (deleted ones included), its patch written
        in: one part of a scan (several_endpoints), without touching the other rows."""
        data = self.data.slice(start, stop - start)
        if not self.patch.columns:
            return data
        return materialize(
            data,
            Patch(
                {
                    name: tuple(_within(run, start, stop) for run in runs)
                    for name, runs in self.patch.columns.items()
                }
            ),
        )


def _within(run: Run, start: int, stop: int) -> Run:
    """The part of a patch run that falls on stored rows start..stop, renumbered from 0."""
    inside = (run.positions >= start) & (run.positions < stop)
    return Run(run.positions[inside] - start, run.values.filter(pa.array(inside)))


class History:
    """The kept versions, newest last. Called with the table's lock held."""

    def __init__(self, keep: int = DEFAULT_VERSIONS_KEPT) -> None:
        if keep < 1:
            raise ValueError("a memory table keeps at least its current version")
        self._kept: deque[Version] = deque()
        self._keep = keep
        self._next = 0

    def record(
        self,
        schema: pa.Schema,
        data: pa.Table,
        patch: Patch,
        mask: DeletionMask | None,
        generation: int,
    ) -> None:
        marks = 0 if mask is None else len(mask.marked)
        now = datetime.now(UTC)
        self._kept.append(Version(self._next, now, schema, data, patch, mask, marks, generation))
        self._next += 1
        while len(self._kept) > self._keep or len({v.generation for v in self._kept}) > GENERATIONS:
            self._kept.popleft()

    def latest(self) -> Version:
        return self._kept[-1]

    def number(self, number: int) -> Version | None:
        """The version of that number, or None when it is not (or no longer) kept."""
        oldest = self._kept[0].number
        if oldest <= number < self._next:
            return self._kept[number - oldest]
        return None

    def at(self, point: TimePoint) -> Version:
        """The version a time point names: by number, or the last committed at or before
        the instant. TimePointError when there is none (or no longer)."""
        at = parsed(point)
        oldest = self._kept[0]
        if isinstance(at, int):
            if at >= self._next:
                raise TimePointError(f"version {at} does not exist (latest: {self._next - 1})")
            if at < oldest.number:
                raise TimePointError(
                    f"version {at} is no longer kept (oldest kept: {oldest.number})"
                )
            return self._kept[at - oldest.number]
        if at < oldest.committed_at:
            raise TimePointError(
                f"no version kept at {at.isoformat()} (oldest kept:"
                f" {oldest.committed_at.isoformat()})"
            )
        found = oldest
        for version in self._kept:
            if version.committed_at > at:
                break
            found = version
        return found
