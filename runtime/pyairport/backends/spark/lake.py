"""What a Spark warehouse's tables, schemas and lake functions need from the backend that
serves them: the session, where statements stage rows, temporary views for MERGE, and where
schemas and tables live. SparkBackend (backend.py) is the one implementation; typing against
this Protocol keeps table.py, ddl.py and lake_functions.py from importing the backend that
imports them."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from airport_contracts import Table

from ...catalog import MutableCatalog
from .layouts import Layouts


class Lake(Protocol):
    spark: Any
    """The SparkSession (classic or Connect) every statement runs in."""
    shares_files: bool
    """Whether Spark reads this process's files by path (classic, or Connect on loopback)."""
    staging: Path
    """Where statements stage the rows they send to Spark (never the warehouse), and note the
    work tables they make (work_tables.py)."""
    place: str
    """Which lake this is (its warehouse folder, or the session catalog's), for the notes a
    later server on this host reads."""
    layouts: Layouts
    """How tables' layouts are read (kept by shape for tables named by folder)."""

    @property
    def catalog(self) -> MutableCatalog:
        """The catalog the warehouse's schemas are served in."""

    def refresh(self) -> None: ...

    def view(self, data: pa.Table) -> str: ...

    def written_view(self, schema: pa.Schema, parts: Iterable[pa.Table]) -> str: ...

    def files_view(self, directory: Path) -> str: ...

    def drop_view(self, name: str) -> None: ...

    def ident_for(self, schema_name: str, table_name: str) -> str: ...

    def prepare_schema(self, schema_name: str, comment: str = "") -> None: ...

    def remove_schema(self, schema_name: str) -> None: ...

    def open_table(self, schema_name: str, table_name: str, ident: str) -> Table: ...

    def exists(self, schema_name: str, table_name: str) -> bool: ...

    def remove_table(self, schema_name: str, table_name: str) -> None: ...

    def move_table(self, schema_name: str, old_name: str, new_name: str) -> str: ...
