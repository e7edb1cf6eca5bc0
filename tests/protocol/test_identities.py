"""The built-in Authenticators and the policy file, on their own: what each accepts and
refuses, and files that cannot be used refused with the file and line."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from airport_contracts import (
    AuthenticationFailed,
    Context,
    InvalidAuthHeader,
    TokenIsEmpty,
    identity_from_context,
    no_auth,
    token_from_authorization_header,
    validate_token,
)
from pyairport.access.grants import Right
from pyairport.access.identities import (
    AnyOf,
    JwtBearer,
    StaticToken,
    TokenRefused,
    TokensFile,
    TokensFileError,
    bearer_auth,
    hash_token,
)
from pyairport.access.policy import Policy, PolicyError

CTX = Context.background()


def test_the_contract_helpers_read_the_header_as_go_does() -> None:
    assert token_from_authorization_header("Bearer abc") == "abc"
    for header, error in (
        ("", InvalidAuthHeader),
        ("bearer abc", InvalidAuthHeader),
        ("Basic abc", InvalidAuthHeader),
        ("Bearer ", TokenIsEmpty),
    ):
        with pytest.raises(error):
            token_from_authorization_header(header)
    ctx = validate_token(CTX, "anything", no_auth())
    assert identity_from_context(ctx) == "anonymous" and identity_from_context(CTX) == ""
    with pytest.raises(AuthenticationFailed):
        validate_token(CTX, "x", StaticToken("y"))
    with pytest.raises(TokenIsEmpty):
        validate_token(CTX, "", no_auth())


def test_bearer_auth_wraps_a_function() -> None:
    def validate(token: str) -> str:
        if token != "t":
            raise ValueError("no")
        return "fn-user"

    assert identity_from_context(validate_token(CTX, "t", bearer_auth(validate))) == "fn-user"
    with pytest.raises(AuthenticationFailed):
        validate_token(CTX, "u", bearer_auth(validate))


def test_a_tokens_file_keeps_digests_only(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(
        f"# team\nalice {hash_token('a-token')}\n\nbob {hash_token('b-token')}  # ops\n"
    )
    tokens = TokensFile(path)
    assert tokens.authenticate(CTX, "a-token") == "alice"
    assert tokens.authenticate(CTX, "b-token") == "bob"
    with pytest.raises(TokenRefused):
        tokens.authenticate(CTX, hash_token("a-token"))  # the digest is not the token
    for text, problem in (
        ("alice a-token\n", "stored hashed"),
        ("alice\n", "expected `<identity> sha256:<hex>`"),
        (f"a {hash_token('x')}\nb {hash_token('x')}\n", "listed twice"),
    ):
        path.write_text(text)
        with pytest.raises(TokensFileError, match=problem):
            tokens.reload()
    assert tokens.authenticate(CTX, "a-token") == "alice"  # a bad file keeps the old ones


def _rsa_jwks(tmp_path: Path) -> tuple[rsa.RSAPrivateKey, Path]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    public["kid"] = "k1"
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [public]}))
    return key, path


def test_jwts_from_a_jwks_are_checked_for_signature_expiry_issuer_and_audience(
    tmp_path: Path,
) -> None:
    key, path = _rsa_jwks(tmp_path)
    bearer = JwtBearer(path, algorithms=["RS256"], issuer="idp", audience="lake")

    def token(**claims: object) -> str:
        payload = {"sub": "carol", "iss": "idp", "aud": "lake", "exp": int(time.time()) + 60}
        payload.update(claims)
        return jwt.encode(payload, key, algorithm="RS256", headers={"kid": "k1"})

    assert bearer.authenticate(CTX, token()) == "carol"
    for bad in (
        token(exp=int(time.time()) - 1),
        token(iss="other"),
        token(aud="other"),
        token(sub=""),
        jwt.encode({"sub": "carol", "iss": "idp", "aud": "lake"}, key, algorithm="RS256"),
        jwt.encode(
            {"sub": "carol", "iss": "idp", "aud": "lake", "exp": int(time.time()) + 60},
            "a-shared-secret-of-at-least-32-bytes",
            algorithm="HS256",  # not an algorithm the server accepts: no key confusion
        ),
        "not.a.jwt",
    ):
        with pytest.raises(TokenRefused):
            bearer.authenticate(CTX, bad)


def test_any_of_takes_the_first_that_accepts() -> None:
    either = AnyOf([StaticToken("one", "first"), StaticToken("two", "second")])
    assert either.authenticate(CTX, "two") == "second"
    with pytest.raises(TokenRefused):
        either.authenticate(CTX, "three")


def test_a_policy_grants_what_it_says_and_write_or_ddl_include_read(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(
        '[[grant]]\nidentity = "w"\ncatalog = "c"\nschemas = ["s"]\nrights = ["write"]\n'
        '[[grant]]\nidentity = "*"\ncatalog = "pub"\nrights = ["read"]\n'
    )
    policy = Policy.from_file(path)
    assert policy.allows("w", "c", "s", Right.WRITE) and policy.allows("w", "c", "s", Right.READ)
    assert not policy.allows("w", "c", "s", Right.DDL)
    assert not policy.allows("w", "c", "other", Right.READ)
    assert policy.allows("anyone", "pub", "x", Right.READ)
    assert not policy.allows("anyone", "pub", "x", Right.WRITE)
    assert policy.may_use_catalog("w", "c") and not policy.may_use_catalog("w", "pub2")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('[[grant]]\ncatalog = "c"\nrights = ["read"]\n', "identity is required"),
        ('[[grant]]\nidentity = "a"\nrights = ["read"]\n', "catalog is required"),
        ('[[grant]]\nidentity = "a"\ncatalog = "c"\nrights = ["own"]\n', "rights are read, write"),
        ('[[grant]]\nidentity = "a"\ncatalog = "c"\n', "rights is required"),
        (
            '[[grant]]\nidentity = "a"\ncatalog = "c"\nrights = ["read"]\nschema = "s"\n',
            "unknown key 'schema'",
        ),
        ("[grants]\n", "unknown table 'grants'"),
        ("[[grant]\n", "policy.toml"),
    ],
)
def test_a_policy_file_that_cannot_be_used_says_why(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    with pytest.raises(PolicyError, match=problem):
        Policy.from_file(path)


def test_a_key_file_that_holds_no_key_says_which(tmp_path: Path) -> None:
    for text in ('{"keys": [{"kty": "nope"}]}', "hello"):
        path = tmp_path / "keys"
        path.write_text(text)
        with pytest.raises(ValueError, match=str(path)):
            JwtBearer(path)
