"""How a Delta table is stored and how pyairport addresses its rows, read from Spark when the
table is opened.

Rows are addressed by one of:
- pyairport's own `rowid` column (BIGINT, assigned by pyairport): tables pyairport made;
- Delta row tracking (`delta.enableRowTracking`): the row id Delta assigns at commit
  (`_metadata.row_id`), stable across UPDATE, MERGE and OPTIMIZE, whatever writes the table;
- nothing: the table serves SELECT and INSERT; UPDATE and DELETE need one of the above.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pyarrow as pa

from airport_contracts import rowid_field

from .sql import plain_type
from .stored_types import by_default, served, served_types

ROWID = "rowid"
ROW_TRACKING = "delta.enableRowTracking"
MAPPING_MODE = "delta.columnMapping.mode"  # "name" or "id": names can change, files keep theirs
# The capabilities a table pyairport made with its own rowid column serves; its presence is
# what tells that column from a column of the table's own that happens to be named rowid.
CAPABILITIES_PROPERTY = "pyairport.capabilities"
# The tables pyairport creates get deletion vectors: a statement that changes a few rows
# marks them deleted instead of rewriting the file that holds them, and delta-rs reads such
# tables as fast as others (direct.py).
CREATED_TABLE_PROPERTIES = {"delta.enableDeletionVectors": "true"}
TRACKED_ROWID = "_metadata.row_id"  # what Delta calls a row-tracked row's id in a query
# Column metadata Delta gives generated, identity and defaulted columns: Delta fills them.
GENERATION = "delta.generationExpression"
IDENTITY = "delta.identity.start"
DEFAULT = "CURRENT_DEFAULT"
COMPUTED_KEYS = (GENERATION, IDENTITY, DEFAULT)


@dataclass(frozen=True)
class Layout:
    """A Delta table as pyairport serves it."""

    ident: str  # how Spark SQL names it: delta.`/path` or `db`.`table`
    location: Path | None  # its folder when on this machine's file system
    rowids: str | None  # "column", "tracked" or None
    schema: pa.Schema  # as served: the rowid field (if any) first, then the user's columns
    # (in the types they came as: stored_types.py)
    stored: pa.Schema  # the columns the table stores and an INSERT writes (no tracked rowid)
    partitions: tuple[str, ...]
    computed: frozenset[str]  # generated, identity and defaulted columns
    features: frozenset[str]
    properties: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    variants: frozenset[str] = frozenset()  # VARIANT columns: served as Spark's Arrow form
    # (their encoded value and metadata); Spark builds no variant from it, so none is written
    generated: tuple[tuple[str, str], ...] = ()  # (column, Spark SQL expression Delta computes)
    identities: frozenset[str] = frozenset()  # IDENTITY columns: Delta gives their values
    defaults: tuple[tuple[str, str], ...] = ()  # (column, its DEFAULT as Spark SQL)
    retyped: frozenset[str] = frozenset()  # columns stored as another type than they came as
    # (not the decimals served as decimal64 by default: stored_types.served_type)
    description: str = ""  # the table's comment

    @property
    def append_only(self) -> bool:
        """Delta refuses every UPDATE and DELETE of the table."""
        return self.properties.get("delta.appendOnly", "").lower() == "true"

    @property
    def rowid_is_data(self) -> bool:
        """A column of the table's own is named rowid (an export's row number, a key): the
        contract takes a column of that name for the rowid, which an INSERT never stores, so
        rows are not addressed (not even by row tracking) and its values are served as data."""
        return self.rowids != "column" and ROWID in self.stored.names

    @property
    def rowid_sql(self) -> str:
        """The rowid as a Spark SQL expression over the table."""
        return TRACKED_ROWID if self.rowids == "tracked" else f"`{ROWID}`"


class NotDelta(ValueError):
    """The table is not a Delta table (a catalog may hold parquet, CSV, … tables too)."""


def read_layout(spark: Any, ident: str) -> Layout:
    detail = spark.sql(f"DESCRIBE DETAIL {ident}").first()
    if str(detail["format"] or "").lower() != "delta":
        raise NotDelta(f"{ident} is a {detail['format']} table")
    properties = dict(detail["properties"] or {})
    features = frozenset(detail["tableFeatures"] or [])
    location = urlparse(str(detail["location"] or ""))
    frame = spark.sql(f"SELECT * FROM {ident}")
    arrow = frame.limit(0).toArrow().schema
    folder = Path(unquote(location.path)) if location.scheme == "file" else None
    variants = frozenset(f.name for f in frame.schema.fields if f.dataType.typeName() == "variant")
    metadata = _column_metadata(frame, folder)
    computed = frozenset(n for n, keys in metadata if any(k in keys for k in COMPUTED_KEYS))
    layout = layout_of(
        ident,
        arrow,
        folder,
        properties,
        tuple(detail["partitionColumns"] or ()),
        computed | variants,  # left out of an INSERT, Delta writes NULL
        features,
    )
    generated = {n: str(keys[GENERATION]) for n, keys in metadata if GENERATION in keys}
    defaults = {n: str(keys[DEFAULT]) for n, keys in metadata if DEFAULT in keys}
    return replace(
        layout,
        description=str(detail["description"] or ""),
        variants=variants,
        generated=tuple(sorted(generated.items())),
        identities=frozenset(n for n, keys in metadata if IDENTITY in keys),
        defaults=tuple(sorted(defaults.items())),
    )


def _column_metadata(frame: Any, folder: Path | None) -> list[tuple[str, dict[str, Any]]]:
    """Each top-level column's metadata, where Delta marks generated, identity and defaulted
    columns. A catalog's schema carries it; a table read by path does not (Spark drops it), so
    its Delta log says, read by delta-rs."""
    fields = [(f.name, f.metadata or {}) for f in frame.schema.fields]
    if folder is not None:
        from deltalake import DeltaTable

        fields += [(f.name, f.metadata or {}) for f in DeltaTable(str(folder)).schema().fields]
    return fields


def layout_of(
    ident: str,
    arrow: pa.Schema,
    location: Path | None,
    properties: dict[str, str],
    partitions: tuple[str, ...],
    computed: frozenset[str],
    features: frozenset[str],
) -> Layout:
    fields = [pa.field(f.name, plain_type(f.type), f.nullable) for f in arrow]
    named_rowid = any(f.name == ROWID for f in fields)
    has_column = named_rowid and CAPABILITIES_PROPERTY in properties
    user = [f for f in fields if not (has_column and f.name == ROWID)]
    if has_column:
        rowids: str | None = "column"
    elif named_rowid:  # Layout.rowid_is_data
        rowids = None
    elif properties.get(ROW_TRACKING, "").lower() == "true":
        rowids = "tracked"
    else:
        rowids = None
    types = served_types(properties)
    as_served = [served(f, types) for f in user]  # the types DuckDB sent (stored_types.py)
    served_fields = [rowid_field(), *as_served] if rowids else as_served
    stored = [rowid_field(), *user] if rowids == "column" else user
    return Layout(
        properties=properties,
        ident=ident,
        location=location,
        rowids=rowids,
        schema=pa.schema(served_fields),
        retyped=frozenset(
            f.name for f, kept in zip(as_served, user, strict=True) if f != by_default(kept)
        ),
        stored=pa.schema(stored),
        partitions=partitions,
        computed=computed,
        features=features,
    )
