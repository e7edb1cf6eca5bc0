"""The rowid conventions and schema projection behind the contract's helpers (helpers.py
binds them to the contract's names and values), and the method-set check behind capability
detection (protocols.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pyarrow as pa


def find_rowid(schema: pa.Schema | None, rowid_name: str, metadata_key: bytes) -> int:
    """The index of the first field named rowid_name or whose metadata_key is non-empty."""
    if schema is None:
        return -1
    for index, schema_field in enumerate(schema):
        if schema_field.name == rowid_name:
            return index
        metadata = schema_field.metadata
        if metadata and metadata.get(metadata_key):
            return index
    return -1


def project(schema: pa.Schema, columns: list[str] | None) -> pa.Schema:
    """schema narrowed to columns, in their order; unknown names are skipped, and no columns
    (or none known) leave the schema as it is."""
    if not columns:
        return schema
    index = {schema.field(i).name: i for i in range(len(schema))}
    fields = [schema.field(index[name]) for name in columns if name in index]
    if not fields:
        return schema
    return pa.schema(fields, metadata=schema.metadata)


def columns_without_rowid(
    schema: pa.Schema, rowid_name: str, metadata_key: bytes, excluded_value: bytes
) -> list[str]:
    """Column names, leaving out one named rowid_name or whose metadata_key is excluded_value."""
    names = []
    for schema_field in schema:
        metadata = schema_field.metadata or {}
        if schema_field.name == rowid_name or metadata.get(metadata_key) == excluded_value:
            continue
        names.append(schema_field.name)
    return names


def has_methods(obj: object, names: Iterable[str]) -> bool:
    """True when obj has a callable of every name, looked up as attribute access does (so
    `__getattr__` delegation counts), on every Python version."""
    return all(callable(getattr(obj, name, None)) for name in names)


class RowidConvention:
    """The contract's rowid column conventions (its name, metadata key, accepted types), and
    what follows from them; helpers.py builds the contract's one instance."""

    def __init__(
        self,
        name: str,
        metadata_key: str,
        accepted_types: tuple[pa.DataType, ...],
        returning_excludes_metadata_value: str,
    ) -> None:
        self.name = name
        self.metadata_key = metadata_key
        self.accepted_types = accepted_types
        self._key = metadata_key.encode()
        self._excluded = returning_excludes_metadata_value.encode()

    def find(self, schema: pa.Schema | None) -> int:
        return find_rowid(schema, self.name, self._key)

    def field(self, name: str | None = None, type: pa.DataType | None = None) -> pa.Field:
        """A rowid column definition: int64 unless given, marked with metadata "true"."""
        return pa.field(name or self.name, type or pa.int64(), metadata={self.metadata_key: "true"})

    def returning_columns(self, schema: pa.Schema) -> list[str]:
        """The table's column names without the rowid pseudo-column: what the server puts in
        DMLOptions.returning_columns (Go: getTableColumnNames). A column is left out when it
        has the rowid's name or its rowid metadata is exactly the excluded value."""
        return columns_without_rowid(schema, self.name, self._key, self._excluded)

    def is_rowid_type(self, data_type: pa.DataType) -> bool:
        return any(data_type.equals(t) for t in self.accepted_types)


class MethodSets:
    """Capability detection by method set, as a Go type assertion checks one: an object
    implements an interface when it has a callable of every method name."""

    def __init__(self, methods: Mapping[str, tuple[str, ...]]) -> None:
        self.methods = methods

    def implements(self, obj: object, interface: str) -> bool:
        """True when obj has every method of the interface, looked up as attribute access does
        (so `__getattr__` delegation counts), on every Python version."""
        return has_methods(obj, self.methods[interface])
