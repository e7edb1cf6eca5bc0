"""AirportClient reads as well as writes: the catalog (list_schemas, decoded as DuckDB does)
and scans (endpoints, then DoGet, streamed), with filters pushed down and applied again
exactly; over tokens, TLS and transactions like the other calls; on every backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pyarrow as pa
import pytest

from airport_contracts import Context, ScanOptions, transaction_id_from_context
from pyairport.client import AirportClient, RemoteError
from pyairport.demo import memory_demo_catalog
from pyairport.filters import And, Between, Compare, In, IsNull, Not, Or
from pyairport.server import AirportServer, ServerConfig
from pyairport.transactions import MemoryTransactionManager

from .conftest import Running, serving, users
from .test_auth_limits import TOKEN, _self_signed

ROWS = users([1, 2, 3, 4, 5], ["Ann", "Bo", "Cy", "Di", "Ed"], ["a@x", "b@x", None, "d@x", None])  # type: ignore[list-item]


def test_the_catalog_lists_schemas_and_tables(any_srv: Running) -> None:
    schemas = {s.name: s for s in any_srv.client.list_schemas()}
    assert set(schemas) >= {"dml_schema", "batch_schema", "demo_schema"}
    (users_table,) = any_srv.client.list_tables("dml_schema")
    assert (users_table.schema_name, users_table.name) == ("dml_schema", "users")
    assert users_table.comment == "users served through the legacy UPDATE/DELETE interfaces"
    assert users_table.arrow_schema.names == ["id", "name", "email", "rowid"]  # rowid_served_last
    assert users_table.arrow_schema.field("rowid").metadata == {b"is_rowid": b"true"}
    assert users_table.rowid_column == "rowid"
    assert [t.name for t in schemas["demo_schema"].tables] == ["readonly"]
    with pytest.raises(LookupError, match="no schema 'nope'"):
        any_srv.client.list_tables("nope")


def test_written_rows_read_back(any_srv: Running) -> None:
    """The README's example: write, then read back with a projection and a filter."""
    client = any_srv.client
    client.insert("batch_schema", "users", ROWS)
    everything = client.scan("batch_schema", "users")
    assert isinstance(everything, pa.RecordBatchReader)
    table = everything.read_all()
    assert table.schema.names == ["id", "name", "email", "rowid"]
    assert sorted(table.column("name").to_pylist()) == ["Ann", "Bo", "Cy", "Di", "Ed"]

    # UPDATE by the rowids a filtered scan found, then read the change back
    found = client.scan("batch_schema", "users", ["rowid"], Compare("name", "==", "Bo"))
    rowids = found.read_all().column("rowid")
    client.update("batch_schema", "users", pa.table({"name": ["Bobby"], "rowid": rowids}))
    where = And((Compare("id", ">", 1), IsNull("email", negated=True)))
    picked = client.scan("batch_schema", "users", ["name", "id"], where).read_all()
    assert picked.schema.names == ["name", "id"]
    assert sorted(picked.to_pylist(), key=lambda r: r["id"]) == [
        {"name": "Bobby", "id": 2},
        {"name": "Di", "id": 4},
    ]


@pytest.mark.parametrize(
    ("where", "ids"),
    [
        (Compare("id", "<=", 2), [1, 2]),
        (In("name", ("Cy", "Ed", "Zed"), negated=False), [3, 5]),
        (Or((Between("id", 2, 3, True, True), IsNull("email", negated=False))), [2, 3, 5]),
        (Not(Compare("name", "==", "Ann")), [2, 3, 4, 5]),
    ],
)
def test_filters_return_exactly_the_rows_they_keep(
    srv: Running, where: Any, ids: list[int]
) -> None:
    srv.client.insert("dml_schema", "users", ROWS)
    scanned = srv.client.scan("dml_schema", "users", ["id"], where).read_all()
    assert sorted(scanned.column("id").to_pylist()) == ids


