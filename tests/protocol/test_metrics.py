"""`serve --metrics-port`: Prometheus' text at /metrics, moved by exactly what a session did —
calls by RPC, action or operation and status; rows read and written per table; statements
by outcome; function calls; transactions under way — and never naming an identity or a
token, nor a name a client made up."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.flight as flight
import pytest

from pyairport.access.identities import hash_token
from pyairport.client import AirportClient, RemoteError
from pyairport.demo import memory_demo_catalog
from pyairport.server import AirportServer, ServerConfig

from ..metrics import Scrape, metrics_server

TOKEN = "alice-token-3f9a"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[AirportServer]:
    with metrics_server(tmp_path, "alice", TOKEN, "sales") as running:
        yield running


def test_a_session_moves_the_counters_by_what_it_did(server: AirportServer) -> None:
    before = Scrape(server)
    users = {"catalog": "sales", "schema": "dml_schema", "table": "users"}
    rows = pa.table(
        {
            "id": pa.array(range(1, 1001), pa.int64()),
            "name": [f"n{i}" for i in range(1000)],
            "email": [f"e{i}@x" for i in range(1000)],
        }
    )
    with AirportClient(server.location, token=TOKEN, catalog="sales") as client:
        assert client.insert("dml_schema", "users", rows).total_changed == 1000
        scanned = client.scan("dml_schema", "users", ["id", "rowid"]).read_all()
        rowids = scanned.column("rowid").to_pylist()[:10]
        assert client.delete("dml_schema", "users", rowids).total_changed == 10
        with pytest.raises(RemoteError):  # a NULL rowid: refused, nothing written
            client.delete("dml_schema", "users", [None])
        tx = client.begin_transaction("sales")
        assert tx is not None
        with pytest.raises(RemoteError):
            client.action("no_such_action_7c1e", b"")
        assert Scrape(server).get("pyairport_active_transactions") == 1.0
        client.insert("dml_schema", "users", rows.slice(0, 5), transaction_id=tx)
    fc = flight.FlightClient(server.location)
    options = flight.FlightCallOptions(
        headers=[
            (b"authorization", f"Bearer {TOKEN}".encode()),
            (b"airport-operation", b"scalar_function"),
            (b"return-chunks", b"1"),
            (b"airport-flight-path", b"demo_schema/email_domain"),
            (b"airport-catalog", b"sales"),
        ]
    )
    writer, reader = fc.do_exchange(
        flight.FlightDescriptor.for_path("demo_schema", "email_domain"), options
    )
    schema = pa.schema([("param1", pa.string())])
    writer.begin(schema)
    writer.write_batch(pa.record_batch([pa.array(["a@x.org"])], schema=schema))
    reader.read_chunk()
    writer.done_writing()
    with pytest.raises(StopIteration):  # the call's end: the server has counted it
        reader.read_chunk()
    fc.close()

    after = Scrape(server)

    def moved(name: str, **labels: str) -> float:
        return after.get(name, **labels) - before.get(name, **labels)

    assert moved("pyairport_rows_written_total", **users, operation="insert") == 1005
    assert moved("pyairport_rows_written_total", **users, operation="delete") == 10
    # the Arrow bodies the client sent: the batches' buffers, each padded to 8 bytes
    sent = rows.nbytes + rows.slice(0, 5).nbytes
    assert sent <= moved("pyairport_bytes_written_total", **users, operation="insert") < 2 * sent
    assert 80 <= moved("pyairport_bytes_written_total", **users, operation="delete") < 200
    assert moved("pyairport_rows_read_total", **users) == 1000
    assert moved("pyairport_bytes_read_total", **users) > 8 * 1000
    # the messages as sent (not compressed to this host): the Arrow bytes and their framing
    assert moved("pyairport_bytes_sent_total", **users) > moved(
        "pyairport_bytes_read_total", **users
    )
    assert (
        moved(
            "pyairport_statements_total", catalog="sales", operation="insert", outcome="committed"
        )
        == 2
    )
    assert (
        moved(
            "pyairport_statements_total", catalog="sales", operation="delete", outcome="committed"
        )
        == 1
    )
    assert (
        moved("pyairport_statements_total", catalog="sales", operation="delete", outcome="failed")
        == 1
    )
    assert moved("pyairport_calls_total", rpc="DoExchange", method="insert", code="OK") == 2
    assert (
        moved("pyairport_calls_total", rpc="DoExchange", method="delete", code="INVALID_ARGUMENT")
        == 1
    )
    assert moved("pyairport_calls_total", rpc="DoAction", method="other", code="UNIMPLEMENTED") == 1
    assert (
        moved("pyairport_calls_total", rpc="DoExchange", method="scalar_function", code="OK") == 1
    )
    assert (
        moved(
            "pyairport_function_calls_total",
            catalog="sales",
            schema="demo_schema",
            function="email_domain",
        )
        == 1
    )
    assert moved("pyairport_call_seconds_count", rpc="DoExchange") == 5
    # nobody's identity or token, nor the made-up action's name
    for secret in ("alice", TOKEN, hash_token(TOKEN), "no_such_action_7c1e"):
        assert secret not in after.text


def test_an_unauthenticated_call_is_counted_without_its_token(server: AirportServer) -> None:
    with AirportClient(server.location, token="wrong-token-9d2b", catalog="sales") as client:
        with pytest.raises(RemoteError, match="UNAUTHENTICATED"):
            client.list_schemas("sales")
    after = Scrape(server)
    assert (
        after.get(
            "pyairport_calls_total",
            rpc="DoAction",
            method="list_schemas",
            code="UNAUTHENTICATED",
        )
        == 1
    )
    assert "wrong-token-9d2b" not in after.text


def test_without_a_metrics_port_nothing_is_served() -> None:
    with AirportServer(memory_demo_catalog(), None, ServerConfig(port=0)) as running:
        assert running.metrics is None and running.metrics_port is None
