"""Spark's first run of each kind of statement, paid when the server starts instead of by a
client's first INSERT, UPDATE or DELETE.

A fresh JVM runs a kind of statement for the first time several times slower than once warm:
class loading, Delta's first snapshot, Catalyst's rules, the JIT. Measured on a 3M-row
row-tracked table on 2 cores (2026-11-29), 1,500 keys: the count that proves a DELETE's keys
name its rows, the DELETE and the UPDATE's MERGE took 9.1, 2.9 and 5.6 s in a fresh JVM; 1.4,
1.4 and 4.0 s after warm_up (24 s); 1.5, 1.4 and 2.3 s run a second time.

warm_up runs each kind of statement pyairport sends Spark once, through the backend's own
code, on two tables (one of a few rows with pyairport's rowid column, one of 200,000 rows
with Delta's row tracking) in a scratch folder, and deletes the folder. The second's UPDATE
changes a thousand rows spread over the table, each to a value of its own (rows set to one
value are Spark's own UPDATE, as the first table's are): what warms a MERGE is data through
it. Measured on TPC-H SF 1's row-tracked orders (2026-11-30), a client's first UPDATE of 1,500
rows: 7.6 s after a warm-up on 8 rows, 3.4 s after this one, which takes the same 26 s.

The server's scratch folder is in its backend's staging folder, which goes when the server
stops or, if it was killed, when the next one starts. Nothing is created in the served
warehouse or in Spark's catalog.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from airport_contracts import Context

from ...statement_scope import Statement, with_statement
from .backend import SparkBackend
from .commits import INLINE_INSERT_ROWS
from .layout import ROWID
from .sql import path_ident

SCHEMA = "warm_up"
COLUMNS = pa.schema([("key", pa.int64()), ("note", pa.string())])
BULK_ROWS = 200_000  # the row-tracked table's, written by Spark
CHANGED_ROWS = 1_000  # the UPDATE's, at most


def _rows(start: int, stop: int) -> pa.Table:
    keys = range(start, stop)
    return pa.table({"key": pa.array(keys, pa.int64()), "note": [f"n{i}" for i in keys]})


# Two INSERTs: a few rows (Spark's own INSERT … VALUES) and more (staged as a Parquet file)
FEW_ROWS = _rows(0, 8)
MORE_ROWS = _rows(8, 8 + INLINE_INSERT_ROWS + 1)


def warm_up(spark: Any, scratch: Path) -> float:
    """Run pyairport's kinds of Spark statement once on tables in scratch (a folder that does
    not exist yet, on a filesystem Spark shares), then delete it; the seconds it took.
    Raises what Spark raises (the caller decides whether a failed warm-up matters)."""
    started = time.monotonic()
    scratch.mkdir(parents=True)
    try:
        tracked = path_ident(str(scratch / "lake" / SCHEMA / "tracked"))
        spark.sql(
            f"CREATE TABLE {tracked} (key BIGINT, note STRING) USING delta"
            " TBLPROPERTIES ('delta.enableRowTracking' = 'true',"
            " 'delta.enableDeletionVectors' = 'true')"
        )
        spark.sql(f"INSERT INTO {tracked} SELECT id + 100, concat('n', id) FROM range({BULK_ROWS})")
        lake = SparkBackend(spark, scratch / "lake", staging=scratch / "staging")
        try:
            ctx = Context.background()
            schema = lake.catalog.schema(ctx, SCHEMA)
            assert schema is not None  # the folder made above
            # Spark's own UPDATE (a few rows set to one value) and the MERGE (many, each its own)
            _each_statement(lake.table(SCHEMA, "made", COLUMNS), each_its_own=False)
            _each_statement(schema.table(ctx, "tracked"), each_its_own=True)
        finally:
            lake.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return time.monotonic() - started


def _each_statement(table: Any, *, each_its_own: bool) -> None:
    """Both kinds of INSERT, then an UPDATE of up to CHANGED_ROWS rows spread over the table
    (each_its_own: each row to a value of its own, else all to one) and a DELETE of two, each
    its own statement as a client's would be."""
    ctx = Context.background()
    for rows in (FEW_ROWS, MORE_ROWS):
        table.insert(ctx, rows.to_reader(), None)
    ids = table.scan(ctx).read_all().column(ROWID)
    picked = ids.take(list(range(0, len(ids), max(1, len(ids) // CHANGED_ROWS))))
    notes = pa.array([f"changed {i}" if each_its_own else "changed" for i in range(len(picked))])
    changes = pa.table({"note": notes, ROWID: picked})
    statement = Statement("warm-up update")
    table.update_batch(with_statement(ctx, statement), changes.to_reader(), None)
    statement.commit()
    statement = Statement("warm-up delete")
    deletes = pa.table({ROWID: ids.slice(2, 2)})
    table.delete_batch(with_statement(ctx, statement), deletes.to_reader(), None)
    statement.commit()
