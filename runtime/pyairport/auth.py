"""Bearer-token authentication on every RPC.

A server started with a token accepts a call only with `authorization: Bearer <token>`;
anything else is UNAUTHENTICATED with the contract's message, before any handler (so no
table is touched). The token is compared in constant time and never logged or echoed.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

import grpc

from airport_contracts import Unauthenticated

AUTHORIZATION_HEADER = "authorization"  # Go: flight.HeaderAuthorization


class BearerTokenInterceptor(grpc.ServerInterceptor):  # type: ignore[type-arg]  # not subscriptable at run time
    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("the bearer token must not be empty")
        self._expected = f"Bearer {token}".encode()

    def _authorized(self, details: grpc.HandlerCallDetails) -> bool:
        for key, value in details.invocation_metadata or ():
            if key.lower() == AUTHORIZATION_HEADER:
                given = value.encode() if isinstance(value, str) else bytes(value)
                return hmac.compare_digest(given, self._expected)
        return False

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = continuation(details)
        if handler is None or self._authorized(details):
            return handler
        return _refusal(handler)


def _refusal(handler: Any) -> Any:
    """A handler of the same streaming shape that ends the call UNAUTHENTICATED."""
    error = Unauthenticated()

    def refuse(request: Any, context: grpc.ServicerContext) -> Any:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, error.message)

    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(refuse)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(refuse)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(refuse)
    return grpc.unary_unary_rpc_method_handler(refuse)


def read_token(token: str | None, token_file: str | None) -> str | None:
    """The token from --auth-token or --auth-token-file (stripped), or None."""
    if token_file:
        with open(token_file, encoding="utf-8") as handle:
            token = handle.read().strip()
        if not token:
            raise ValueError(f"{token_file} holds no token")
    return token or None
