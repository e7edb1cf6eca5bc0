"""The Delta tables a Spark team already has, served as a MutableCatalog: the tables under a
warehouse folder (`<warehouse>/<schema>/<table>/`, each addressed by its path), or the Delta
tables of the Spark session's catalog (a Hive metastore, Unity, …; databases are schemas).

Opening a table changes nothing in it: its layout says how its rows are addressed
(layout.py). Turning Delta row tracking on for tables that have no way to address rows is
the operator's decision (`enable_row_tracking`: it upgrades the table's protocol). The demo
catalog's tables are created only when asked for (`table()`, from `--demo`).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from airport_contracts import Context

from ..capabilities import ALL_CAPABILITIES, with_capabilities
from .ddl import (
    SparkCatalog,
    column_sql,
    move_folder,
    properties_sql,
    remove_folder,
)
from .folders import WORK_PREFIX, folder_for, inside, name_of
from .layout import (
    CAPABILITIES_PROPERTY,
    CREATED_TABLE_PROPERTIES,
    ROW_TRACKING,
    ROWID,
    Layout,
    NotDelta,
)
from .layouts import Layouts
from .session import is_connect
from .sql import path_ident, quote, string_token
from .staging import STAGE_FILE_OPTIONS, kept_by_files
from .staging_folders import dead_stagings, fresh_staging
from .table import SparkTable
from .work_tables import settle_left

ID_FROM_ROWID_PROPERTY = "pyairport.id_from_rowid"
# The most Arrow bytes a view (a MERGE's source) takes into Spark inside its statement; more
# go as a staged Parquet file Spark reads. Spark holds a DataFrame made from Arrow data whole
# in its driver's heap: an UPDATE of every row of TPC-H SF 3's lineitem (18M rows) ran the
# default driver (a quarter of this machine's 24 GiB) out of it.
VIEW_INLINE_BYTES = 64 * 1024 * 1024
# Spark takes a "comment" property as the table comment and leaves it out of SHOW TBLPROPERTIES.
COMMENT_PROPERTY = "pyairport.comment"
# What a table serves by how its rows are addressed (a table of pyairport's own may say less).
CAPABILITIES_BY_ROWIDS: dict[str | None, tuple[str, ...]] = {
    "column": ALL_CAPABILITIES,
    "tracked": ("InsertableTable", "UpdatableBatchTable", "DeletableBatchTable"),
    None: ("InsertableTable",),
}


log = logging.getLogger("pyairport.spark")

LAKE_FUNCTIONS_SCHEMA = "delta"
"""Where `pyairport serve` puts the lake's functions (DuckDB 1.4 and 1.5 do not find table
functions in an Airport catalog's schema main: "Table Function with name … does not exist")."""


