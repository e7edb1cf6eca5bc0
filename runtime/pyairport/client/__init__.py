"""A Python Flight client of the Airport protocol: DML statements and DoPut, DDL actions, reads
and the catalog's listing. `AirportClient` is its front door; `RemoteError` (one subclass per
gRPC status) is what a refused call raises."""

from .airport_client import AirportClient, DMLAnswer, PutAnswer
from .errors import (
    FailedPrecondition,
    Internal,
    InvalidArgument,
    NotFound,
    RemoteError,
    Unauthenticated,
    Unimplemented,
    remote_error,
)

__all__ = [
    "AirportClient",
    "DMLAnswer",
    "FailedPrecondition",
    "Internal",
    "InvalidArgument",
    "NotFound",
    "PutAnswer",
    "RemoteError",
    "Unauthenticated",
    "Unimplemented",
    "remote_error",
]