def test_what_a_scan_asks_the_server_for(srv: Running) -> None:
    """The table's scan gets DuckDB's json_filters as the caller gave them, and the columns
    the filter reads besides the ones asked for."""
    catalog_table = srv.table("dml_schema")
    catalog_table.scan_options: list[ScanOptions] = []
    original = catalog_table.scan

    def scan(ctx: Context, opts: ScanOptions | None = None) -> pa.RecordBatchReader:
        catalog_table.scan_options.append(opts)
        return original(ctx, opts)

    catalog_table.scan = scan
    srv.client.insert("dml_schema", "users", ROWS)
    json_filters = '{"filters": [], "column_binding_names_by_index": []}'
    assert srv.client.scan("dml_schema", "users", ["id"], json_filters).read_all().num_rows == 5
    assert catalog_table.scan_options[-1].filter == json_filters.encode()
    # a scan asks for the columns its filter reads too (Spark leaves the others empty)
    where = Compare("name", "==", "Cy")
    assert srv.client.scan("dml_schema", "users", ["id"], where).read_all().to_pylist() == [
        {"id": 3}
    ]
    assert catalog_table.scan_options[-1].columns == ["id", "name"]


def test_scanning_an_unknown_table_is_not_found(srv: Running) -> None:
    with pytest.raises(RemoteError) as err:
        srv.client.scan("dml_schema", "nope")
    assert (err.value.code, err.value.message) == (
        grpc.StatusCode.NOT_FOUND,
        "table not found: dml_schema.nope",
    )
    with pytest.raises(ValueError, match="the table has no column 'nickname'"):
        srv.client.scan("dml_schema", "users", ["nickname"])


def test_a_scan_streams_batch_by_batch(srv: Running) -> None:
    """A large table arrives as several batches, read as the reader is iterated."""
    many = users(list(range(1, 200_001)))
    srv.client.insert("dml_schema", "users", many)
    reader = srv.client.scan("dml_schema", "users", ["id"])
    first = reader.read_next_batch()
    assert 0 < first.num_rows < 200_000
    assert first.num_rows + reader.read_all().num_rows == 200_000


def test_a_scan_carries_the_transaction_to_the_table() -> None:
    """The transaction id reaches the table's scan, as Go's context does for every RPC."""
    catalog = memory_demo_catalog()
    table = catalog.schema(Context.background(), "dml_schema").table(Context.background(), "users")
    seen: list[tuple[str, bool]] = []
    original = table.scan

    def scan(ctx: Context, opts: ScanOptions | None = None) -> pa.RecordBatchReader:
        seen.append(transaction_id_from_context(ctx))
        return original(ctx, opts)

    table.scan = scan  # type: ignore[method-assign]
    with serving(catalog, MemoryTransactionManager()) as running:
        tx = running.client.begin_transaction()
        assert tx is not None
        running.client.insert("dml_schema", "users", ROWS, transaction_id=tx)
        scanned = running.client.scan("dml_schema", "users", transaction_id=tx).read_all()
        assert scanned.num_rows == 5
        running.client.scan("dml_schema", "users").read_all()
    assert seen == [(tx, True), ("", False)]


def test_reads_over_tls_with_a_token(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    config = ServerConfig(port=0, tls_cert=cert, tls_key=key, auth_token=TOKEN)
    with AirportServer(memory_demo_catalog(), None, config) as server:
        with AirportClient(server.location, token=TOKEN, tls_root_certificates=cert) as client:
            client.insert("dml_schema", "users", ROWS)
            assert [s.name for s in client.list_schemas()][:1] == ["batch_schema"]
            assert client.scan("dml_schema", "users", ["id"]).read_all().num_rows == 5
        with AirportClient(server.location, tls_root_certificates=cert) as anonymous:
            with pytest.raises(RemoteError) as err:
                anonymous.scan("dml_schema", "users")
            assert err.value.code == grpc.StatusCode.UNAUTHENTICATED


def test_the_readme_python_example_runs_twice(srv: Running) -> None:
    """The README's "From Python" block, as a reader pastes it, run twice on one server: the
    second run finds more rows and still works."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    block = readme.split("### From Python\n\n```python\n", 1)[1].split("```", 1)[0]
    code = block.replace('"grpc://127.0.0.1:8815"', repr(srv.server.location))
    assert code != block, "the example no longer connects to the address the test replaces"
    for _ in range(2):
        exec(compile(code, "README.md", "exec"), {"print": lambda *args: None})