class SparkBackend:
    """Delta tables of one warehouse folder, or of the session's catalog."""

    def __init__(
        self,
        spark: Any,
        warehouse: Path | None,
        remote: str | None = None,
        *,
        session_catalog: bool = False,
        enable_row_tracking: bool = False,
        delta_scan_refs: bool = False,
        staging: Path | None = None,
    ) -> None:
        """warehouse: the folder whose `<schema>/<table>` Delta tables are served (and where
        the demo's are made); session_catalog: serve the catalog's Delta tables instead.
        remote: the Spark Connect URL the session uses, if any (a Connect server on this
        machine reads staged files by path; a remote one is sent the rows). staging: where
        statements stage INSERT rows (default: a fresh temporary folder, never the
        warehouse). delta_scan_refs: let DuckDB read the scans it can as delta_scan of the
        table's folder (deviation table_refs_beside_tables)."""
        self.spark = spark
        self.shares_files = not is_connect(spark) or _is_loopback(remote)
        self.layouts = Layouts(spark, self.shares_files)
        self.warehouse = warehouse.resolve() if warehouse is not None else None
        self.session_catalog = session_catalog
        self.enable_row_tracking = enable_row_tracking
        self.delta_scan_refs = delta_scan_refs
        self.place = (
            f"warehouse {self.warehouse}"
            if not session_catalog
            else f"session catalog {spark.conf.get('spark.sql.warehouse.dir')}"
        )
        self.staging = staging or fresh_staging()
        self.staging.mkdir(parents=True, exist_ok=True)
        self.catalog = SparkCatalog(self)
        self._lock = threading.Lock()
        self._schema_folders: dict[str, Path] = {}  # as found in the warehouse
        self._discover()
        if staging is None:  # a server's own folder: settle what dead servers left
            left = dead_stagings()
            for folder in left:
                settle_left(self, folder)
            if left:
                self._discover()  # a table put back is served again

    def close(self) -> None:
        """Remove the staging folder; a work table that could not be settled keeps its note
        there, for the next server on this host to settle."""
        settle_left(self, self.staging)

    def serve_lake_functions(self, schema_name: str = LAKE_FUNCTIONS_SCHEMA) -> None:
        """Serve the lake's table functions (history, table_changes: lake_functions.py) in
        schema_name of the catalog."""
        from .lake_functions import LakeFunctions

        schema = self.catalog.schema_for(schema_name)
        for function in LakeFunctions(self).all():
            schema.add_function(function)

    # --- discovery ----------------------------------------------------------------------------

    def _found(self) -> list[tuple[str, str, str]]:
        """(schema, table, SQL identifier) of every Delta table to serve."""
        if self.session_catalog:
            found = []
            for (database,) in self.spark.sql("SHOW DATABASES").collect():
                for row in self.spark.sql(f"SHOW TABLES IN {quote(database)}").collect():
                    if not row["isTemporary"] and not row["tableName"].startswith(WORK_PREFIX):
                        found.append(
                            (
                                database,
                                row["tableName"],
                                f"{quote(database)}.{quote(row['tableName'])}",
                            )
                        )
            return found
        if self.warehouse is None or not self.warehouse.is_dir():
            return []
        found = []
        for schema_name, schema_folder in _named_folders(self.warehouse):
            self._schema_folders.setdefault(schema_name, schema_folder)
            for table_name, table_folder in _named_folders(schema_folder):
                if os.path.isdir(os.path.join(table_folder, "_delta_log")):
                    found.append((schema_name, table_name, path_ident(str(table_folder))))
        return found

    def _discover(self) -> None:
        """Open every table not open yet, and forget tables that are gone. A table that
        cannot be opened (a broken log, a folder Spark cannot read) is left out with a log
        line: one such folder never takes the catalog's listing down."""
        present = set()
        ctx = Context.background()
        for schema_name, table_name, ident in self._found():
            if (schema_name, table_name) in present:
                log.warning("%s.%s is in two folders: the first is served", schema_name, table_name)
                continue
            present.add((schema_name, table_name))
            schema = self.catalog.schema(ctx, schema_name)
            if schema is not None and schema.table(ctx, table_name) is not None:
                continue
            try:
                layout = self._layout(ident, self._folder(schema_name, table_name))
            except Exception as exc:
                log.warning(
                    "not serving %s.%s: it cannot be opened", schema_name, table_name, exc_info=exc
                )
                continue
            if layout is not None:
                self._open(schema_name, table_name, layout)
        for schema in self.catalog.schemas(ctx):
            for table in schema.tables(ctx):
                if (schema.name(), table.name()) not in present:
                    schema.drop(table.name())

    def _layout(self, ident: str, folder: Path | None) -> Layout | None:
        """The table's layout, None when it is not a Delta table; row tracking turned on
        first when the operator asked for it and the table has no way to address rows."""
        try:
            layout = self.layouts.read(ident, folder)
        except NotDelta:
            return None  # a parquet, CSV, … table of the catalog: not served
        addressable = not (layout.append_only or layout.rowid_is_data)
        if layout.rowids is None and self.enable_row_tracking and addressable:
            self.spark.sql(f"ALTER TABLE {ident} SET TBLPROPERTIES ('{ROW_TRACKING}' = 'true')")
            layout = self.layouts.read(ident, folder)
        return layout

    def refresh(self) -> None:
        """Pick up tables created or dropped since the last look; the catalog's version goes
        up with each change, so clients reload it."""
        with self._lock:
            self._discover()

    def _open(self, schema_name: str, table_name: str, layout: Layout) -> SparkTable:
        properties = layout.properties
        capabilities = CAPABILITIES_BY_ROWIDS[layout.rowids]
        if layout.rowids == "column":  # a table pyairport made: what it was made to serve
            capabilities = tuple(c for c in properties[CAPABILITIES_PROPERTY].split(",") if c)
        if layout.append_only:  # Delta refuses UPDATE and DELETE: said before a row is read
            capabilities = tuple(c for c in capabilities if c == "InsertableTable")
        if layout.rowid_is_data:  # an INSERT would lose its values: served for reading only
            capabilities = ()
        comment = properties.get(COMMENT_PROPERTY) or layout.description
        table: SparkTable = with_capabilities(SparkTable, capabilities)(
            self,
            schema_name,
            table_name,
            layout,
            comment=comment,
            id_from_rowid=properties.get(ID_FROM_ROWID_PROPERTY) or None,
        )
        self.catalog.schema_for(schema_name).add(table)
        return table

    # --- tables pyairport makes (the demo catalog) --------------------------------------------

    def _ident(self, schema_name: str, table_name: str) -> str:
        if self.session_catalog:
            return f"{quote(schema_name)}.{quote(table_name)}"
        return path_ident(str(self._location(schema_name, table_name)))

    def _schema_folder(self, schema_name: str) -> Path:
        """The folder of a schema: the one it was found in, else the one its name gives."""
        if self.warehouse is None:
            raise ValueError("tables are made under a warehouse folder: none was given")
        found = self._schema_folders.get(schema_name)
        return found if found is not None else inside(self.warehouse, folder_for(schema_name))

    def _location(self, schema_name: str, table_name: str) -> Path:
        """The folder of a table: the one it is served from, else the one its name gives."""
        ctx = Context.background()
        schema = self.catalog.schema(ctx, schema_name)
        table = schema.table(ctx, table_name) if schema is not None else None
        location = getattr(getattr(table, "layout", None), "location", None)
        if isinstance(location, Path):
            return location
        assert self.warehouse is not None  # _schema_folder says so when it is not
        schema_folder = self._schema_folder(schema_name)
        return inside(self.warehouse, schema_folder.name, folder_for(table_name))

    def _folder(self, schema_name: str, table_name: str) -> Path | None:
        """The folder a warehouse table is named by (Layouts keeps such tables' layouts)."""
        if self.session_catalog or self.warehouse is None:
            return None
        return self._location(schema_name, table_name)

    def _read_layout(self, schema_name: str, table_name: str, ident: str) -> Layout:
        return self.layouts.read(ident, self._folder(schema_name, table_name))

    def table(
        self,
        schema_name: str,
        table_name: str,
        columns: pa.Schema,
        capabilities: Sequence[str] = ALL_CAPABILITIES,
        comment: str = "",
        rows: pa.Table | None = None,
        id_from_rowid: str | None = None,
    ) -> SparkTable:
        """The table schema_name.table_name with pyairport's rowid column: opened if it
        exists, else created (with rows)."""
        with self._lock:
            schema = self.catalog.schema(Context.background(), schema_name)
            existing = (
                schema.table(Context.background(), table_name) if schema is not None else None
            )
            if existing is not None:
                return existing  # type: ignore[return-value]
            ident = self._ident(schema_name, table_name)
            if not self.exists(schema_name, table_name):
                properties = {
                    **CREATED_TABLE_PROPERTIES,
                    COMMENT_PROPERTY: comment,
                    CAPABILITIES_PROPERTY: ",".join(capabilities),
                    ID_FROM_ROWID_PROPERTY: id_from_rowid or "",
                }
                self._create(ident, schema_name, columns, properties)
                table = self._open(
                    schema_name, table_name, self._read_layout(schema_name, table_name, ident)
                )
                if rows is not None and rows.num_rows:
                    table.insert_rows(
                        Context.background(),
                        pa.RecordBatchReader.from_batches(rows.schema, rows.to_batches()),
                        None,
                    )
                return table
            return self._open(
                schema_name, table_name, self._read_layout(schema_name, table_name, ident)
            )

    def exists(self, schema_name: str, table_name: str) -> bool:
        if self.session_catalog:
            return bool(self.spark.catalog.tableExists(table_name, schema_name))
        return (self._location(schema_name, table_name) / "_delta_log").exists()

    def _create(
        self, ident: str, schema_name: str, columns: pa.Schema, properties: dict[str, str]
    ) -> None:
        """One CREATE TABLE: no data file (a write of an empty DataFrame leaves an empty
        Parquet file in the table for good) and the properties in the same commit."""
        if self.session_catalog:
            self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote(schema_name)}")
        fields = ", ".join(column_sql(f) for f in [pa.field(ROWID, pa.int64()), *columns])
        settings = properties_sql(properties)
        self.spark.sql(f"CREATE TABLE {ident} ({fields}) USING delta TBLPROPERTIES ({settings})")

    # --- DDL (ddl.py): where schemas and tables live ---------------------------------------------

    def ident_for(self, schema_name: str, table_name: str) -> str:
        """The SQL name a table of schema_name gets: catalog.table, or its warehouse path."""
        return self._ident(schema_name, table_name)

    def prepare_schema(self, schema_name: str, comment: str = "") -> None:
        """Make the schema exist where tables are made: a database, or a folder."""
        if self.session_catalog:
            clause = f" COMMENT {string_token(comment)}" if comment else ""
            self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote(schema_name)}{clause}")
        elif self.warehouse is not None:
            self._schema_folder(schema_name).mkdir(parents=True, exist_ok=True)
        else:
            raise ValueError("schemas are made under a warehouse folder: none was given")

    def remove_schema(self, schema_name: str) -> None:
        if self.session_catalog:
            self.spark.sql(f"DROP DATABASE IF EXISTS {quote(schema_name)}")
        elif self.warehouse is not None and self._schema_folder(schema_name).is_dir():
            self._schema_folder(schema_name).rmdir()  # empty: its tables are gone
            self._schema_folders.pop(schema_name, None)

    def open_table(self, schema_name: str, table_name: str, ident: str) -> SparkTable:
        with self._lock:
            return self._open(
                schema_name, table_name, self._read_layout(schema_name, table_name, ident)
            )

    def remove_table(self, schema_name: str, table_name: str) -> None:
        if self.session_catalog:
            self.spark.sql(f"DROP TABLE IF EXISTS {self._ident(schema_name, table_name)}")
        else:
            remove_folder(str(self._location(schema_name, table_name)))

    def move_table(self, schema_name: str, old_name: str, new_name: str) -> str:
        """Rename a table; its new SQL name. A warehouse table is its folder (Delta's log
        names its files relative to it), so the folder moves."""
        if self.session_catalog:
            old, new = self._ident(schema_name, old_name), self._ident(schema_name, new_name)
            self.spark.sql(f"ALTER TABLE {old} RENAME TO {new}")
        else:
            move_folder(
                str(self._location(schema_name, old_name)),
                str(self._location(schema_name, new_name)),
            )
        return self._ident(schema_name, new_name)

    # --- views for MERGE ------------------------------------------------------------------------

    def view(self, data: pa.Table) -> str:
        """A temporary view over Arrow data, for MERGE; drop it with drop_view. Data over
        VIEW_INLINE_BYTES is staged as a Parquet file that Spark reads where it can read this
        process's files: a DataFrame made from Arrow data is held whole in Spark's driver."""
        name = f"pyairport_{uuid.uuid4().hex}"
        if self.shares_files and data.nbytes > VIEW_INLINE_BYTES and kept_by_files(data.schema):
            path = self._view_file(name)
            try:
                pq.write_table(data, path, **STAGE_FILE_OPTIONS)
                self.spark.read.parquet(str(path)).createOrReplaceTempView(name)
            except BaseException:
                path.unlink(missing_ok=True)
                raise
        else:
            self.spark.createDataFrame(data).createOrReplaceTempView(name)
        return name

    def written_view(self, schema: pa.Schema, parts: Iterable[pa.Table]) -> str:
        """A temporary view over the rows of parts, written to a staged Parquet file part by
        part (never held whole), for a large MERGE whose rows are made as they are read
        (an UPDATE's spilled values: staging.py); drop it with drop_view. Only where Spark
        reads this process's files, and for a schema kept_by_files."""
        name = f"pyairport_{uuid.uuid4().hex}"
        path = self._view_file(name)
        try:
            with pq.ParquetWriter(path, schema, **STAGE_FILE_OPTIONS) as writer:
                for part in parts:
                    writer.write_table(part)
            self.spark.read.parquet(str(path)).createOrReplaceTempView(name)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        return name

    def files_view(self, directory: Path) -> str:
        """A temporary view over the staged Parquet files of directory (one schema); drop it
        with drop_view (the files are their statement's to remove)."""
        name = f"pyairport_{uuid.uuid4().hex}"
        self.spark.read.parquet(str(directory)).createOrReplaceTempView(name)
        return name

    def drop_view(self, name: str) -> None:
        self.spark.catalog.dropTempView(name)
        self._view_file(name).unlink(missing_ok=True)

    def _view_file(self, name: str) -> Path:
        return self.staging / f"{name}.parquet"


