"""A catalog of schemas of tables that the server serves, whatever backend the tables use."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from airport_contracts import Context, Table


class CatalogSchema:
    """A named group of tables; tables can be added and dropped while serving."""

    def __init__(self, name: str, comment: str = "", tables: Iterable[Table] = ()) -> None:
        self._name = name
        self._comment = comment
        self._tables: dict[str, Table] = {t.name(): t for t in tables}
        self._lock = threading.Lock()
        self.on_change: Callable[[], None] = lambda: None  # set by the MutableCatalog holding it

    def name(self) -> str:
        return self._name

    def comment(self) -> str:
        return self._comment

    def tables(self, ctx: Context) -> list[Table]:
        with self._lock:
            return list(self._tables.values())

    def table(self, ctx: Context, name: str) -> Table | None:
        with self._lock:
            return self._tables.get(name)

    def add(self, table: Table) -> None:
        with self._lock:
            self._tables[table.name()] = table
        self.on_change()

    def drop(self, name: str) -> None:
        with self._lock:
            self._tables.pop(name, None)
        self.on_change()


class MutableCatalog:
    """Schemas by name, added and dropped while serving; implements the contract's Catalog.

    Its version (protocol §2.5) goes up whenever a schema or table is added or dropped, so
    clients that cached the catalog (DuckDB) reload it."""

    def __init__(
        self,
        name: str = "",
        schemas: Iterable[CatalogSchema] = (),
        refresh: Callable[[], None] | None = None,
    ) -> None:
        """refresh: called before the catalog is listed, by a backend whose tables can
        appear and disappear outside pyairport (Spark)."""
        self._name = name
        self._schemas: dict[str, CatalogSchema] = {}
        self.refresh = refresh or (lambda: None)
        self._lock = threading.Lock()
        self._version = 1
        for schema in schemas:
            self.add_schema(schema)

    def version(self) -> tuple[int, bool]:
        """(catalog_version, is_fixed): not fixed, tables come and go."""
        with self._lock:
            return self._version, False

    def changed(self) -> None:
        """Something in the catalog changed: clients reload it (catalog_version moves)."""
        with self._lock:
            self._version += 1

    def name(self) -> str:
        return self._name

    def rename(self, name: str) -> None:
        """Serve the catalog as name (before the server serves it: the server routes by the
        name the catalog had when added)."""
        self._name = name

    def schemas(self, ctx: Context) -> list[CatalogSchema]:
        with self._lock:
            return list(self._schemas.values())

    def schema(self, ctx: Context, name: str) -> CatalogSchema | None:
        with self._lock:
            return self._schemas.get(name)

    def add_schema(self, schema: CatalogSchema) -> CatalogSchema:
        with self._lock:
            existing = self._schemas.get(schema.name())
            if existing is not None:
                return existing
            self._schemas[schema.name()] = schema
            schema.on_change = self.changed
            self._version += 1
        return schema
