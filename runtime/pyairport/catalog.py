"""A catalog of schemas of tables that the server serves, whatever backend the tables use."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from airport_contracts import (
    Context,
    ScalarFunction,
    Table,
    TableFunction,
    TableFunctionInOut,
)

from .functions import PythonScalarFunction, PythonTableFunction, PythonTableFunctionInOut

Function = ScalarFunction | TableFunction | TableFunctionInOut


class CatalogSchema:
    """A named group of tables and functions; both can be added and dropped while serving."""

    def __init__(self, name: str, comment: str = "", tables: Iterable[Table] = ()) -> None:
        self._name = name
        self._comment = comment
        self._tables: dict[str, Table] = {t.name(): t for t in tables}
        # by kind (the FUNCTION_KINDS keys), then name
        self._functions: dict[str, dict[str, Function]] = {"scalar": {}, "table": {}, "in_out": {}}
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

    # --- functions (the contract's Schema.ScalarFunctions, TableFunctions, TableFunctionsInOut)

    def scalar_functions(self, ctx: Context) -> list[ScalarFunction]:
        return self._listed("scalar")  # type: ignore[return-value]

    def table_functions(self, ctx: Context) -> list[TableFunction]:
        return self._listed("table")  # type: ignore[return-value]

    def table_functions_in_out(self, ctx: Context) -> list[TableFunctionInOut]:
        return self._listed("in_out")  # type: ignore[return-value]

    def _listed(self, kind: str) -> list[Function]:
        with self._lock:
            return list(self._functions[kind].values())

    def add_function(self, function: Function, kind: str | None = None) -> None:
        """Serve function, made by pyairport.functions' decorators; another implementation
        of the contract's interfaces says its kind: "scalar", "table" or "in_out"."""
        kind = kind or _kind_of(function)
        if kind not in self._functions:
            raise ValueError(f"kind must be one of {', '.join(self._functions)}, not {kind!r}")
        with self._lock:
            for functions in self._functions.values():
                functions.pop(function.name(), None)  # one function per name, as Go looks up
            self._functions[kind][function.name()] = function
        self.on_change()

    def drop_function(self, name: str) -> None:
        with self._lock:
            for functions in self._functions.values():
                functions.pop(name, None)
        self.on_change()


def _kind_of(function: object) -> str:
    for cls, kind in (
        (PythonScalarFunction, "scalar"),
        (PythonTableFunction, "table"),
        (PythonTableFunctionInOut, "in_out"),
    ):
        if isinstance(function, cls):
            return kind
    raise TypeError(
        f"{function!r} is not a pyairport function: pass kind='scalar', 'table' or 'in_out'"
    )


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
