"""The bearer token of `serve --auth-token` / `--auth-token-file`, and the header it travels
in. The check itself is pyairport.access.gate (an Authenticator, pyairport.access.identities.StaticToken
for one shared token)."""

from __future__ import annotations

AUTHORIZATION_HEADER = "authorization"  # Go: flight.HeaderAuthorization


def read_token(token: str | None, token_file: str | None) -> str | None:
    """The token from --auth-token or --auth-token-file (stripped), or None."""
    if token_file:
        with open(token_file, encoding="utf-8") as handle:
            token = handle.read().strip()
        if not token:
            raise ValueError(f"{token_file} holds no token")
    return token or None
