"""grpc.health.v1 on the server's port, through grpc's own health client: SERVING while the
server serves, per catalog by name, NOT_SERVING for a removed catalog and from the start of
shutdown; no token needed, and the token still needed for everything else."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from pyairport.client import AirportClient, RemoteError
from pyairport.demo import memory_demo_catalog
from pyairport.server import AirportServer, ServerConfig

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def _stub(server: AirportServer) -> tuple[grpc.Channel, health_pb2_grpc.HealthStub]:
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    return channel, health_pb2_grpc.HealthStub(channel)


def _check(stub: health_pb2_grpc.HealthStub, service: str) -> int:
    answer = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
    status: int = answer.status
    return status


@pytest.fixture
def team_server() -> Iterator[AirportServer]:
    """Two catalogs ("" and "hr") behind a shared token."""
    config = ServerConfig(port=0, auth_token="s3cret")
    with AirportServer(memory_demo_catalog(), None, config) as server:
        server.add_catalog(memory_demo_catalog("hr"))
        yield server


def test_serving_per_server_and_catalog_with_no_token(team_server: AirportServer) -> None:
    channel, stub = _stub(team_server)
    with channel:
        assert _check(stub, "") == SERVING
        assert _check(stub, "hr") == SERVING
        with pytest.raises(grpc.RpcError) as unknown:
            _check(stub, "payroll")
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
    # the Flight service still wants its token
    with AirportClient(team_server.location) as anonymous:
        with pytest.raises(RemoteError, match="UNAUTHENTICATED"):
            anonymous.list_schemas()


def test_a_removed_catalog_is_not_serving(team_server: AirportServer) -> None:
    channel, stub = _stub(team_server)
    with channel:
        team_server.remove_catalog("hr")
        assert _check(stub, "hr") == NOT_SERVING
        assert _check(stub, "") == SERVING


def test_a_watcher_sees_shutdown_as_not_serving() -> None:
    server = AirportServer(memory_demo_catalog(), None, ServerConfig(port=0)).start()
    channel, stub = _stub(server)
    seen: queue.Queue[int] = queue.Queue()

    def watch() -> None:
        try:
            for answer in stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=30):
                seen.put(answer.status)
        except grpc.RpcError:
            pass  # the server went away

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    assert seen.get(timeout=10) == SERVING
    stopping = threading.Thread(target=server.stop, args=(3.0,))
    stopping.start()
    assert seen.get(timeout=10) == NOT_SERVING
    stopping.join(timeout=30)
    channel.close()


def test_not_serving_until_started_and_when_the_engine_is_lost() -> None:
    server = AirportServer(memory_demo_catalog("sales"), None, ServerConfig(port=0))
    channel, stub = _stub(server)
    try:
        server.start()
        assert _check(stub, "sales") == SERVING
        server.engine_lost()
        assert _check(stub, "") == NOT_SERVING
        assert _check(stub, "sales") == NOT_SERVING
    finally:
        channel.close()
        server.stop(0)
