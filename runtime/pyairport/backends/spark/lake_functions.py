"""The lake's own table functions on a Spark backend, as Spark SQL names them: a Delta table's
commits (`DESCRIBE HISTORY`) and its changed rows between two versions (`table_changes`, from
Delta's change data feed). A table is named as the catalog serves it, 'schema.table':

    SELECT version, operation FROM lake.delta.history('sales.orders');
    SELECT * FROM lake.delta.table_changes('sales.orders', 2);            -- version 2 to now
    SELECT * FROM lake.delta.table_changes('sales.orders', 2, to_version := 5);

Each reads the table it is given as a scan of it would: the caller needs a read grant on the
table's schema (the same refusal as a scan's), whichever schema the functions are served in.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from airport_contracts import Context, EngineUnavailable

from ...access.grants import may_read
from ...any_case import found_schema, found_table
from ...functions import (
    Parameter,
    PythonTableFunction,
    authorize_table_read,
    table_function,
    table_path,
)
from ..shaping import full_width
from . import change_pieces
from .lake import Lake
from .layout import ROWID
from .partition_stream import collected
from .scans import SCAN_BATCH_ROWS
from .session import SPARK_STOPPED, engine_lost, functions_for
from .sql import one_line
from .table import SparkTable

CHANGE_DATA_FEED = "delta.enableChangeDataFeed"
log = logging.getLogger("pyairport.lake_functions")


@contextlib.contextmanager
def _spark_errors(function: str) -> Iterator[None]:
    """A Spark failure as the one line a client may see (no plan, stack or path); the whole
    of it in the server's log."""
    try:
        yield
    except ValueError:
        raise
    except Exception as exc:
        log.error("%s failed", function, exc_info=exc)
        if engine_lost(exc):
            raise EngineUnavailable(error=SPARK_STOPPED) from None
        raise RuntimeError(f"{function}: {one_line(exc)}") from None


