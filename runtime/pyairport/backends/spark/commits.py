"""How a Delta table's rows are found by rowid and changed: each statement's staged changes
(staging.py) applied as one Delta commit when the statement commits.

INSERT rows are appended by Spark's own INSERT … VALUES when they are few, else staged as
parquet files and appended by one INSERT … SELECT of them; UPDATE and DELETE run as Spark's own
statement with the rowids in it when they are few, else as one MERGE against the rowids sent as
a view, whose metrics give the statement's row count (an UPDATE's values read from the staged
files they went to past staging.SPILL_BYTES). A row-tracked table's rows are changed by their
values (see table.py's doc): read at the version the commit starts from, matched by their first
column where a count shows that it names them, else by the fewest leading columns that do so,
else by every column (what tells them apart, and the values' SQL, are row_values.py's); a few
first-column values are listed in the statement, more are joined; rowids that name every row of
the version need no matching (Spark's own DELETE, or UPDATE to one value a column), nor do rows
set to one value that listed first-column values name (Spark's own UPDATE … WHERE). The reading
and the count are of the version's files where the server reads them (no Spark job), else
Spark's; the statement runs only if no other writer committed after that version but appends
holding none of the values it names its rows by (checked just before it, later_commits.py:
matched by values on a later version, it could change rows the client never named), else the
rows are read again at the new one. A commit that conflicts with another writer's is retried.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airport_contracts import Context, ScanFailed

from ...filters.model import Between
from ..arrow_convert import convert
from ..distinct_ids import sorted_distinct
from ..shaping import full_width
from . import file_parts
from .client_errors import client_errors
from .lake import Lake
from .later_commits import EVERY_ROW, Named, ReadAt, added, holds_named, only_appended
from .layout import ROWID, Layout
from .partition_stream import collected
from .row_values import (
    all_distinct,
    distinct_rows,
    exactly_equal,
    holding,
    key_list,
    one_literal,
    rows_skipped,
)
from .scans import SCAN_BATCH_ROWS, log_version
from .sent_rows import sent_rows
from .sql import affected, quote, sql_literal
from .staging import Pending, Spilled, flush, kept_by_files, spilled_update, update_frame

log = logging.getLogger("pyairport.spark")
T = TypeVar("T")

COMMIT_ATTEMPTS = 4
# How many times a statement ready to run looks again at commits other writers appended while
# it looked at the last ones (later_commits.py) before it reads its rows again.
APPEND_CHECKS = 8
# Statements this small run as Spark's own UPDATE/DELETE with the rowids in the statement, as
# a SQL user would type them, and read rows by a filter Delta can skip files with; larger
# ones join or MERGE against the rowids sent as a view. (A MERGE and a join cost Spark
# several jobs more than the statement itself: most of a one-row statement's time. A long
# IN list costs more to plan than the join: 10,000 rowids took three times the MERGE's time.)
INLINE_ROWIDS = 100
INLINE_UPDATE_ROWS = 64  # rows whose values differ per row, one CASE branch each
# An INSERT of this many rows or fewer runs as Spark's own INSERT … VALUES, the values written
# as literals: 0.26 s a row against 0.41 s selecting it from its staged file (medians of 10,
# a 1M-row table, 2026-11-30).
INLINE_INSERT_ROWS = 64
# An UPDATE's MERGE lists its first-column values too (row_values.key_list) only where Delta
# skips files holding at least this share of the table's rows by them: a list it skips
# nothing by costs the MERGE (TPC-H SF 1's orders, 1,500 keys spread over every file: 3.2 s
# against 2.6 s without, medians of 8 warm runs), and skipping a file saves about its share
# of the MERGE's reading.
SKIPPED_SHARE = 0.25


class ConcurrentCommit(Exception):
    """Another writer committed after the version a row-tracked table's statement read its
    rows at: retried from the read (DeltaChanges._retrying), as Delta's own conflicts are."""


