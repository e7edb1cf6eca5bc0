"""Tickets a data worker can trust (data_worker.py): the catalog server seals what a worker
needs to read one part of a scan (the part's plan, whose folder a client must not learn), who
may read it, which table it is and until when, with AES-256-GCM under a key it shares with its
workers. A worker opens only what that key sealed: a forged or altered ticket does not open,
an expired one or one brought by another identity is refused. The grants are decided once,
at the catalog, before it seals.

Refusals are the contract's TicketRefused (deviation data_workers). A sealed ticket is
`pyairport-sealed/1:` + a 12-byte nonce + the ciphertext of a msgpack map;
the prefix is also authenticated, so no ticket of another kind opens as one.

The same key seals the messages between a catalog and its workers that prove they share it
(worker_join.py): a worker's request to join the catalog, and the catalog's probe of a worker,
each under a prefix of its own (MessageKind), so that none opens as another.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

import msgpack
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from airport_contracts import TicketRefused

PREFIX = b"pyairport-sealed/1:"
KEY_BYTES = 32  # AES-256
LIFETIME_SECONDS = 600.0
"""How long after the endpoints call a sealed ticket's stream may start (a stream under way
goes on past it). DuckDB starts a query's parts at once (no more of them than it has
threads, by default), so ten minutes is ample; and the grant it carries was decided when it
was sealed, so a grant taken back holds for a ticket from then on only after this long (a
token taken back, at once: every DoGet checks it)."""
_NONCE_BYTES = 12
_NOT_ISSUED = "not sealed by this server's catalog, or changed since"
MESSAGE_LIFETIME_SECONDS = 30.0
"""How long a join request or a probe opens after it was sealed: time enough for a slow
network, too short for a copy to be worth replaying."""


class MessageKind(Enum):
    """The messages a catalog and its workers exchange under the key, by their prefix."""

    JOIN = b"pyairport-join/1:"  # a worker's join (or leave) request to its catalog
    PROBE = b"pyairport-probe/1:"  # the catalog's check that a worker holds the key


@dataclass(frozen=True)
class Sealed:
    """What a sealed ticket says: who may read it, the table (catalog, schema, table), the
    part's plan (the backend's bytes), the rows it holds before filters (-1: unknown), the
    columns the client asked for and whether only rows were counted, when it expires, and
    whether its string columns are sent as dictionaries (the catalog declared them so:
    wire/dictionaries.py)."""

    identity: str
    table: tuple[str, str, str]
    plan: bytes
    expected_rows: int
    columns: tuple[str, ...]
    rows_only: bool
    expires: float
    string_dictionaries: bool = False


TICKET_FORMAT = PREFIX.decode() + ",".join(f.name for f in fields(Sealed))
"""What a worker must open to serve this catalog's tickets: the prefix and Sealed's fields. It
says it in its answer to the catalog's probe (worker_link.py): a worker of another pyairport
would open a ticket without a field the catalog sealed (and send, say, strings where the
catalog declared dictionaries), so it is named in no endpoint."""


def new_key() -> bytes:
    return secrets.token_bytes(KEY_BYTES)


def read_key(path: str) -> bytes:
    """A key file's key: 64 hex digits (`openssl rand -hex 32`)."""
    with open(path, encoding="ascii") as handle:
        return key_from_hex(handle.read(), path)


def key_from_hex(text: str, source: str) -> bytes:
    text = text.strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES:
        raise ValueError(f"{source} does not hold a key: 64 hex digits (openssl rand -hex 32)")
    return key


class TicketSeal:
    """Seals and opens tickets under one key."""

    def __init__(self, key: bytes, lifetime: float = LIFETIME_SECONDS) -> None:
        self._aead = AESGCM(key)
        self.lifetime = lifetime

    def seal(self, sealed: Sealed) -> bytes:
        body = msgpack.packb(
            {
                "identity": sealed.identity,
                "table": list(sealed.table),
                "plan": sealed.plan,
                "rows": sealed.expected_rows,
                "columns": list(sealed.columns),
                "rows_only": sealed.rows_only,
                "expires": sealed.expires,
                "string_dictionaries": sealed.string_dictionaries,
            }
        )
        return self._encrypt(PREFIX, body)

    def seal_message(self, kind: MessageKind, fields: dict[str, Any]) -> bytes:
        """fields (msgpack values) sealed as a message of kind, which opens for
        MESSAGE_LIFETIME_SECONDS."""
        body = msgpack.packb({**fields, "expires": time.time() + MESSAGE_LIFETIME_SECONDS})
        return self._encrypt(kind.value, body)

    def open_message(self, kind: MessageKind, data: bytes) -> dict[str, Any] | None:
        """The fields of a message of kind that this key sealed and that has not expired;
        None for anything else."""
        try:
            fields = msgpack.unpackb(self._decrypt(kind.value, data))
            if not isinstance(fields, dict) or time.time() >= float(fields["expires"]):
                return None
        except Exception:  # not sealed by this key, changed, or not a message of ours
            return None
        return fields

    def _encrypt(self, prefix: bytes, body: bytes) -> bytes:
        nonce = secrets.token_bytes(_NONCE_BYTES)
        return prefix + nonce + self._aead.encrypt(nonce, body, prefix)

    def _decrypt(self, prefix: bytes, data: bytes) -> bytes:
        """The body of what this key sealed under prefix; ValueError or InvalidTag else."""
        if not data.startswith(prefix) or len(data) <= len(prefix) + _NONCE_BYTES:
            raise ValueError("not a sealed message of this kind")
        nonce = data[len(prefix) : len(prefix) + _NONCE_BYTES]
        body: bytes = self._aead.decrypt(nonce, data[len(prefix) + _NONCE_BYTES :], prefix)
        return body

    def expiry(self) -> float:
        """When a ticket sealed now expires."""
        return time.time() + self.lifetime

    def open(self, ticket: bytes, identity: str) -> Sealed:
        """What ticket says, if this key sealed it, it has not expired and identity may
        read it; else the contract's TicketRefused."""
        try:
            fields = msgpack.unpackb(self._decrypt(PREFIX, ticket))
            sealed = Sealed(
                identity=str(fields["identity"]),
                table=tuple(str(name) for name in fields["table"]),  # type: ignore[arg-type]
                plan=bytes(fields["plan"]),
                expected_rows=int(fields["rows"]),
                columns=tuple(str(name) for name in fields["columns"]),
                rows_only=bool(fields["rows_only"]),
                expires=float(fields["expires"]),
                string_dictionaries=bool(fields["string_dictionaries"]),
            )
        except Exception:  # InvalidTag: not sealed by this key, or changed since
            raise TicketRefused(reason=_NOT_ISSUED) from None
        if time.time() >= sealed.expires:
            raise TicketRefused(reason="it has expired: run the query again")
        if sealed.identity != identity:
            raise TicketRefused(reason="it was issued to another identity")
        return sealed