def _named_folders(parent: Path) -> list[tuple[str, Path]]:
    """The folders of parent that hold a schema or table, by name; what cannot be read or
    holds no name the server serves is left out with a log line. DuckDB asks for the
    catalog's version before each table it reads, and each ask looks here again: the
    directory's entries say which are folders without a stat of each (os.scandir)."""
    try:
        with os.scandir(parent) as entries:
            children = sorted(e.name for e in entries if _is_folder(e))
    except OSError as exc:
        log.warning(
            "not serving what %s holds: it cannot be listed (%s)", parent.name, exc.strerror
        )
        return []
    named = []
    for child in children:
        name = _served_name(child)
        if name is None:
            if not child.startswith((".", WORK_PREFIX)):
                log.warning("not serving the folder %r: its name is no schema or table name", child)
            continue
        named.append((name, parent / child))
    return named


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # a link to a folder counts, as Path.is_dir's did
    except OSError:
        return False


@functools.lru_cache(maxsize=4096)
def _served_name(folder: str) -> str | None:
    """name_of, remembered: the same folders are named on every look (a warehouse's worth;
    a folder name is at most 255 bytes, so the memory this keeps stays about a megabyte)."""
    return name_of(folder)


def _is_loopback(url: str | None) -> bool:
    from urllib.parse import urlparse

    host = urlparse(url or "").hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")
