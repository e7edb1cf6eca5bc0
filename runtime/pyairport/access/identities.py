"""Authenticators a team can run without writing code (airport_contracts.Authenticator:
token → identity), and Go's BearerAuth for a Python function.

- StaticToken: the one shared token of `serve --auth-token`, as the identity "token".
- TokensFile: an identity per token, the tokens stored as SHA-256 digests only; re-read when
  the file changes (checked at most once a second) and on reload() (`serve` calls it on
  SIGHUP).
- JwtBearer: JSON Web Tokens checked by PyJWT: signature against the keys of a file (a PEM
  public key or a JWKS document), expiry (required), issuer and audience when configured.
- AnyOf: the first authenticator that accepts the token (a tokens file and JWTs side by side).

Every refusal raises; the server answers it UNAUTHENTICATED `unauthenticated` whatever the
reason, so a client cannot tell an unknown token from an expired one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jwt

from airport_contracts import Authenticator, Context

if TYPE_CHECKING:
    from jwt.types import Options

HASH_PREFIX = "sha256:"


class TokenRefused(Exception):
    """The token is not accepted (its reason stays in the server)."""


def hash_token(token: str) -> str:
    """The form a tokens file stores a token in: `sha256:<hex digest>`. Tokens are random
    secrets (not passwords), so an unsalted digest is enough to keep a leaked file useless."""
    return HASH_PREFIX + hashlib.sha256(token.encode()).hexdigest()


def bearer_auth(validate: Callable[[str], str]) -> Authenticator:
    """An Authenticator from a function token → identity that raises to refuse (Go's
    auth.BearerAuth)."""
    return _FunctionAuthenticator(validate)


class _FunctionAuthenticator:
    def __init__(self, validate: Callable[[str], str]) -> None:
        self._validate = validate

    def authenticate(self, ctx: Context, token: str) -> str:
        return self._validate(token)


class StaticToken:
    """One shared token, compared in constant time; its holder is the identity given."""

    def __init__(self, token: str, identity: str = "token") -> None:
        if not token:
            raise ValueError("the bearer token must not be empty")
        self._token = token.encode()
        self.identity = identity

    def authenticate(self, ctx: Context, token: str) -> str:
        if not hmac.compare_digest(token.encode(), self._token):
            raise TokenRefused("not the server's token")
        return self.identity


class TokensFileError(ValueError):
    """A tokens file that cannot be used; says the file and line."""


class TokensFile:
    """Identities by token from a file of lines `<identity> sha256:<hex>` (`#` comments,
    blank lines). A line with a token in clear is refused: the file never holds one."""

    RECHECK_SECONDS = 1.0

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._identities: dict[str, str] = {}
        self._stamp: tuple[int, int] | None = None
        self._checked = 0.0
        self.reload()

    def reload(self) -> None:
        """Read the file again; a file that does not parse keeps the identities in force
        (and raises TokensFileError so the operator sees why)."""
        stat = self.path.stat()
        identities = _parse_tokens(self.path)
        with self._lock:
            self._identities = identities
            self._stamp = (stat.st_mtime_ns, stat.st_size)
            self._checked = time.monotonic()

    def identities(self) -> list[str]:
        with self._lock:
            return sorted(set(self._identities.values()))

    def authenticate(self, ctx: Context, token: str) -> str:
        self._reload_if_changed()
        digest = hash_token(token)
        with self._lock:
            identity = self._identities.get(digest)
        if identity is None:
            raise TokenRefused("no such token")
        return identity

    def _reload_if_changed(self) -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._checked < self.RECHECK_SECONDS:
                return
            self._checked = now
            stamp = self._stamp
        try:
            stat = self.path.stat()
            if (stat.st_mtime_ns, stat.st_size) != stamp:
                self.reload()
        except (OSError, TokensFileError):
            return  # the identities in force stay; SIGHUP's reload reports the problem


def _parse_tokens(path: Path) -> dict[str, str]:
    identities: dict[str, str] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        where = f"{path}:{number}"
        if len(parts) != 2:
            raise TokensFileError(f"{where}: expected `<identity> sha256:<hex>`")
        identity, digest = parts
        hexpart = digest[len(HASH_PREFIX) :]
        if not digest.startswith(HASH_PREFIX) or len(hexpart) != 64 or not _is_hex(hexpart):
            raise TokensFileError(
                f"{where}: the token must be stored hashed, as `pyairport hash-token` prints it"
            )
        if digest.lower() in identities:
            raise TokensFileError(f"{where}: this token is listed twice")
        identities[digest.lower()] = identity
    return identities


def _is_hex(text: str) -> bool:
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


class JwtBearer:
    """JWTs verified by PyJWT against the keys of key_file: a PEM public key (or an HMAC
    secret for HS* algorithms) or a JWKS document (`{"keys": [...]}`, picked by the token's
    `kid`). The identity is the identity_claim (default `sub`). `exp` is required."""

    def __init__(
        self,
        key_file: str | os.PathLike[str],
        algorithms: Sequence[str] = ("RS256", "ES256", "EdDSA"),
        issuer: str | None = None,
        audience: str | None = None,
        identity_claim: str = "sub",
        leeway_seconds: float = 0.0,
    ) -> None:
        self.key_file = Path(key_file)
        self.algorithms = list(algorithms)
        self.issuer = issuer
        self.audience = audience
        self.identity_claim = identity_claim
        self.leeway = leeway_seconds
        self._lock = threading.Lock()
        self._keys: dict[str | None, Any] = {}
        self.reload()

    def reload(self) -> None:
        """Read the keys again (a key rotation: `serve` calls it on SIGHUP); a file that
        holds no usable key is a ValueError naming it, and the keys in force stay."""
        text = self.key_file.read_text(encoding="utf-8").strip()
        keys: dict[str | None, Any] = {}
        if text.startswith("{"):
            try:
                jwks = jwt.PyJWKSet.from_dict(json.loads(text))
            except (ValueError, jwt.PyJWTError) as exc:
                raise ValueError(f"{self.key_file}: not a JWKS document: {exc}") from None
            for key in jwks.keys:
                keys[key.key_id] = key.key
        elif text.startswith("-----BEGIN") or any(a.startswith("HS") for a in self.algorithms):
            keys[None] = text  # a PEM key, or the shared secret of HS* tokens
        else:
            raise ValueError(f"{self.key_file}: neither a PEM public key nor a JWKS document")
        with self._lock:
            self._keys = keys

    def authenticate(self, ctx: Context, token: str) -> str:
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            with self._lock:
                keys = self._keys
            if kid in keys:
                key = keys[kid]
            elif len(keys) == 1:  # one key (a PEM file, a JWKS of one): tokens need no kid
                key = next(iter(keys.values()))
            else:
                raise TokenRefused("no key for the token")
            options: Options = {
                "require": ["exp"] + (["iss"] if self.issuer else []),
                "verify_aud": self.audience is not None,
            }
            claims = jwt.decode(
                token,
                key=key,
                algorithms=self.algorithms,
                issuer=self.issuer,
                audience=self.audience,
                leeway=self.leeway,
                options=options,
            )
        except jwt.PyJWTError as exc:
            raise TokenRefused(str(exc)) from None
        identity = claims.get(self.identity_claim)
        if not isinstance(identity, str) or not identity:
            raise TokenRefused(f"the token has no {self.identity_claim} claim")
        return identity


class AnyOf:
    """The identity of the first authenticator that accepts the token."""

    def __init__(self, authenticators: Sequence[Authenticator]) -> None:
        if not authenticators:
            raise ValueError("AnyOf needs at least one authenticator")
        self.authenticators = list(authenticators)

    def authenticate(self, ctx: Context, token: str) -> str:
        for authenticator in self.authenticators:
            try:
                return authenticator.authenticate(ctx, token)
            except Exception:
                continue
        raise TokenRefused("no authenticator accepts the token")

    def reload(self) -> None:
        for authenticator in self.authenticators:
            reload = getattr(authenticator, "reload", None)
            if callable(reload):
                reload()
