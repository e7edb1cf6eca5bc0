"""What the token and TLS flags that serve and worker share make: the Authenticator, the TLS
key pair, and SIGHUP's re-reading of their files."""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from airport_contracts import Authenticator


def authenticator_from(args: argparse.Namespace, token: str | None) -> Authenticator | None:
    """The Authenticator of the shared token, a tokens file and JWTs (any of them), or None
    when no flag asks for one."""
    from ..access.identities import AnyOf, JwtBearer, StaticToken, TokensFile

    authenticators: list[Authenticator] = []
    if token:
        authenticators.append(StaticToken(token))
    if args.tokens_file:
        authenticators.append(TokensFile(args.tokens_file))
    if args.jwt_keys:
        authenticators.append(
            JwtBearer(
                args.jwt_keys,
                algorithms=args.jwt_algorithm or ("RS256", "ES256", "EdDSA"),
                issuer=args.jwt_issuer,
                audience=args.jwt_audience,
                identity_claim=args.jwt_identity_claim,
            )
        )
    elif args.jwt_issuer or args.jwt_audience or args.jwt_algorithm:
        raise ValueError("--jwt-issuer, --jwt-audience and --jwt-algorithm need --jwt-keys")
    if not authenticators:
        return None
    return authenticators[0] if len(authenticators) == 1 else AnyOf(authenticators)


def token_flags(args: argparse.Namespace) -> list[str]:
    """The flags that make the same Authenticator but the shared token's (tokens file, JWT
    keys), as a worker the server starts is given them."""
    flags: list[str] = []
    if args.tokens_file:
        flags += ["--tokens-file", args.tokens_file]
    if args.jwt_keys:
        flags += ["--jwt-keys", args.jwt_keys, "--jwt-identity-claim", args.jwt_identity_claim]
        for algorithm in args.jwt_algorithm or ():
            flags += ["--jwt-algorithm", algorithm]
        if args.jwt_issuer:
            flags += ["--jwt-issuer", args.jwt_issuer]
        if args.jwt_audience:
            flags += ["--jwt-audience", args.jwt_audience]
    return flags


def read_tls(cert: str | None, key: str | None) -> tuple[bytes | None, bytes | None]:
    if bool(cert) != bool(key):
        raise ValueError("--tls-cert and --tls-key go together")
    if not cert or not key:
        return None, None
    with open(cert, "rb") as cert_file, open(key, "rb") as key_file:
        return cert_file.read(), key_file.read()


def reload_files(*reloadable: object) -> None:
    """SIGHUP: read the tokens, keys and policy files again; a file that does not parse
    leaves what is in force and says why."""
    log = logging.getLogger("pyairport.cli")
    for item in reloadable:
        reload = getattr(item, "reload", None)
        if not callable(reload):
            continue
        try:
            reload()
        except (OSError, ValueError) as exc:
            log.error("reload failed, the previous one stays in force: %s", exc)
            continue
        log.info("reloaded %s", type(item).__name__)
