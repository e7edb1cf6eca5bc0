"""Start and stop a pyairport Flight server around a catalog."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc

from airport_contracts import (
    Authenticator,
    Catalog,
    CatalogTransactionManager,
    Context,
    TransactionManager,
    TransactionState,
)

from ..access.gate import Access
from ..access.identities import StaticToken
from ..access.policy import Policy
from ..dispatch import Dispatcher
from ..dispatch.dispatcher import catalog_name
from ..wire.compression import SETTINGS as COMPRESSION_SETTINGS
from ..wire.ipc_body import MAX_MESSAGE_BYTES
from . import call_log
from .allocator import keep_message_memory
from .data_plane import DataPlane
from .data_workers import DataWorkers
from .health import Health
from .metrics import CallMetrics, ServerMetrics, active_transactions
from .routing import Catalogs
from .transport import FlightService, add_to_server
from .worker_link import join_service

log = logging.getLogger("pyairport.server")


class ListenError(RuntimeError):
    """The server could not listen on the address it was given."""


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8815  # 0 picks a free port
    max_workers: int = 32  # each open DoExchange/DoPut holds one worker for its duration
    max_message_bytes: int = MAX_MESSAGE_BYTES  # a compressed batch decompresses to no more
    # The headers of one call: an identity provider's JWT runs to 8-16 KiB (many claims), which
    # gRPC's defaults (8 KiB soft, 16 KiB hard) refuse, at random between the two, before the
    # authenticator sees it. 64 KiB leaves a 32 KiB token room for the other headers.
    max_header_bytes: int = 64 * 1024
    max_row_ids: int | None = None  # longest row_ids a spec-002 UPDATE/DELETE may send
    auth_token: str | None = None  # one shared token (the identity "token"); or authenticator=
    tls_cert: bytes | None = None  # PEM certificate chain and key: serve grpc+tls://
    tls_key: bytes | None = None
    # Let freed multi-MB message buffers serve the next message (glibc; see allocator.py).
    keep_message_memory: bool = True
    metrics_port: int | None = None  # serve Prometheus' /metrics on host:metrics_port (0: any)
    # DoGet streams' codec: auto (ZSTD to another host, none on this one), none, lz4, zstd
    compression: str = "auto"
    # Scans of clients on this host over a Unix socket at this path ("auto": a private one),
    # served by Arrow C++ (data_plane.py); None: every scan at the catalog's address.
    data_socket: str | None = None
    # Tables' string columns declared and streamed as Arrow dictionaries, to every client
    # (wire/dictionaries.py): with compression, far fewer bytes for low-cardinality strings.
    string_dictionaries: bool = False


class AirportServer:
    """A running Flight server: `with AirportServer(catalog) as server: server.location`.

    airport-go's Server and MultiCatalogServer in one: catalog (or none) now, more with
    add_catalog; transactions for that catalog, or catalog_transactions, one
    CatalogTransactionManager for every catalog. authenticator (or config.auth_token, one
    shared token): who calls; policy: what each identity may do where (pyairport.access.policy)."""

    def __init__(
        self,
        catalog: Catalog | None,
        transactions: TransactionManager | None = None,
        config: ServerConfig = ServerConfig(),
        extra_actions: dict[str, Callable[..., list[bytes]]] | None = None,
        interceptors: tuple[grpc.ServerInterceptor[Any, Any], ...] = (),
        *,
        authenticator: Authenticator | None = None,
        policy: Policy | None = None,
        catalog_transactions: CatalogTransactionManager | None = None,
    ) -> None:
        self.config = config
        if config.compression not in COMPRESSION_SETTINGS:
            raise ValueError(
                f"compression {config.compression!r}: one of {', '.join(COMPRESSION_SETTINGS)}"
            )
        if config.keep_message_memory:
            keep_message_memory()  # before gRPC's threads take their malloc arenas
        call_log.install()
        if config.auth_token:
            if authenticator is not None:
                raise ValueError("give auth_token or an authenticator, not both")
            authenticator = StaticToken(config.auth_token)
        self.access = Access(authenticator, policy)
        self.catalog_transactions = catalog_transactions
        self.catalogs = Catalogs()
        options = [
            ("grpc.max_receive_message_length", config.max_message_bytes),
            # Unlimited: scans split their batches to max_message_bytes, but a row bigger than
            # that (a 100 MB string the lake holds) can only go whole, and Flight clients
            # (Arrow C++: DuckDB, pyarrow) take any size.
            ("grpc.max_send_message_length", -1),
            ("grpc.max_metadata_size", config.max_header_bytes),
            ("grpc.absolute_max_metadata_size", config.max_header_bytes),
            # Without this, Linux lets a second server bind the same port silently.
            ("grpc.so_reuseport", 0),
        ]
        self.metrics = ServerMetrics() if config.metrics_port is not None else None
        self.metrics_port: int | None = None  # where /metrics is served, once started
        if self.metrics is not None:
            interceptors = (CallMetrics(self.metrics), *interceptors)
            self.metrics.count_transactions(active_transactions(self._transaction_managers))
        self._server = grpc.server(
            futures.ThreadPoolExecutor(
                max_workers=config.max_workers, thread_name_prefix="pyairport"
            ),
            options=options,
            interceptors=list(interceptors),
        )
        self.health = Health(self._server)
        if catalog is not None:
            self.add_catalog(catalog, transactions)
        address = f"{config.host}:{config.port}"
        try:
            if config.tls_cert and config.tls_key:
                credentials = grpc.ssl_server_credentials([(config.tls_key, config.tls_cert)])
                self.port = self._server.add_secure_port(address, credentials)
            else:
                self.port = self._server.add_insecure_port(address)
        except RuntimeError as exc:
            raise ListenError(
                f"cannot listen on {address}: address in use or not available"
            ) from exc
        if not self.port:
            raise ListenError(f"cannot listen on {address}: address in use or not available")
        # Scan endpoints name this address (protocol §2.7), known once the port is bound.
        self.catalogs.set_location(self.location)
        self._service = FlightService(
            self.catalogs,
            extra_actions,
            self.access,
            self.metrics,
            config.compression,
            max_batch_bytes=config.max_message_bytes,
        )
        add_to_server(self._service, self._server)
        # Where data workers on other hosts join (worker_link.py): beside Flight, not in it.
        self._server.add_generic_rpc_handlers((join_service(lambda: self.data_workers),))
        self.data_plane: DataPlane | None = None  # started with the server
        self.data_workers: DataWorkers | None = None  # serve_parts_at

    def add_catalog(
        self, catalog: Catalog, transactions: TransactionManager | None = None
    ) -> Dispatcher:
        """Serve catalog (under its name()) beside the others, now or while serving, with its
        own TransactionManager, else the server's CatalogTransactionManager for it
        (airport-go's MultiCatalogServer.AddCatalog); a name already served is CatalogExists."""
        name = catalog_name(catalog)
        if transactions is None and self.catalog_transactions is not None:
            transactions = CatalogTransactions(self.catalog_transactions, name)
        dispatcher = Dispatcher(
            catalog,
            transactions,
            self.config.max_row_ids,
            self.config.max_message_bytes,
            string_dictionaries=self.config.string_dictionaries,
        )
        self.catalogs.add(name, dispatcher)
        self.health.add(name)
        return dispatcher

    def remove_catalog(self, name: str) -> None:
        """Stop serving the catalog name (RemoveCatalog); calls under way finish on it. A
        name not served is CatalogNotServed."""
        self.catalogs.remove(name)
        self.health.remove(name)

    def _transaction_managers(self) -> list[object]:
        served = (self.catalogs.get(name) for name in self.catalogs.names())
        return [d.transactions for d in served if d is not None and d.transactions is not None]

    def is_exists(self, name: str) -> bool:
        """Whether the catalog name is served (Go's IsExists)."""
        return self.catalogs.get(name) is not None

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher of a server of one catalog."""
        names = self.catalogs.names()
        if len(names) != 1:
            raise LookupError(f"the server serves {len(names)} catalogs, not one")
        found = self.catalogs.get(names[0])
        assert found is not None
        return found

    @property
    def location(self) -> str:
        host = self.config.host if ":" not in self.config.host else f"[{self.config.host}]"
        scheme = "grpc+tls" if self.config.tls_cert else "grpc"
        return f"{scheme}://{host}:{self.port}"

    def start(self) -> AirportServer:
        if self.config.data_socket is not None:
            try:
                self.data_plane = DataPlane(self.config.data_socket, self._service)
            except OSError as exc:
                raise ListenError(str(exc)) from None
            self._service.data_plane = self.data_plane.location
        self._server.start()
        self.health.serving()
        if self.metrics is not None and self.config.metrics_port is not None:
            self.metrics_port = self.metrics.serve(self.config.host, self.config.metrics_port)
        log.debug("serving on %s", self.location)  # `pyairport serve` prints the line
        return self

    def serve_parts_at(self, workers: DataWorkers | None) -> None:
        """Hand the parts of the scans workers can read to them (None: to none); the server's
        stop() stops them."""
        self.data_workers = workers
        self._service.data_workers = workers

    def engine_lost(self) -> None:
        """The engine under the catalogs is gone (Spark's JVM died): health says NOT_SERVING
        and the metrics say so, while the server finishes what it can and stops."""
        self.health.not_serving()
        if self.metrics is not None:
            self.metrics.engine_up.set(0)

    def stop(self, grace: float | None = 2.0) -> None:
        self.health.shutting_down()
        self._service.data_workers = None  # no new endpoints name them
        if self.data_plane is not None:
            self._service.data_plane = None  # no new endpoints name it
            self.data_plane.stop(grace)
        self._server.stop(grace).wait()
        if self.data_workers is not None:
            self.data_workers.stop(grace or 0.0)
        if self.metrics is not None:
            self.metrics.stop()

    def wait(self) -> None:
        self._server.wait_for_termination()

    def __enter__(self) -> AirportServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop(0)


class CatalogTransactions:
    """One catalog's TransactionManager over the server's CatalogTransactionManager: its
    transactions begin in that catalog (airport-go's catalogTxManagerAdapter)."""

    def __init__(self, manager: CatalogTransactionManager, catalog: str) -> None:
        self.manager = manager
        self.catalog = catalog

    def begin_transaction(self, ctx: Context) -> str:
        return self.manager.begin_transaction(ctx, self.catalog)

    def commit_transaction(self, ctx: Context, tx_id: str) -> None:
        self.manager.commit_transaction(ctx, tx_id)

    def rollback_transaction(self, ctx: Context, tx_id: str) -> None:
        self.manager.rollback_transaction(ctx, tx_id)

    def get_transaction_status(
        self, ctx: Context, tx_id: str
    ) -> tuple[TransactionState | None, bool]:
        state, _catalog, exists = self.manager.get_transaction_status(ctx, tx_id)
        return state, exists

    def owns(self, ctx: Context, tx_id: str) -> bool:
        """Whether the transaction began in this catalog (routing a call that names none)."""
        _state, catalog, exists = self.manager.get_transaction_status(ctx, tx_id)
        return exists and catalog == self.catalog
