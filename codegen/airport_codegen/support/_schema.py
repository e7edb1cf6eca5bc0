"""The schema helpers' work, given the contract's rowid conventions (helpers.py renders the
contract's helpers, named and documented as the contract says, on top of these), and the
method-set check behind capability detection (protocols.py)."""

from __future__ import annotations

from collections.abc import Iterable

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
