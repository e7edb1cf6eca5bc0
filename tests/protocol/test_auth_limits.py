"""Bearer-token authentication on every RPC, TLS, and the configurable limits."""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import msgpack
import pyarrow as pa
import pytest
from pyarrow import flight

from airport_contracts import Context, flight_pb2
from pyairport.client import AirportClient, RemoteError
from pyairport.demo import memory_demo_catalog
from pyairport.server import AirportServer, ServerConfig
from pyairport.wire.ipc import schema_message

from .conftest import Running, assert_error_row, users

TOKEN = "s3cr3t-t0ken-value"


@pytest.fixture
def secured() -> Iterator[Running]:
    catalog = memory_demo_catalog()
    server = AirportServer(
        catalog, None, ServerConfig(port=0, auth_token=TOKEN, max_row_ids=2)
    ).start()
    running = Running(server, catalog, None)
    yield running
    running.client.close()
    server.stop(0)


def _calls(stub: object, headers: list[tuple[str, str]]) -> dict[str, Callable[[], object]]:
    data = users([1])
    descriptor = flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=["dml_schema", "users"]
    )
    exchange_headers = headers + [
        ("airport-operation", "insert"),
        ("airport-flight-path", "dml_schema/users"),
    ]
    return {
        "DoExchange": lambda: list(
            stub.DoExchange(iter([schema_message(data.schema)]), metadata=exchange_headers)
        ),  # type: ignore[attr-defined]
        "DoPut": lambda: list(stub.DoPut(iter([schema_message(data.schema)]), metadata=headers)),  # type: ignore[attr-defined]
        "DoAction": lambda: list(
            stub.DoAction(flight_pb2.Action(type="create_transaction"), metadata=headers)
        ),  # type: ignore[attr-defined]
        "DoGet": lambda: list(
            stub.DoGet(
                flight_pb2.Ticket(ticket=b'{"schema":"dml_schema","table":"users"}'),
                metadata=headers,
            )
        ),  # type: ignore[attr-defined]
        "GetFlightInfo": lambda: stub.GetFlightInfo(descriptor, metadata=headers),  # type: ignore[attr-defined]
        "ListFlights": lambda: list(stub.ListFlights(flight_pb2.Criteria(), metadata=headers)),  # type: ignore[attr-defined]
        "ListActions": lambda: list(stub.ListActions(flight_pb2.Empty(), metadata=headers)),  # type: ignore[attr-defined]
        "Handshake": lambda: list(stub.Handshake(iter([]), metadata=headers)),  # type: ignore[attr-defined]
    }


@pytest.mark.parametrize(
    ("headers", "row_id"),
    [
        ([], "auth_header_invalid"),
        ([("authorization", "Bearer wrong")], "unauthenticated"),
        ([("authorization", TOKEN)], "auth_header_invalid"),
        ([("authorization", "Bearer ")], "auth_token_empty"),
        ([("authorization", f"bearer {TOKEN}")], "auth_header_invalid"),
    ],
    ids=["none", "wrong", "no-scheme", "empty", "lower-case-scheme"],
)
def test_every_rpc_refuses_a_missing_or_wrong_token(
    secured: Running,
    headers: list[tuple[str, str]],
    row_id: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """airport-go's interceptor: its three UNAUTHENTICATED answers, on every RPC."""
    caplog.set_level(logging.DEBUG)
    for call in _calls(secured.client.stub, headers).values():
        with pytest.raises(grpc.RpcError) as err:
            call()
        code, message = err.value.code(), err.value.details()  # type: ignore[attr-defined]
        assert_error_row(row_id, {}, code, message)
    assert secured.rows("dml_schema") == []  # nothing touched
    assert TOKEN not in caplog.text


def test_the_right_token_is_served(secured: Running) -> None:
    with AirportClient(secured.server.location, token=TOKEN) as client:
        assert client.insert("dml_schema", "users", users([1, 2])).total_changed == 2
        for name, call in _calls(client.stub, [("authorization", f"Bearer {TOKEN}")]).items():
            if name not in ("DoPut",):  # DoPut without a descriptor is a different error
                call()
    assert len(secured.rows("dml_schema")) == 2  # the schema-only DoExchange adds no rows


def test_row_ids_limit(secured: Running) -> None:
    with AirportClient(secured.server.location, token=TOKEN) as client:
        client.insert("dml_schema", "users", users([1, 2, 3]))
        for call in (
            lambda: client.put_update("dml_schema", "users", [1, 2, 3], users([7, 8, 9])),
            lambda: client.action_delete("dml_schema", "users", [1, 2, 3]),
        ):
            with pytest.raises(RemoteError) as err:
                call()
            assert (err.value.code, err.value.message) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "row_ids has 3 entries, more than the limit of 2",
            )
        assert client.action_delete("dml_schema", "users", [1, 2]).affected_rows == 2


