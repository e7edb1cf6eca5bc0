"""Spark's first run of each kind of statement, paid when the server starts instead of by a
client's first INSERT, UPDATE or DELETE.

A fresh JVM runs a kind of statement for the first time several times slower than once warm:
class loading, Delta's first snapshot, Catalyst's rules, the JIT. Measured on a 3M-row
row-tracked table on 2 cores (2026-11-29), 1,500 keys: the count that proves a DELETE's keys
name its rows, the DELETE and the UPDATE's MERGE took 9.1, 2.9 and 5.6 s in a fresh JVM; 1.4,
1.4 and 4.0 s after warm_up (24 s); 1.5, 1.4 and 2.3 s run a second time.

warm_up runs each kind of statement pyairport sends Spark once, through the backend's own
code, on two tables of a few rows (one with pyairport's rowid column, one with Delta's row
tracking) in a scratch folder, and deletes the folder. The server's scratch folder is in its
backend's staging folder, which goes when the server stops or, if it was killed, when the
next one starts. Nothing is created in the served warehouse or in Spark's catalog.
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
from .layout import ROWID
from .sql import path_ident

SCHEMA = "warm_up"
COLUMNS = pa.schema([("key", pa.int64()), ("note", pa.string())])
ROWS = pa.table({"key": pa.array(range(8), pa.int64()), "note": [f"n{i}" for i in range(8)]})


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
        lake = SparkBackend(spark, scratch / "lake", staging=scratch / "staging")
        try:
            ctx = Context.background()
            schema = lake.catalog.schema(ctx, SCHEMA)
            assert schema is not None  # the folder made above
            for table in (lake.table(SCHEMA, "made", COLUMNS), schema.table(ctx, "tracked")):
                _each_statement(table)
        finally:
            lake.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return time.monotonic() - started


def _each_statement(table: Any) -> None:
    """INSERT, then an UPDATE and a DELETE of a few of the rows, each its own statement as a
    client's would be."""
    ctx = Context.background()
    table.insert(ctx, ROWS.to_reader(), None)
    ids = table.scan(ctx).read_all().column(ROWID)
    changes = pa.table({"note": ["changed", "changed"], ROWID: ids.slice(0, 2)})
    statement = Statement("warm-up update")
    table.update_batch(with_statement(ctx, statement), changes.to_reader(), None)
    statement.commit()
    statement = Statement("warm-up delete")
    deletes = pa.table({ROWID: ids.slice(2, 2)})
    table.delete_batch(with_statement(ctx, statement), deletes.to_reader(), None)
    statement.commit()