HISTORY = pa.schema(
    [
        ("version", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("operation", pa.string()),
        ("operation_parameters", pa.map_(pa.string(), pa.string())),
        ("operation_metrics", pa.map_(pa.string(), pa.string())),
        ("engine_info", pa.string()),
    ]
)
_HISTORY_COLUMNS = (
    "version",
    "timestamp",
    "operation",
    "operationParameters",
    "operationMetrics",
    "engineInfo",
)

CHANGE_COLUMNS = pa.schema(
    [
        ("_change_type", pa.string()),
        ("_commit_version", pa.int64()),
        ("_commit_timestamp", pa.timestamp("us", tz="UTC")),
    ]
)


class LakeFunctions:
    """history and table_changes over the Delta tables of backend's catalog."""

    def __init__(self, backend: Lake) -> None:
        self.backend = backend
        self.history = table_function(
            name="history",
            params=[Parameter(pa.string(), "table")],
            schema=self._history_schema,
            comment="a Delta table's commits: version, time, operation and its metrics",
        )(self._history)
        self.table_changes = table_function(
            name="table_changes",
            params=[
                Parameter(pa.string(), "table"),
                Parameter(pa.int64(), "from_version"),
                Parameter(pa.int64(), "to_version", named=True),
            ],
            schema=self._changes_schema,
            comment="a Delta table's changed rows from one version to another (or to now),"
            " from its change data feed",
        )(self._table_changes)

    def all(self) -> tuple[PythonTableFunction, ...]:
        return (self.history, self.table_changes)

    def _table(self, ctx: Context, function: str, name: str | None) -> SparkTable:
        """The table name names, once the caller may read it."""
        path = table_path(name or "")
        if path is None:
            raise ValueError(
                f"{function}: name the table as schema.table, a name that holds a dot in"
                f' double quotes ("eu.sales".orders), not {name!r}'
            )
        catalog = self.backend.catalog
        schema_name = found_schema(ctx, catalog, path[0])  # as DuckDB, whatever its case
        schema = catalog.schema(ctx, schema_name)
        # Found before the grant is checked, so that the audit line names the table read; the
        # grant is the schema's, so what is found changes no answer. A schema the caller may
        # not read is not looked into: its refusal is audited with the name as typed.
        looked_into = schema if schema is not None and may_read(ctx, schema_name) else None
        table_name = path[1] if looked_into is None else found_table(ctx, looked_into, path[1])
        authorize_table_read(ctx, schema_name, table_name)
        table = schema.table(ctx, table_name) if schema is not None else None
        if not isinstance(table, SparkTable):
            raise ValueError(f"{function}: no Delta table {name!r} (name it as schema.table)")
        return table

    def _history_schema(self, name: str | None, *, ctx: Context) -> pa.Schema:
        """HISTORY, once the caller may read the table (so that binding the call, at
        flight_info, is refused as its scan would be)."""
        self._table(ctx, "history", name)
        return HISTORY

    def _history(self, name: str | None, *, ctx: Context) -> pa.Table:
        table = self._table(ctx, "history", name)
        with _spark_errors("history"):
            frame = self.backend.spark.sql(f"DESCRIBE HISTORY {table.fqn}")
            read = frame.select(*_HISTORY_COLUMNS).orderBy("version").toArrow()
        return read.rename_columns(HISTORY.names).cast(HISTORY)

    def _changes_schema(
        self, name: str | None, from_version: int | None, to_version: int | None, *, ctx: Context
    ) -> pa.Schema:
        table = self._table(ctx, "table_changes", name)
        if table.layout.properties.get(CHANGE_DATA_FEED, "").lower() != "true":
            raise ValueError(
                f"table_changes: {name} does not record its changes: set its property"
                f" {CHANGE_DATA_FEED} = true (changes are recorded from then on)"
            )
        if from_version is None or from_version < 0:
            raise ValueError("table_changes: from_version must be a version (0 or more)")
        if to_version is not None and to_version < from_version:
            raise ValueError("table_changes: to_version is before from_version")
        user = [f for f in table.schema if f.name != ROWID]
        return pa.schema([*user, *CHANGE_COLUMNS])

    def _table_changes(
        self, name: str | None, from_version: int | None, to_version: int | None, *, ctx: Context
    ) -> Iterator[pa.RecordBatch]:
        schema = self._changes_schema(name, from_version, to_version, ctx=ctx)
        table = self._table(ctx, "table_changes", name)
        assert from_version is not None  # _changes_schema refuses the call without it
        with _spark_errors("table_changes"):
            commits = self._commits(table, from_version, to_version)
        for piece in change_pieces.pieces(
            from_version, to_version, commits, change_pieces.PIECE_ROWS
        ):
            for part in range(piece.parts):
                ctx.raise_if_done()
                with _spark_errors("table_changes"):
                    read = collected(self._changes(table, piece, part))
                for batch in read.to_batches(SCAN_BATCH_ROWS):
                    yield full_width(batch, schema, schema.names)

    def _commits(
        self, table: SparkTable, first: int, last: int | None
    ) -> list[tuple[int, int | None]]:
        """The table's commits from first to last (None: the latest) and the rows each
        changed, from its history (the log: no data file is read)."""
        history = self.backend.spark.sql(f"DESCRIBE HISTORY {table.fqn}")
        history = history.where(history.version >= first)
        if last is not None:
            history = history.where(history.version <= last)
        rows = history.select("version", "operationMetrics").orderBy("version").collect()
        return [(int(v), change_pieces.changed_rows(metrics)) for v, metrics in rows]

    def _changes(self, table: SparkTable, piece: change_pieces.Piece, part: int) -> Any:
        """One piece of the table's change data feed as a DataFrame, in commit order."""
        reader: Any = self.backend.spark.read.format("delta")
        reader = reader.option("readChangeFeed", "true").option("startingVersion", piece.first)
        if piece.last is not None:
            reader = reader.option("endingVersion", piece.last)
        location = table.layout.location
        frame = reader.load(str(location)) if location is not None else reader.table(table.fqn)
        if ROWID in frame.columns:
            frame = frame.drop(ROWID)
        if piece.parts > 1:
            from pyspark.sql.types import AtomicType

            functions = functions_for(frame)

            # Spark hashes no map; the plain columns tell the rows apart well enough to split
            plain = [
                frame[f.name] for f in frame.schema.fields if isinstance(f.dataType, AtomicType)
            ]
            values = functions.xxhash64(*plain)
            frame = frame.where(functions.pmod(values, functions.lit(piece.parts)) == part)
        return frame.orderBy("_commit_version")