class DeltaChanges:
    """The row changes of one table. schema_name: the schema it is in; label: its name for
    messages (schema.table); layout: its layout as it is now; files_at: what reading a
    version's files one by one needs, where delta-rs reads that version (file_parts), else
    None."""

    def __init__(
        self,
        lake: Lake,
        schema_name: str,
        label: str,
        layout: Callable[[], Layout],
        files_at: Callable[[int], file_parts.PartFiles | None],
    ) -> None:
        self._lake = lake
        self._schema_name = schema_name
        self._label = label
        self._layout = layout
        self._files_at = files_at
        self._lock = threading.Lock()  # one commit of the table at a time

    @property
    def layout(self) -> Layout:
        return self._layout()

    @property
    def fqn(self) -> str:
        return self.layout.ident

    def _with_rowids(self, ids: np.ndarray, clause: str = "") -> Any:
        """The rows with these rowids (at a version), as a DataFrame with a rowid column: a
        filter for few rowids (Delta skips the files whose rowid range holds none), a join
        with them for many."""
        distinct = sorted_distinct(ids)
        columns = ", ".join(
            f"{self.layout.rowid_sql} AS {quote(ROWID)}" if n == ROWID else quote(n)
            for n in self.layout.schema.names
        )
        table = self._lake.spark.sql(f"SELECT {columns} FROM {self.fqn}{clause}")
        if len(distinct) <= INLINE_ROWIDS:
            return table.where(table[ROWID].isin([int(i) for i in distinct]))
        keys = self._lake.spark.createDataFrame(pa.table({ROWID: pa.array(distinct, pa.int64())}))
        return keys.join(table, ROWID)

    def rows_for(
        self, ids: np.ndarray, clause: str = "", columns: list[str] | None = None
    ) -> pa.Table:
        """The committed rows with these rowids (table schema, or these of its columns; order
        not kept): of the latest version, read from its files where delta-rs reads it
        (file_parts), else by Spark (at clause's version where one is given). RETURNING reads
        each of DuckDB's 2048-row batches so: by a Spark query a batch, a DELETE of 100,000
        rows with RETURNING took 78 s (5.5 s without)."""
        schema = self.layout.schema
        if columns is not None:
            schema = pa.schema([schema.field(n) for n in columns])
        if not len(ids):
            return schema.empty_table()
        # a table of Spark's catalog (no folder here) asks no version: Spark reads it
        local = not clause and self.layout.location is not None
        files = self._files_at(self._latest_version()) if local else None
        if files is not None:
            return self._rows_in_files(files, sorted_distinct(ids)).select(schema.names)
        read = collected(self._with_rowids(ids, clause).select(*[quote(n) for n in schema.names]))
        served = [full_width(b, schema, schema.names) for b in read.to_batches()]
        return pa.Table.from_batches(served, schema=schema)

    def regenerated(self, rows: pa.Table) -> pa.Table:
        """rows (as served) with their generated columns as Delta computes them from the
        rows' other values: what RETURNING returns of a generated column a statement left
        to Delta."""
        generated = dict(self.layout.generated)
        if not rows.num_rows or not generated:
            return rows
        computed = self.evaluated(as_stored(rows, self.layout.stored), generated)
        for name, values in computed.items():
            index = rows.schema.get_field_index(name)
            field = rows.schema.field(index)
            rows = rows.set_column(index, field, convert(values, field.type))
        return rows

    def evaluated(
        self, rows: pa.Table | pa.RecordBatch, expressions: dict[str, str]
    ) -> dict[str, pa.Array]:
        """Each of expressions (column: Spark SQL over the table's columns, as the table's
        metadata holds them) evaluated by Spark over rows (in the stored types), in their
        order, in the stored type of its column: one Spark query."""
        position = "__pyairport_row"
        keyed = pa.Table.from_batches([rows]) if isinstance(rows, pa.RecordBatch) else rows
        keyed = keyed.append_column(position, pa.array(np.arange(rows.num_rows), pa.int64()))
        view = self._lake.view(keyed)
        try:
            listed = ", ".join(f"{text} AS {quote(n)}" for n, text in expressions.items())
            computed = collected(
                self._lake.spark.sql(f"SELECT {quote(position)}, {listed} FROM {view}")
            )
        finally:
            self._lake.drop_view(view)
        order = pc.sort_indices(computed.column(position))
        stored = self.layout.stored
        return {
            name: convert(
                computed.column(name).take(order).combine_chunks(), stored.field(name).type
            )
            for name in expressions
        }

    def _rows_in_files(self, files: file_parts.PartFiles, ids: np.ndarray) -> pa.Table:
        """The rows with these rowids (sorted) of the version files holds (file_parts.read
        skips the files that cannot hold them); of a table with a rowid column, each file's
        row groups skipped by their bounds too."""
        predicate = (
            None
            if files.base_row_ids is not None
            else Between(ROWID, int(ids[0]), int(ids[-1]), True, True)
        )
        indexes = list(range(files.files.num_rows))
        names = self.layout.schema.names
        reader = file_parts.read(Context.background(), files, indexes, names, predicate, 0, ids)
        try:
            return reader.read_all()
        except ScanFailed as exc:  # a stored value its column cannot hold: no scan's failure
            raise RuntimeError(str(exc.error)) from None

    # --- commit: one Delta commit per kind of change (a statement has one kind) --------------

    def commit(self, pending: Pending) -> int | None:
        """Apply the staged changes; the rows an UPDATE or DELETE changed, as Delta counted them
        (an INSERT's count is known before: None)."""
        values = _insert_values(self.fqn, pending, self._written(pending))
        if values is None:
            flush(pending)
        with self._lock:
            if values is not None:
                with client_errors("insert", self.fqn):
                    self._lake.spark.sql(values)
            elif pending.files:
                with client_errors("insert", self.fqn):
                    self._append(pending)
            if pending.updates or pending.spilled:
                with client_errors("update", self.fqn):
                    spilled = spilled_update(pending, self.layout.stored)
                    if spilled is not None:
                        return self._retrying(lambda: self._apply_spilled(spilled))
                    return self._retrying(lambda: self._apply_updates(pending.updates))
            if pending.deletes:
                with client_errors("delete", self.fqn):
                    ids = sorted_distinct(np.concatenate(pending.deletes))
                    return self._retrying(lambda: self._apply_deletes(ids))
        return None

    def _retrying(self, commit: Callable[[], T]) -> T:
        """Delta's optimistic concurrency decides; a conflict with another writer is retried."""
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            try:
                return commit()
            except Exception as exc:
                if (
                    "Concurrent" not in type(exc).__name__ + str(exc)[:200]
                    or attempt == COMMIT_ATTEMPTS
                ):
                    raise
                log.warning("Delta commit conflict on %s (attempt %d), retrying", self.fqn, attempt)
                time.sleep(0.05 * attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _append(self, pending: Pending) -> None:
        """One INSERT … SELECT of the staged rows, by column name (partitions and renamed
        columns land where Spark puts them; generated and identity columns no row set are
        Delta's to fill): a blind append, whose rowids are this process's alone (its claimed
        blocks: rowid_claims.py)."""
        listed = ", ".join(quote(n) for n in self._written(pending))
        insert = f"INSERT INTO {self.fqn} ({listed}) SELECT {listed} FROM "
        if self._lake.shares_files:
            self._lake.spark.sql(insert + f"parquet.{quote(str(pending.directory))}")
            return
        # a remote Spark Connect server cannot read our files: the rows are sent
        with sent_rows(self._lake, self._schema_name, pending.directory) as source:
            if source is not None:
                self._lake.spark.sql(insert + source)

    def _written(self, pending: Pending) -> list[str]:
        """The columns an INSERT sets: all but the generated and identity columns no row set."""
        layout = self.layout
        return [n for n in layout.stored.names if n not in layout.computed or n in pending.given]

    # --- UPDATE and DELETE ----------------------------------------------------------------------

    def _apply_updates(self, updates: list[tuple[np.ndarray, dict[str, pa.Array]]]) -> int:
        changes = as_stored(update_frame(updates, self.layout.schema, ROWID), self.layout.stored)
        if not changes.num_rows:
            return 0  # an empty batch: Spark has no `IN ()`
        if changes.column_names == [ROWID]:
            # rowids alone set no column (DuckDB always sets one; other clients may not): the
            # rows are matched and left as they are, as the memory backend does, no commit
            return self._existing(changes.column(ROWID).to_numpy())
        if self.layout.rowids == "tracked":
            return self._merge_by_values(changes, "update")
        statement = self._update_statement(changes)
        if statement is not None:
            return affected(self._lake.spark.sql(statement))
        assignments, source = self._assignments(changes, changes.select([ROWID]))
        return self._merge(
            source, f"t.{quote(ROWID)} = s.{quote(ROWID)}", f"UPDATE SET {assignments}"
        )

    def _apply_spilled(self, spilled: Spilled) -> int:
        """An UPDATE whose values went to staged files as they came (staging.py): one MERGE
        reading them there; what is held is the rowids (and, for a row-tracked table, the
        values its rows are matched by)."""
        if self.layout.rowids == "tracked":
            return self._merge_by_values(pa.table({ROWID: spilled.ids}), "update", spilled)
        view = self._lake.files_view(spilled.directory)
        try:
            return self._merged(view, f"t.{quote(ROWID)} = s.{quote(ROWID)}", _set(spilled))
        finally:
            self._lake.drop_view(view)

    def _merge_spilled(self, source: pa.Table, on: str, spilled: Spilled, at: ReadAt) -> int:
        """A row-tracked table's UPDATE whose values are in staged files: the MERGE's source
        written batch by batch, each staged batch's rows with their keys from source (by
        rowid; rows not at the version are left out, as they are where the values are
        held)."""
        ids = source.column(ROWID).to_numpy()
        order = np.argsort(ids, kind="stable")
        ordered = ids[order]
        files = spilled.files()
        values_schema = pq.read_schema(files[0])
        named = [values_schema.field(n) for n in spilled.columns]
        keys_only = source.drop_columns([ROWID])  # the MERGE reads keys and values, no rowid
        schema = pa.schema([*keys_only.schema, *named])
        rows = _Rows(keys_only)

        def parts() -> Iterator[pa.Table]:
            for path in files:
                with pq.ParquetFile(path) as file:
                    for values in file.iter_batches(batch_size=SCAN_BATCH_ROWS):
                        wanted = values.column(ROWID).to_numpy()
                        at = np.searchsorted(ordered, wanted)
                        found = at < len(ordered)
                        found[found] = ordered[at[found]] == wanted[found]
                        keys = rows.at(order[at[found]])
                        kept = values.filter(pa.array(found))
                        columns = [*keys.columns, *(kept.column(n) for n in spilled.columns)]
                        yield pa.Table.from_arrays(columns, schema=schema)

        if not kept_by_files(schema):  # a nested key holding no null: the values held
            held = pa.Table.from_batches(
                [b for part in parts() for b in part.to_batches()], schema=schema
            )
            view = self._lake.view(held)
        else:
            view = self._lake.written_view(schema, parts())
        try:
            return self._merged(view, on, _set(spilled), at)
        finally:
            self._lake.drop_view(view)

    def _assignments(self, changes: pa.Table, source: pa.Table) -> tuple[str, pa.Table]:
        """The MERGE's SET list for the staged changes, and source with the columns it reads."""
        assignments = []
        for name in changes.column_names:
            if name == ROWID or name.startswith("__set_"):
                continue
            source = source.append_column(name, changes.column(name))
            flag = changes.column("__set_" + name)
            if pc.all(flag).as_py():  # every row sets it (always, from DuckDB): as Spark's own
                assignments.append(f"t.{quote(name)} = s.{quote(name)}")
                continue
            source = source.append_column("__set_" + name, flag)
            assignments.append(
                f"t.{quote(name)} = CASE WHEN s.{quote('__set_' + name)} THEN s.{quote(name)}"
                f" ELSE t.{quote(name)} END"
            )
        return ", ".join(assignments), source

    def _update_statement(self, changes: pa.Table) -> str | None:
        """A small UPDATE as Spark's own: `UPDATE t SET c = <value, or CASE rowid WHEN …>
        WHERE rowid IN (…)`, values written as exact, typed SQL literals (`sql_literal`).
        None when it does not fit: too many rows with differing values, or a column type
        without such a literal."""
        if changes.num_rows > INLINE_ROWIDS:
            return None
        rowids = [int(k) for k in changes.column(ROWID).to_pylist()]
        assignments = []
        for name in changes.column_names:
            if name == ROWID or name.startswith("__set_"):
                continue
            data_type = self.layout.schema.field(name).type
            setting = changes.column("__set_" + name).to_pylist()
            try:
                given = changes.column(name).to_pylist()
            except (ValueError, OverflowError):  # a date beyond Python's; the MERGE takes it
                return None
            pairs = [(k, v) for k, v, s in zip(rowids, given, setting, strict=True) if s]
            literals = [sql_literal(v, data_type) for _, v in pairs]
            if any(literal is None for literal in literals):
                return None
            if len(pairs) == len(rowids) and len(set(literals)) == 1:
                assignments.append(f"{quote(name)} = {literals[0]}")  # every row takes one value
                continue
            if len(pairs) > INLINE_UPDATE_ROWS:
                return None
            branches = " ".join(
                f"WHEN {key} THEN {literal}"
                for (key, _), literal in zip(pairs, literals, strict=True)
            )  # rowids are distinct (update_frame)
            assignments.append(f"{quote(name)} = CASE {ROWID} {branches} ELSE {quote(name)} END")
        listed = ", ".join(str(k) for k in rowids)
        return f"UPDATE {self.fqn} SET {', '.join(assignments)} WHERE {ROWID} IN ({listed})"

    def _existing(self, ids: np.ndarray) -> int:
        """How many of these rowids the table's latest version holds."""
        return int(self._with_rowids(ids).count())

    def _apply_deletes(self, ids: np.ndarray) -> int:
        if not len(ids):
            return 0  # an empty batch: Spark has no `IN ()`
        if self.layout.rowids == "tracked":
            return self._merge_by_values(pa.table({ROWID: pa.array(ids, pa.int64())}), "delete")
        if len(ids) <= INLINE_ROWIDS:  # Spark's own DELETE; rowids are integers
            listed = ", ".join(str(int(i)) for i in ids)
            return affected(
                self._lake.spark.sql(f"DELETE FROM {self.fqn} WHERE {ROWID} IN ({listed})")
            )
        return self._merge(
            pa.table({ROWID: pa.array(ids, pa.int64())}),
            f"t.{quote(ROWID)} = s.{quote(ROWID)}",
            "DELETE",
        )

    def _merge(self, source: pa.Table, on: str, action: str, at: ReadAt | None = None) -> int:
        """One MERGE of the rows of source (as a view) into the table: the rows it changed
        (at: see _merged)."""
        view = self._lake.view(source)
        try:
            return self._merged(view, on, action, at)
        finally:
            self._lake.drop_view(view)

    def _merged(self, view: str, on: str, action: str, at: ReadAt | None = None) -> int:
        """One MERGE of the rows of view into the table: the rows it changed. at: where the
        rows view holds by their values were read, which no later commit may have changed
        (_still_at, checked once the view is made)."""
        if at is not None:
            self._still_at(at)
        return affected(
            self._lake.spark.sql(
                f"MERGE INTO {self.fqn} t USING {view} s ON {on} WHEN MATCHED THEN {action}"
            )
        )

    def _merge_by_values(
        self, changes: pa.Table, operation: str, spilled: Spilled | None = None
    ) -> int:
        """UPDATE or DELETE of a row-tracked table's rows, matched by their stored values as
        they are at the version the commit starts from (see the module's doc): by the first
        column alone where that names exactly these rows (a key, as most tables lead with),
        else by every column. changes: the rowids, and an UPDATE's values unless spilled has
        them."""
        version = self._latest_version()
        clause = f" VERSION AS OF {int(version)}"
        files = self._files_at(version)  # None: Spark reads and counts
        ids = changes.column(ROWID).to_numpy()
        stored = self.layout.stored
        leading = [stored.names[0]]
        current = self._tracked_rows(ids, int(version), leading, files)
        if not current.num_rows:
            return 0
        # Spark's own statement where no row needs matching: an UPDATE to one value a column
        settings = self._one_value_each(changes, spilled) if operation == "update" else None
        own = self._sparks_own(operation, settings, current, files)
        if own is not None:
            return self._run_at(ReadAt(version, files, EVERY_ROW), own)
        by_first = ReadAt(version, files, self._named_by(current, leading))
        source = self._keyed(current, leading)
        firsts = source.drop_columns([ROWID])
        named: bool | None = None  # whether firsts' values name these rows and no other
        if settings is not None:  # each value once: one value for the rows of each
            keys = distinct_rows(firsts)
            listed = key_list(keys, leading[0], stored) if keys is not None else None
            if listed is not None:
                named = self._names_only(keys, current, version, files, listed)
            if named:
                update = f"UPDATE {self.fqn} SET {settings} WHERE {listed}"
                return self._run_at(by_first, update)  # files skipped by the list
        if operation == "delete":
            keys = distinct_rows(firsts)
        else:  # an UPDATE's MERGE sets each row from one source row: its keys must not repeat
            keys = firsts if all_distinct(firsts) is True else None
        listed = key_list(keys, leading[0], stored) if keys is not None else None
        if named is None and keys is not None:  # the same values, counted once
            named = self._names_only(keys, current, version, files, listed)
        if keys is not None and named:
            if operation == "delete" and listed is not None:  # Spark's own DELETE, files skipped
                return self._run_at(by_first, f"DELETE FROM {self.fqn} WHERE {listed}")
            if operation == "delete":
                source = keys  # each value once: the lines of one order are one source row
        else:
            listed = None
            current, telling = self._told_apart(current, ids, int(version), files)
            source = self._keyed(current, telling or list(stored.names))
            if telling is None:
                matches = self._count_joined(source, "JOIN", self._on(source), clause)
                if matches != current.num_rows:
                    raise ValueError(
                        f"{self._label}: {matches - current.num_rows} other row(s)"
                        " hold every value of a row to change; rows that no column tells"
                        f" apart cannot be changed one by one (give the table a key column,"
                        f" or {operation} them all)"
                    )
        on = self._on(source)
        if listed is not None and self._skips_enough(files, current.column(leading[0])):
            on = f"{on} AND t.{listed}"  # the values as literals too: Delta skips files by them
        matched = [n.removeprefix("__key_") for n in source.column_names if n != ROWID]
        at = ReadAt(version, files, self._named_by(current, matched))
        if spilled is not None:
            return self._merge_spilled(source, on, spilled, at)
        # The rowids stay out of the MERGE's source: it matches by values (Spark would carry
        # an unread column through the join).
        source = source.drop_columns([ROWID]) if ROWID in source.column_names else source
        if operation == "delete":
            return self._merge(source, on, "DELETE", at)
        positions = pc.index_in(current.column(ROWID), changes.column(ROWID))
        assignments, with_values = self._assignments(changes.take(positions), source)
        return self._merge(with_values, on, f"UPDATE SET {assignments}", at)

    def _sparks_own(
        self,
        operation: str,
        settings: str | None,
        current: pa.Table,
        files: file_parts.PartFiles | None,
    ) -> str | None:
        """Spark's own `DELETE FROM t`, or `UPDATE t SET c = <value>, …` (settings: an UPDATE
        that sets each column to one value), where the rowids name every row of the table at
        the version files are of (current: the rows they name there): nothing to match, and
        Spark's UPDATE of every row takes a third of its MERGE's time (TPC-H SF 1's lineitem,
        docs/benchmarks.md). None where they do not, and where the server does not count the
        version's rows from the log."""
        if operation == "update" and settings is None:
            return None
        if files is None or current.num_rows != files.total_live_rows():
            return None
        if operation == "delete":
            return f"DELETE FROM {self.fqn}"
        return f"UPDATE {self.fqn} SET {settings}"

    def _run_at(self, at: ReadAt, statement: str) -> int:
        """Spark's own statement naming rows as they were read (_still_at): the rows it
        changed."""
        self._still_at(at)
        return affected(self._lake.spark.sql(statement))

    def _still_at(self, at: ReadAt) -> None:
        """Raise ConcurrentCommit where another writer committed after the version the rows
        to change were read and counted at, unless its commits only appended rows none of
        which the statement names (later_commits.py): a statement naming them by their
        values on a later version could change rows the client never named (appended with
        a listed key, or with every value of a row to change) and miss rows changed since.
        Checked just before Spark's statement, so the window left is Spark's planning of it;
        appends landing while the added files are read are looked at in turn."""
        version, files = at.version, at.files
        for _ in range(APPEND_CHECKS):
            latest = self._latest_version()
            if latest == version:
                return
            files = self._appended_without(at.named, version, files, latest)
            if files is None:
                break
            version = latest
        raise ConcurrentCommit(
            f"{self._label}: other writers kept committing while this statement read its"
            " rows; run it again"
        )

    def _appended_without(
        self, named: Named, version: int, files: file_parts.PartFiles | None, latest: int
    ) -> file_parts.PartFiles | None:
        """latest's files, where the commits after version (files: its) only added files and
        no row they added is one named names; else None."""
        location = self.layout.location
        if files is None or location is None:
            return None
        if not only_appended(location / "_delta_log", version, latest):
            return None
        now = self._files_at(latest)
        if now is None or holds_named(now, added(files, now), named):
            return None
        return now

    def _named_by(self, current: pa.Table, columns: list[str]) -> Named:
        """How a statement matching current's rows by columns names them, for a look at the
        rows later commits added: by the first of columns whose values Arrow compares as
        Spark does (any row holding another value there is one it cannot match), else as
        every row."""
        for column in columns:
            if exactly_equal(current.schema.field(column).type, self.layout.features):
                return Named(column, current.column(column))
        return EVERY_ROW

    def _one_value_each(self, changes: pa.Table, spilled: Spilled | None) -> str | None:
        """An UPDATE's SET list of literals where every row sets each column to one value
        (as `UPDATE t SET c = 'x'` does through DuckDB), else None."""
        if spilled is not None:
            stored = pq.read_schema(spilled.files()[0])
            columns = {n: (stored.field(n).type, spilled.column(n)) for n in spilled.columns}
        else:
            names = [n for n in changes.column_names if n != ROWID and not n.startswith("__set_")]
            if not all(pc.all(changes.column("__set_" + n)).as_py() for n in names):
                return None
            columns = {
                n: (changes.schema.field(n).type, iter(changes.column(n).chunks)) for n in names
            }
        settings = []
        for name, (data_type, chunks) in columns.items():
            if not (
                pa.types.is_floating(data_type) or exactly_equal(data_type, self.layout.features)
            ):
                return None  # a collated string's literal is not of its collation
            literal = one_literal(chunks, data_type)
            if literal is None:
                return None
            settings.append(f"{quote(name)} = {literal}")
        return ", ".join(settings) or None

    def _latest_version(self) -> int:
        """The table's latest committed version: from its log's folder where the server
        reads it (a file listing), else as Spark says (a job)."""
        if self.layout.location is not None:
            version = log_version(self.layout.location / "_delta_log")
            if version is not None:
                return version
        (version,) = (
            self._lake.spark.sql(f"DESCRIBE HISTORY {self.fqn} LIMIT 1").select("version").first()
        )
        return int(version)

    def _keyed(self, current: pa.Table, columns: list[str]) -> pa.Table:
        """The MERGE's source: the rows' values of columns, in the stored types, as key
        columns (named apart from the table's own), and their rowids."""
        stored = self.layout.stored
        keys = {"__key_" + n: convert(current.column(n), stored.field(n).type) for n in columns}
        return pa.table(keys | {ROWID: current.column(ROWID)})

    def _on(self, source: pa.Table) -> str:
        """The MERGE's condition: each of the table's columns keyed in source equal to the
        source's key; null-safely only where the key holds a null (a MERGE on `<=>` took a
        fifth longer than on `=`, measured on TPC-H's lineitem)."""
        conditions = []
        for name in source.column_names:
            if not name.startswith("__key_"):
                continue
            data_type = self.layout.stored.field(name.removeprefix("__key_")).type
            # a nested value's nulls may sit inside it, where `=` gives null
            null_safe = pa.types.is_nested(data_type) or source.column(name).null_count > 0
            column = quote(name.removeprefix("__key_"))
            conditions.append(
                _same(data_type, f"t.{column}", f"s.{quote(name)}", null_safe=null_safe)
            )
        return " AND ".join(conditions)

    def _told_apart(
        self, current: pa.Table, ids: np.ndarray, version: int, files: file_parts.PartFiles | None
    ) -> tuple[pa.Table, list[str] | None]:
        """The rows to change (current: their first column and rowid, at version) with the
        columns the MERGE joins them on, not every column: the fewest leading columns, two or
        more and fewer than all, whose values tell the rows apart and are held by no other
        row of the version; where every row of the version changes, that prefix less the
        middle columns the rest tell the rows apart without (below). Where no such prefix
        does, or only one with a column whose equality is not Arrow's as it is Spark's (told
        apart by Arrow here): the rows with every column, and None. Most tables lead with
        their key: TPC-H's lineitem is told apart by its first 4 of 16 columns, by 2 of them
        when every row changes, and Spark's MERGE joining on fewer is much the cheaper
        (docs/benchmarks.md, the whole-table UPDATE, has the figures). Columns are read as
        the search reaches them: a whole-table UPDATE does not hold every value of
        the table to find its key (where the server reads the version's files)."""
        stored = self.layout.stored
        names = list(stored.names)
        exact = 0
        while exact < len(names) - 1 and exactly_equal(
            stored.field(names[exact]).type, self.layout.features
        ):
            exact += 1

        def widened(count: int) -> pa.Table:
            """current with the first count columns at least (rows in rowid order once two
            reads are put side by side: Spark's reading keeps no order)."""
            nonlocal current
            held = len(current.column_names) - 1
            if count > held:
                more = self._tracked_rows(ids, version, names[held:count], files)
                if not more.column(ROWID).equals(current.column(ROWID)):
                    current, more = current.sort_by(ROWID), more.sort_by(ROWID)
                for name in names[held:count]:
                    current = current.add_column(
                        len(current.column_names) - 1, more.field(name), more.column(name)
                    )
            return current

        if exact < 2:
            return widened(len(names)), None
        if files is None:
            widened(len(names))  # each read is a Spark job: one of every column, not several

        def tells(count: int, leaving_out: frozenset[str] = frozenset()) -> bool:
            chosen = [name for name in names[:count] if name not in leaving_out]
            return all_distinct(widened(count).select(chosen)) is True

        # A prefix that tells the rows apart makes every longer one do so too: the shortest
        # is searched for from two columns up, doubling, then halving (each try groups the
        # rows by those columns; a short key costs a few short tries, not one of them all).
        shorter, longer = 1, 2
        while not tells(min(longer, exact)):
            if longer >= exact:
                return widened(len(names)), None
            shorter, longer = longer, longer * 2
        longer = min(longer, exact)
        while longer - shorter > 1:
            middle = (shorter + longer) // 2
            shorter, longer = (shorter, middle) if tells(middle) else (middle, longer)
        prefix = names[:longer]
        if files is not None and files.total_live_rows() == current.num_rows:
            # Every row of the version changes, so no other row holds their values: the
            # columns between the first and the last that the rest tell the rows apart
            # without are left out of the join, which Spark's MERGE pays for per column
            # (lineitem's key is its 1st and 4th; docs/benchmarks.md). The last is needed
            # (the prefix without it does not tell); the first is kept, as most tables
            # lead their key with it. Where only some rows change, each column left out
            # makes it likelier that another row holds the rest (a Spark count says so,
            # and then every column matches): the prefix is kept whole.
            dropped: frozenset[str] = frozenset()
            for name in prefix[1:-1]:
                if tells(longer, dropped | {name}):
                    dropped |= {name}
            return current, [name for name in prefix if name not in dropped]
        source = self._keyed(current, prefix)
        joined = self._count_joined(source, "JOIN", self._on(source), f" VERSION AS OF {version}")
        if joined == current.num_rows:
            return current, prefix
        return widened(len(names)), None

    def _names_only(
        self,
        keys: pa.Table,
        current: pa.Table,
        version: int,
        files: file_parts.PartFiles | None,
        listed: str | None,
    ) -> bool:
        """Whether the table at version has just current's rows holding one of the values of
        its first column (keys: those values as stored): then that column names the rows to
        change and no other. Counted in the version's files where the server reads them and
        the column's equality is Arrow's as it is Spark's; else by Spark: by the values
        listed (a filter Delta skips files by) where they are, else by a semi join on the
        column (matching every column of a wide table costs Spark several times the MERGE)."""
        column = self.layout.stored.names[0]
        rows = int(current.num_rows)
        exact = exactly_equal(current.schema.field(column).type, self.layout.features)
        if files is not None and exact:
            return holding(files, column, current.column(column)) == rows
        clause = f" VERSION AS OF {int(version)}"
        if listed is None:
            on = self._on(keys)
            return self._count_joined(keys, "LEFT SEMI JOIN", on, clause) == rows
        query = f"SELECT count(*) FROM {self.fqn}{clause} t WHERE t.{listed}"
        (count,) = self._lake.spark.sql(query).first()
        return int(count) == rows

    def _skips_enough(self, files: file_parts.PartFiles | None, values: pa.ChunkedArray) -> bool:
        """Whether the MERGE should list values (of the first column) as literals too: where
        the files Delta skips by them hold at least SKIPPED_SHARE of the version's rows, by the
        log's partition values and statistics; or where the server does not read the log."""
        if files is None:
            return True
        skipped = rows_skipped(files, self.layout.stored.names[0], values)
        total = pc.sum(files.files.column("num_records"), min_count=0).as_py() or 0
        return skipped is None or skipped >= SKIPPED_SHARE * total

    def _tracked_rows(
        self, ids: np.ndarray, version: int, columns: list[str], files: file_parts.PartFiles | None
    ) -> pa.Table:
        """Columns (and the rowid) of the rows of a row-tracked table with these rowids at
        version: read from its files (the version's, where the log gives their row ids: no
        Spark job), else by Spark."""
        names = [*columns, ROWID]
        if files is None:
            return self.rows_for(ids, f" VERSION AS OF {version}", names)
        every = list(range(files.files.num_rows))
        reader = file_parts.read(
            Context.background(), files, every, names, None, 0, sorted_distinct(ids)
        )
        return reader.read_all().select(names)

    def _count_joined(self, source: pa.Table, join: str, on: str, clause: str) -> int:
        """How many rows the table (at clause's version) joined (JOIN, LEFT SEMI JOIN) to
        source's rows, sent as a view, gives."""
        view = self._lake.view(source)
        try:
            (count,) = self._lake.spark.sql(
                f"SELECT count(*) FROM {self.fqn}{clause} t {join} {view} s ON {on}"
            ).first()
            return int(count)
        finally:
            self._lake.drop_view(view)


def _same(data_type: pa.DataType, left: str, right: str, *, null_safe: bool) -> str:
    """Equality of two values of a column in Spark SQL, null-safe if asked. Maps have none:
    their entries, in the order the value was read with, compare instead."""
    equal = "<=>" if null_safe else "="
    if pa.types.is_map(data_type):
        return f"map_entries({left}) {equal} map_entries({right})"
    return f"{left} {equal} {right}"


def _insert_values(fqn: str, pending: Pending, written: list[str]) -> str | None:
    """A small INSERT as Spark's own `INSERT INTO t (…) VALUES (…)`, every value an exact,
    typed SQL literal (sql_literal); None where it does not fit: more than INLINE_INSERT_ROWS
    rows, rows already staged to a file, or a value without such a literal."""
    if pending.files or not written or not 0 < pending.buffered_rows <= INLINE_INSERT_ROWS:
        return None
    staged = pa.Table.from_batches(pending.buffer)
    columns = []
    for name in written:
        data_type = staged.schema.field(name).type
        try:
            literals = [sql_literal(v, data_type) for v in staged.column(name).to_pylist()]
        except (ValueError, OverflowError):  # a date beyond Python's; the staged file takes it
            return None
        if any(literal is None for literal in literals):
            return None
        columns.append(literals)
    rows = ", ".join(f"({', '.join(row)})" for row in zip(*columns, strict=True))
    return f"INSERT INTO {fqn} ({', '.join(quote(n) for n in written)}) VALUES {rows}"


class _Rows:
    """A table's rows taken by their positions, a batch's at a time: a run of consecutive
    positions (DuckDB sends an UPDATE's rows in its scan's order) as a slice, no copy; others
    taken from the table's chunks combined once. Arrow's take from a table of many chunks
    resolves each position's chunk: SF 1's 6M rows in 92 chunks, taken 65,536 at a time,
    1.18 s against 0.03 s from one chunk (0.17 s to combine)."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table
        self._combined: pa.Table | None = None

    def at(self, positions: np.ndarray) -> pa.Table:
        count = len(positions)
        if not count or np.array_equal(positions, np.arange(positions[0], positions[0] + count)):
            return self._table.slice(int(positions[0]) if count else 0, count)
        if self._combined is None:
            self._combined = self._table.combine_chunks()
        return self._combined.take(pa.array(positions))


def _set(spilled: Spilled) -> str:
    """A spilled UPDATE's SET list: every row sets each of its columns (staging.spill)."""
    return "UPDATE SET " + ", ".join(f"t.{quote(n)} = s.{quote(n)}" for n in spilled.columns)


def as_stored(changes: pa.Table, stored: pa.Schema) -> pa.Table:
    """An UPDATE's values (the served types) in the types the table stores them as."""
    for index, name in enumerate(changes.column_names):
        at = stored.get_field_index(name)
        if at >= 0 and not changes.column(index).type.equals(stored.field(at).type):
            field = pa.field(name, stored.field(at).type)
            changes = changes.set_column(index, field, convert(changes.column(index), field.type))
    return changes
