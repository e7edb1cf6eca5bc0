"""The read side as a client sees it (protocol §2.6-2.7): the catalog that `list_schemas`
answers, decoded the way DuckDB's Airport extension decodes it, and the `endpoints` request
and answer that turn a scan into a DoGet ticket. Works against pyairport and airport-go."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgpack
import pyarrow as pa

from airport_contracts import find_rowid_column, flight_pb2
from airport_support.compressed import unpack_compressed, unpack_endpoints


@dataclass(frozen=True)
class TableInfo:
    """A table as the catalog describes it."""

    schema_name: str
    name: str
    comment: str
    arrow_schema: pa.Schema
    """Every column, the rowid column included (DuckDB hides it from SELECT *)."""

    @property
    def rowid_column(self) -> str | None:
        """The column UPDATE and DELETE address rows by, or None: DuckDB can change the
        table's rows only when it has one. (The catalog does not say whether the table takes
        INSERT, UPDATE or DELETE; a server that does not refuses the statement.)"""
        index = find_rowid_column(self.arrow_schema)
        return None if index < 0 else str(self.arrow_schema.field(index).name)


@dataclass(frozen=True)
class SchemaInfo:
    name: str
    comment: str
    is_default: bool
    tables: tuple[TableInfo, ...]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")


def table_info(raw: bytes) -> TableInfo | None:
    """A serialized FlightInfo as a table (None for a function's)."""
    info = flight_pb2.FlightInfo()
    info.ParseFromString(raw)
    metadata = msgpack.unpackb(info.app_metadata, raw=False) if info.app_metadata else {}
    if metadata.get("type", "table") != "table":
        return None
    schema_name, table_name = (_text(p) for p in info.flight_descriptor.path)
    return TableInfo(
        schema_name=schema_name,
        name=table_name,
        comment=_text(metadata.get("comment")),
        arrow_schema=pa.ipc.read_schema(pa.py_buffer(info.schema)),
    )


def decode_catalog(body: bytes) -> list[SchemaInfo]:
    """The schemas of a `list_schemas` answer, each with its tables' FlightInfo decoded."""
    root = unpack_compressed(body)
    schemas = []
    for entry in root[b"schemas"]:
        tables = []
        serialized = entry[b"contents"][b"serialized"]
        for raw in unpack_compressed(serialized) if serialized else ():
            table = table_info(raw)
            if table is not None:
                tables.append(table)
        schemas.append(
            SchemaInfo(
                name=_text(entry[b"name"]),
                comment=_text(entry.get(b"description")),
                is_default=bool(entry.get(b"is_default")),
                tables=tuple(sorted(tables, key=lambda t: t.name)),
            )
        )
    return schemas


def endpoints_request(
    schema_name: str, table_name: str, column_ids: list[int], json_filters: str
) -> bytes:
    """The `endpoints` body DuckDB sends for a scan."""
    descriptor = flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=[schema_name, table_name]
    ).SerializeToString()
    request = {
        "descriptor": descriptor,
        "parameters": {"column_ids": column_ids, "json_filters": json_filters},
    }
    # Go reads the descriptor as a msgpack str holding the protobuf bytes.
    packed: bytes = msgpack.packb(request, use_bin_type=False)
    return packed


def decode_endpoints(body: bytes) -> list[flight_pb2.FlightEndpoint]:
    endpoints = []
    for raw in unpack_endpoints(body):
        endpoint = flight_pb2.FlightEndpoint()
        endpoint.ParseFromString(raw)
        endpoints.append(endpoint)
    return endpoints
