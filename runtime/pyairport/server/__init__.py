"""The Flight server: the transport (grpcio), routing of calls to catalogs, IPC framing of
messages and the per-call log context. `AirportServer` and `ServerConfig` are its front door."""

from .airport_server import AirportServer, ListenError, ServerConfig

__all__ = ["AirportServer", "ListenError", "ServerConfig"]
