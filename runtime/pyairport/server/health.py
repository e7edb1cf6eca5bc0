"""gRPC's standard health service (grpc.health.v1.Health: Check, Watch, List) on the server's
own port, for load balancers, Kubernetes probes and `pyairport health`.

Service "" is the server; each named catalog is a service of its name (the unnamed catalog is
the server's own ""). A service is SERVING while it can answer calls and NOT_SERVING when its
engine is gone (Spark's JVM died) and while the server shuts down. The service is
unauthenticated, as health checks are: it tells the status of a name and nothing else, and
a name no catalog has is NOT_FOUND whatever the caller's rights.
"""

from __future__ import annotations

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

SERVER = ""
"""The service name of the server as a whole."""

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class Health:
    """The health service of one gRPC server."""

    def __init__(self, server: grpc.Server) -> None:
        self._servicer = health.HealthServicer(experimental_non_blocking=True)
        health_pb2_grpc.add_HealthServicer_to_server(self._servicer, server)
        self._services: set[str] = {SERVER}
        self._status = NOT_SERVING  # until the server starts
        self._servicer.set(SERVER, self._status)

    def add(self, name: str) -> None:
        """A catalog the server now serves (as healthy as the server)."""
        self._services.add(name)
        self._servicer.set(name, self._status)

    def remove(self, name: str) -> None:
        """A catalog the server no longer serves: NOT_SERVING to whoever watches it (the
        servicer keeps a name once set; a Check of it says the catalog is gone)."""
        if name != SERVER:
            self._services.discard(name)
            self._servicer.set(name, NOT_SERVING)

    def serving(self) -> None:
        self._set_all(SERVING)

    def not_serving(self) -> None:
        """Every service NOT_SERVING: the engine under the catalogs is gone."""
        self._set_all(NOT_SERVING)

    def _set_all(self, status: int) -> None:
        self._status = status
        for name in self._services:
            self._servicer.set(name, status)

    def shutting_down(self) -> None:
        """NOT_SERVING for good: later changes are ignored (gRPC's graceful shutdown)."""
        self._servicer.enter_graceful_shutdown()


def check(target: str, service: str = SERVER, timeout: float = 5.0, tls: bool = False) -> str:
    """One health Check against target (host:port): the status's name (SERVING,
    NOT_SERVING, SERVICE_UNKNOWN), or UNREACHABLE when no server answered."""
    channel = (
        grpc.secure_channel(target, grpc.ssl_channel_credentials())
        if tls
        else grpc.insecure_channel(target)
    )
    with channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            answer = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.NOT_FOUND:
                return "SERVICE_UNKNOWN"
            return "UNREACHABLE"
    name: str = health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
    return name
