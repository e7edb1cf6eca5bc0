"""A statement's staged INSERT rows, sent to a Spark that cannot read this process's files (a
Spark Connect server on another host), in bounded memory on both sides.

A Connect client sends rows as a local relation inside a statement's plan; one relation of the
whole statement would hold every row in this process and, past the session's cache threshold
(64 MiB by default), leave them cached on the server for the session's life. So the staged
files are read a group of batches at a time, and each group is appended to a work table beside
the target (a Delta table named with the server's own prefix: no listing shows it, no client
name can be it). The target then takes all the rows in one INSERT … SELECT, one commit, and
the work table is removed whatever happened (work_tables.py: by the next server on this host
when this one is killed mid-statement).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .lake import Lake
from .work_tables import forget, note, settle

# The most bytes of rows one statement sends: half Spark Connect's default cache threshold, so
# that a group always travels inline in its plan and is gone with the statement.
SENT_BYTES = 32 * 1024 * 1024
# Rows read from a staged file at a time: a group is over SENT_BYTES only when one batch is.
READ_ROWS = 2048

# The work table's column names are the target's, which Delta takes only with column mapping
# when they hold a space or one of ",;{}()=" (a table served may have such names).
WORK_PROPERTIES = "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"


@contextlib.contextmanager
def sent_rows(lake: Lake, schema_name: str, directory: Path) -> Iterator[str | None]:
    """The SQL name of a work table in schema_name holding the rows of directory's staged
    files, while the block runs (None: the files hold no row)."""
    work = note(lake, "rows", schema_name)
    ident = lake.ident_for(schema_name, work.name)
    started = False
    try:
        for group in _groups(sorted(directory.glob("*.parquet"))):
            view = lake.view(group)
            try:
                if started:
                    lake.spark.sql(f"INSERT INTO {ident} SELECT * FROM {view}")
                else:
                    started = True
                    lake.spark.sql(
                        f"CREATE TABLE {ident} USING delta {WORK_PROPERTIES}"
                        f" AS SELECT * FROM {view}"
                    )
            finally:
                lake.drop_view(view)
        yield ident if started else None
    finally:
        if started:  # the CREATE may have made it, even if it failed
            settle(lake, work)  # never raises: the statement's own error is the one to tell
        else:
            forget(lake, work)


def _groups(files: list[Path]) -> Iterator[pa.Table]:
    """The files' rows, a group of at most SENT_BYTES (or one read batch) at a time."""
    batches: list[pa.RecordBatch] = []
    size = 0
    for path in files:
        with pq.ParquetFile(path) as staged:
            for batch in staged.iter_batches(batch_size=READ_ROWS):
                if batches and size + batch.nbytes > SENT_BYTES:
                    yield pa.Table.from_batches(batches)
                    batches, size = [], 0
                batches.append(batch)
                size += batch.nbytes
    if batches:
        yield pa.Table.from_batches(batches)
