"""Who is calling and what they may reach, before any handler runs: the call's token through
the server's Authenticator (airport-go's interceptor, with its messages), then the catalog the
call is for through the CatalogAuthorizers (the Authenticator's own, and the policy's), then
the policy's grants in the call's Context for the dispatcher's per-schema checks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from airport_contracts import (
    AirportError,
    AuthenticationFailed,
    Authenticator,
    AuthHeaderInvalid,
    AuthTokenEmpty,
    CatalogAuthorizationFailed,
    CatalogAuthorizer,
    Context,
    InvalidAuthHeader,
    TokenIsEmpty,
    Unauthenticated,
    authorization_from_context,
    identity_from_context,
    implements,
    token_from_authorization_header,
    validate_token,
)

from .grants import with_access
from .policy import Policy


class Access:
    """The server's authentication and authorization; without either, every call passes."""

    def __init__(self, authenticator: Authenticator | None = None, policy: Policy | None = None):
        if policy is not None and authenticator is None:
            raise ValueError("a policy grants rights to identities: it needs an authenticator")
        self.authenticator = authenticator
        self.policy = policy

    def admit(self, ctx: Context) -> Context:
        """ctx with the caller's identity, or the contract's UNAUTHENTICATED error."""
        if self.authenticator is None:
            return ctx
        try:
            token = token_from_authorization_header(authorization_from_context(ctx))
            return validate_token(ctx, token, self.authenticator)
        except InvalidAuthHeader:
            raise AuthHeaderInvalid() from None
        except TokenIsEmpty:
            raise AuthTokenEmpty() from None
        except AuthenticationFailed:
            raise Unauthenticated() from None

    def authorize(self, ctx: Context, catalog: str) -> Context:
        """ctx for a call to catalog (with the policy's grants in it), or PERMISSION_DENIED
        `catalog authorization failed: …`."""
        for authorizer in self._authorizers():
            try:
                ctx = authorizer.authorize_catalog(ctx, catalog)
            except AirportError:
                raise
            except Exception as exc:
                raise CatalogAuthorizationFailed(error=str(exc)) from None
        if self.policy is not None:
            ctx = with_access(ctx, self.policy, identity_from_context(ctx), catalog)
        return ctx

    def visible(self, ctx: Context, catalogs: Iterable[str]) -> list[str]:
        """The catalogs the caller may use (the catalogs' listing shows only those)."""
        shown = []
        for name in catalogs:
            try:
                self.authorize(ctx, name)
            except AirportError:
                continue
            shown.append(name)
        return shown

    def _authorizers(self) -> list[CatalogAuthorizer]:
        found: list[CatalogAuthorizer] = []
        if self.authenticator is not None and implements(self.authenticator, "CatalogAuthorizer"):
            found.append(cast(CatalogAuthorizer, self.authenticator))
        if self.policy is not None:
            found.append(self.policy)
        return found
