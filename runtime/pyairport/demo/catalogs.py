"""The demo catalog: the fixtures of protocol.md §4.0, so the same scenarios run against
pyairport and airport-go.

- dml_schema.users   INSERT + legacy UPDATE/DELETE (UpdatableTable, DeletableTable)
- batch_schema.users INSERT + batch UPDATE/DELETE (UpdatableBatchTable, DeletableBatchTable)
- demo_schema.readonly  no DML at all (three rows to read)
- demo_schema's functions: email_domain (scalar), series (table), shouted (in-out)
Columns: rowid (int64, is_rowid), id int64, name utf8, email utf8. An INSERT whose id is
null gets the new rowid as its id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airport_contracts import Context, Table

from ..catalog import CatalogSchema, MutableCatalog
from .functions import DEMO_FUNCTIONS

if TYPE_CHECKING:
    from ..backends.spark import SparkBackend

USERS_COLUMNS = pa.schema(
    [pa.field("id", pa.int64()), pa.field("name", pa.string()), pa.field("email", pa.string())]
)

LEGACY = ("InsertableTable", "UpdatableTable", "DeletableTable")
BATCH = ("InsertableTable", "UpdatableBatchTable", "DeletableBatchTable")

READONLY_ROWS = pa.table(
    {
        "id": [1, 2, 3],
        "name": ["Alice", "Bob", "Carol"],
        "email": ["alice@example.com", "bob@example.com", "carol@example.com"],
    },
    schema=USERS_COLUMNS,
)

# (schema, table, comment, capabilities, initial rows)
DEMO_TABLES: tuple[tuple[str, str, str, Sequence[str], pa.Table | None], ...] = (
    (
        "dml_schema",
        "users",
        "users served through the legacy UPDATE/DELETE interfaces",
        LEGACY,
        None,
    ),
    (
        "batch_schema",
        "users",
        "users served through the batch UPDATE/DELETE interfaces",
        BATCH,
        None,
    ),
    ("demo_schema", "readonly", "a table that accepts no DML", (), READONLY_ROWS),
)

TableFactory = Callable[[str, str, pa.Schema, Sequence[str], str, "pa.Table | None"], Table]


def demo_catalog(
    make_table: TableFactory,
    name: str = "",
    catalog_class: type[MutableCatalog] = MutableCatalog,
    schema_class: type[CatalogSchema] = CatalogSchema,
) -> MutableCatalog:
    """The demo catalog with tables made by make_table(schema, table, columns, capabilities,
    comment, rows); each backend supplies its own factory (and its catalog and schema
    classes: the memory backend's create and drop)."""
    catalog = catalog_class(name)
    for schema_name, table_name, comment, capabilities, rows in DEMO_TABLES:
        schema = catalog.add_schema(schema_class(schema_name))
        schema.add(make_table(schema_name, table_name, USERS_COLUMNS, capabilities, comment, rows))
    add_demo_functions(catalog)
    return catalog


def add_demo_functions(catalog: MutableCatalog) -> None:
    schema = catalog.schema(Context.background(), "demo_schema")
    assert schema is not None
    for function in DEMO_FUNCTIONS:
        schema.add_function(function)


def memory_demo_catalog(name: str = "") -> MutableCatalog:
    from ..backends.memory import memory_table
    from ..backends.memory.catalog import MemoryCatalog, MemorySchema

    return demo_catalog(
        lambda _schema, table, columns, caps, comment, rows: memory_table(
            table, columns, caps, comment=comment, rows=rows, id_from_rowid="id"
        ),
        name,
        MemoryCatalog,
        MemorySchema,
    )


def spark_demo_catalog(backend: SparkBackend) -> MutableCatalog:
    """The demo catalog as Delta tables of backend; existing tables are reopened."""

    demo_catalog(partial(backend.table, id_from_rowid="id"))
    add_demo_functions(backend.catalog)
    return backend.catalog


def generated_users(n: int, start: int = 1) -> pa.Table:
    """Rows for the users tables as protocol.md §4.1's DuckDB statements make them:
    `SELECT i, 'user_'||i, 'user_'||i||'@example.com' FROM generate_series(start, start+n-1)`
    (tests and benchmarks)."""
    ids = pa.array(np.arange(start, start + n), pa.int64())
    text = pc.cast(ids, pa.string())
    return pa.table(
        {
            "id": ids,
            "name": pc.binary_join_element_wise("user_", text, ""),
            "email": pc.binary_join_element_wise("user_", text, "@example.com", ""),
        },
        schema=USERS_COLUMNS,
    )
