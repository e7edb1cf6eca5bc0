"""The mechanics of Go's auth helpers, written once: the identity kept in a Context, the token
of an `authorization: Bearer …` header, a token validated by an authenticator. The contract's
generated auth module binds them to its names and its error classes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from .context import Context

IDENTITY_KEY = "airport_contracts.identity"  # the key the call's identity is kept under
BEARER = "Bearer "


class Authenticates(Protocol):
    def authenticate(self, ctx: Context, token: str) -> str: ...


def with_identity(ctx: Context, identity: str) -> Context:
    return ctx.with_value(IDENTITY_KEY, identity)


def identity_of(ctx: Context) -> str:
    identity = ctx.value(IDENTITY_KEY)
    return identity if isinstance(identity, str) else ""


def bearer_token(
    header: str, invalid: Callable[[], Exception], empty: Callable[[], Exception]
) -> str:
    """The token of `Bearer TOKEN`; invalid() for another scheme, empty() for no token."""
    if not header.startswith(BEARER):
        raise invalid()
    token = header[len(BEARER) :]
    if not token:
        raise empty()
    return token


def authenticated(
    ctx: Context,
    token: str,
    authenticator: Authenticates,
    empty: Callable[[], Exception],
    failed: Callable[[], Exception],
) -> Context:
    """ctx carrying the identity authenticator gives token; empty() for no token, failed()
    for whatever the authenticator raises (its reason is not the client's to see)."""
    if not token:
        raise empty()
    try:
        identity = authenticator.authenticate(ctx, token)
    except Exception:
        raise failed() from None
    return with_identity(ctx, identity)


class NoAuth:
    """Every token is "anonymous" (Go's noAuthenticator)."""

    def authenticate(self, ctx: Context, token: str) -> str:
        return "anonymous"
