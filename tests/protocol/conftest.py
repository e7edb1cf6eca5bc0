"""Servers on loopback for the protocol tests: the demo catalog of protocol.md §4.0."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pyarrow as pa
import pytest

from airport_contracts import Context, DMLOptions, DMLResult, flight_pb2
from airport_contracts.contract import ERROR_TABLE
from pyairport.client import AirportClient, RemoteError, remote_error
from pyairport.demo import memory_demo_catalog
from pyairport.server import AirportServer, ServerConfig
from pyairport.transactions import MemoryTransactionManager

DML_METHODS = ("insert", "update_batch", "update_by_row_ids", "delete_batch", "delete_by_row_ids")


class Running:
    """A live server, its catalog and a client."""

    def __init__(
        self, server: AirportServer, catalog: Any, transactions: MemoryTransactionManager | None
    ) -> None:
        self.server = server
        self.catalog = catalog
        self.transactions = transactions
        self.client = AirportClient(server.location)
        self._emptied_at: dict[str, int | None] = {}  # a table's version when it was empty

    def table(self, schema: str, name: str = "users") -> Any:
        return self.catalog.schema(Context.background(), schema).table(Context.background(), name)

    def rows(self, schema: str, name: str = "users") -> list[dict[str, Any]]:
        return self.table(schema, name).to_table().to_pylist()

    def rowids_where(self, schema: str, **equals: Any) -> list[int]:
        """The rowids DuckDB's scan would find for WHERE col = value AND ... (stands in for the
        DoGet scan that precedes a DuckDB UPDATE/DELETE)."""
        return [r["rowid"] for r in self.rows(schema) if all(r[k] == v for k, v in equals.items())]

    def reset(self) -> None:
        """Empty the DML tables and undo record_options (for a server shared by many tests)."""
        for schema in self.catalog.schemas(Context.background()):
            for table in schema.tables(Context.background()):
                for method in DML_METHODS:
                    vars(table).pop(method, None)
                if hasattr(table, "insert") and self._written_since_emptied(table):
                    table.spark.sql(f"DELETE FROM {table.fqn}")
                    self._emptied_at[table.fqn] = _log_version(table)
                table.rowid_counter.restart()

    def _written_since_emptied(self, table: Any) -> bool:
        """Whether a Spark table may hold rows: a commit since the last reset emptied it (read
        from its log, where Spark would take most of a second to count), or rows Spark counts
        (before the first reset, or where the log is not read)."""
        version = _log_version(table)
        if version is not None and table.fqn in self._emptied_at:
            return version != self._emptied_at[table.fqn]
        if table.num_rows:
            return True
        self._emptied_at[table.fqn] = version
        return False

    def record_options(self, schema: str) -> list[tuple[str, DMLOptions | None]]:
        """Wrap the table's DML methods to record the DMLOptions each call received."""
        table = self.table(schema)
        seen: list[tuple[str, DMLOptions | None]] = []
        for method in (
            "insert",
            "update_batch",
            "update_by_row_ids",
            "delete_batch",
            "delete_by_row_ids",
        ):
            original = getattr(table, method, None)
            if original is None:
                continue

            def wrapper(*args: Any, _name: str = method, _original: Any = original) -> Any:
                seen.append((_name, args[-1]))
                return _original(*args)

            setattr(table, method, wrapper)
        return seen


@contextlib.contextmanager
def serving(
    catalog: Any,
    transactions: MemoryTransactionManager | None = None,
    config: ServerConfig | None = None,
) -> Iterator[Running]:
    """A server on loopback for catalog (config: port 0), with a client, stopped afterwards."""
    server = AirportServer(catalog, transactions, config or ServerConfig(port=0)).start()
    running = Running(server, catalog, transactions)
    try:
        yield running
    finally:
        running.client.close()
        server.stop(0)


def _log_version(table: Any) -> int | None:
    """A Spark table's latest version from its Delta log, None where it has no local folder."""
    from pyairport.backends.spark.scans import log_version

    location = table.layout.location
    return None if location is None else log_version(location / "_delta_log")


def _running(transactions: MemoryTransactionManager | None) -> Iterator[Running]:
    with serving(memory_demo_catalog(), transactions) as running:
        yield running


@pytest.fixture
def srv() -> Iterator[Running]:
    """The Go fixture's server: no TransactionManager."""
    yield from _running(None)