def test_message_size_limit_is_resource_exhausted_and_changes_nothing() -> None:
    catalog = memory_demo_catalog()
    with (
        AirportServer(catalog, None, ServerConfig(port=0, max_message_bytes=64 * 1024)) as server,
        AirportClient(server.location) as client,
    ):
        big = users(list(range(20_000)))
        with pytest.raises(RemoteError) as err:
            client.insert("dml_schema", "users", big)
        assert (
            err.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
            and "larger than max" in err.value.message
        )
        assert (
            catalog.schema(Context.background(), "dml_schema")
            .table(Context.background(), "users")
            .num_rows
            == 0
        )


def test_a_row_larger_than_the_message_limit_is_still_served_whole() -> None:
    """The limit bounds what the server takes: a scan splits its batches to it, but a row
    larger than it (a value the table holds) can only go whole, and a Flight client reads
    it (it failed RESOURCE_EXHAUSTED `Sent message larger than max` before)."""
    catalog = memory_demo_catalog()
    table = catalog.schema(Context.background(), "dml_schema").table(Context.background(), "users")
    big = "x" * (256 * 1024)
    rows = users([1, 2, 3], names=["a", big, "c"])
    table.insert(
        Context.background(),
        pa.RecordBatchReader.from_batches(rows.schema, rows.to_batches()),
        None,
    )
    with AirportServer(catalog, None, ServerConfig(port=0, max_message_bytes=64 * 1024)) as server:
        client = flight.connect(server.location)
        info = client.get_flight_info(flight.FlightDescriptor.for_path("dml_schema", "users"))
        read = client.do_get(info.endpoints[0].ticket).read_all()
        client.close()
    assert sorted(read.column("name").to_pylist(), key=len) == ["a", "c", big]


def _self_signed(tmp_path: Path) -> tuple[bytes, bytes]:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert.read_bytes(), key.read_bytes()


def test_tls(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    config = ServerConfig(port=0, tls_cert=cert, tls_key=key, auth_token=TOKEN)
    with AirportServer(memory_demo_catalog(), None, config) as server:
        assert server.location.startswith("grpc+tls://")
        with AirportClient(server.location, token=TOKEN, tls_root_certificates=cert) as client:
            assert client.insert("batch_schema", "users", users([1])).total_changed == 1
            (body,) = client.action("catalog_version", msgpack.packb({"catalog_name": ""}))
            assert msgpack.unpackb(body)["catalog_version"] >= 1
        plain = server.location.replace("grpc+tls://", "grpc://")
        with AirportClient(plain, token=TOKEN) as client, pytest.raises(RemoteError) as err:
            client.insert("batch_schema", "users", users([2]))
        assert err.value.code == grpc.StatusCode.UNAVAILABLE


def test_cli_token_file_and_tls_flags_fail_in_one_line(tmp_path: Path) -> None:
    import sys

    empty = tmp_path / "token"
    empty.write_text("\n")
    done = subprocess.run(
        [sys.executable, "-m", "pyairport", "serve", "--auth-token-file", str(empty)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (2, f"pyairport: error: {empty} holds no token\n")
    done = subprocess.run(
        [sys.executable, "-m", "pyairport", "serve", "--tls-cert", "x.pem"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (
        2,
        "pyairport: error: --tls-cert and --tls-key go together\n",
    )


def test_server_with_token_file(tmp_path: Path) -> None:
    import re
    import signal
    import sys

    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pyairport",
            "serve",
            "--port",
            "0",
            "--auth-token-file",
            str(token_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        location = re.search(r"(grpc://\S+)", process.stdout.readline()).group(1)  # type: ignore[union-attr]
        with AirportClient(location, token=TOKEN) as client:
            assert client.insert("dml_schema", "users", users([1])).total_changed == 1
        with AirportClient(location) as client, pytest.raises(RemoteError) as err:
            client.insert("dml_schema", "users", users([1]))
        assert err.value.code == grpc.StatusCode.UNAUTHENTICATED
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert TOKEN not in stderr
