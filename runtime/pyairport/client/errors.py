"""The gRPC statuses a server answers with, as Python exceptions a caller can catch by kind."""

from __future__ import annotations

import grpc


class RemoteError(Exception):
    """The server answered with a gRPC error status."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


class InvalidArgument(RemoteError):
    """INVALID_ARGUMENT: the request was malformed or broke a validation rule."""


class NotFound(RemoteError):
    """NOT_FOUND: a schema, table, row or transaction does not exist."""


class FailedPrecondition(RemoteError):
    """FAILED_PRECONDITION: the table cannot do that, or the transaction is over."""


class Internal(RemoteError):
    """INTERNAL: the table or a commit failed; the message says how."""


class Unimplemented(RemoteError):
    """UNIMPLEMENTED: the server does not serve that call or action."""


class Unauthenticated(RemoteError):
    """UNAUTHENTICATED: the server needs a (different) bearer token."""


_BY_CODE: dict[grpc.StatusCode, type[RemoteError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.INTERNAL: Internal,
    grpc.StatusCode.UNIMPLEMENTED: Unimplemented,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
}


def remote_error(error: grpc.RpcError) -> RemoteError:
    code = error.code()
    return _BY_CODE.get(code, RemoteError)(code, error.details() or "")