@pytest.fixture(scope="session")
def spark_srv(spark_backend: Any) -> Iterator[Running]:
    """A server over the demo catalog as Delta tables (no TransactionManager, like Go's)."""
    from pyairport.demo import spark_demo_catalog

    catalog = spark_demo_catalog(spark_backend)
    server = AirportServer(catalog, None, ServerConfig(port=0)).start()
    running = Running(server, catalog, None)
    yield running
    running.client.close()
    server.stop(0)


@pytest.fixture(scope="session")
def spark_connect_srv(spark_connect_backend: Any) -> Iterator[Running]:
    """The same demo catalog as Delta tables, through Spark Connect."""
    from pyairport.demo import spark_demo_catalog

    catalog = spark_demo_catalog(spark_connect_backend)
    server = AirportServer(catalog, None, ServerConfig(port=0)).start()
    running = Running(server, catalog, None)
    yield running
    running.client.close()
    server.stop(0)


@pytest.fixture(
    params=[
        "memory",
        pytest.param("spark", marks=pytest.mark.spark),
        pytest.param("spark-connect", marks=pytest.mark.spark),
    ]
)
def any_srv(request: pytest.FixtureRequest) -> Iterator[Running]:
    """The same tests against every backend: memory, embedded Spark, Spark Connect."""
    if request.param == "memory":
        yield from _running(None)
        return
    running: Running = request.getfixturevalue(
        "spark_srv" if request.param == "spark" else "spark_connect_srv"
    )
    running.reset()
    yield running


@pytest.fixture
def tx_srv() -> Iterator[Running]:
    """A server with the in-memory TransactionManager."""
    yield from _running(MemoryTransactionManager())


class FailingInsert:
    """An insertable table that fails in the middle of its work (operation_failed)."""

    def __init__(self) -> None:
        from pyairport.backends.memory import memory_table
        from pyairport.demo import USERS_COLUMNS

        self.inner = memory_table("users", USERS_COLUMNS)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def insert(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        self.inner.insert(ctx, rows, opts)
        raise OSError("disk full")


def users(
    ids: list[int | None], names: list[str] | None = None, emails: list[str] | None = None
) -> pa.Table:
    names = names or [f"user_{i}" for i in ids]
    emails = emails or [f"user_{i}@example.com" for i in ids]
    return pa.table({"id": pa.array(ids, pa.int64()), "name": names, "email": emails})


def assert_error_row(
    row_id: str, params: dict[str, Any], code: grpc.StatusCode, message: str
) -> None:
    """code and message are the contract's error row row_id, as a client received them: the
    exact message, or — where a parameter is the server's own text (None in params) — the
    row's fixed prefix followed by something; never a traceback or a source path."""
    row = next(r for r in ERROR_TABLE if r.id == row_id)
    assert code == grpc.StatusCode[row.code], message
    if None in params.values():
        prefix = row.message.split("{")[0]
        assert message.startswith(prefix) and len(message) > len(prefix)
    else:
        assert message == row.message.format(**params)
    assert "Traceback" not in message and ".py" not in message


def refusal(call: Callable[[], object]) -> RemoteError:
    """The error a call ends with, as a RemoteError (a raw stub call's grpc.RpcError too)."""
    try:
        call()
    except RemoteError as error:
        return error
    except grpc.RpcError as error:
        return remote_error(error)
    raise AssertionError("the call was not refused")


def compressed(table: pa.Table) -> bytes:
    """table as an Arrow IPC stream with ZSTD-compressed buffers, as a pyarrow client may
    write it (DuckDB never compresses what it sends)."""
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def compressed_messages(table: pa.Table) -> list[flight_pb2.FlightData]:
    """compressed(table) as Flight messages: its schema, then each batch."""
    stream = pa.ipc.MessageReader.open_stream(pa.py_buffer(compressed(table)))
    return [
        flight_pb2.FlightData(
            data_header=message.metadata.to_pybytes(),
            data_body=message.body.to_pybytes() if message.body else b"",
        )
        for message in stream
    ]


HUGE_BYTES = 65 * 1024 * 1024


@functools.cache
def huge_name() -> pa.Table:
    """One name of HUGE_BYTES: a few kilobytes ZSTD-compressed, more than a message carries
    (64 MiB by default). In memory: its two offsets (8 bytes) and its characters."""
    return pa.table({"name": pa.array(["x" * HUGE_BYTES])})
