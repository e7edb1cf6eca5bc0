"""A gRPC call's context as the contract's Context: cancellation, deadline, headers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc

from airport_contracts import Context

_NO_DEADLINE = 10 * 365 * 24 * 3600.0


def call_context(grpc_context: grpc.ServicerContext) -> Context:
    """A Context cancelled when the call ends (client cancel, disconnect or completion),
    with the call's deadline if the client set one."""
    ctx = Context.background()
    remaining = grpc_context.time_remaining()
    # grpcio reports "no deadline" as None or as a practically infinite number of seconds.
    if remaining is not None and remaining < _NO_DEADLINE:
        ctx, cancel = ctx.with_timeout(remaining)
    else:
        ctx, cancel = ctx.with_cancel()
    if not grpc_context.add_callback(cancel):
        cancel()  # the call is already over
    return ctx


def call_headers(grpc_context: grpc.ServicerContext) -> dict[str, str]:
    """The call's headers as first_values reads them."""
    return first_values(grpc_context.invocation_metadata() or ())


def first_values(pairs: Iterable[tuple[str, Any]]) -> dict[str, str]:
    """Header name (lower case) → first value, as Go's md.Get reads them; binary headers
    (-bin) are not DML headers and are left out."""
    headers: dict[str, str] = {}
    for key, value in pairs:
        if isinstance(value, str) and key.lower() not in headers:
            headers[key.lower()] = value
    return headers
