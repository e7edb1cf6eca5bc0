"""How a catalog server and the data workers it did not start find each other, and how it
knows a worker is fit to be named in endpoints. Both ends prove they hold the shared key
(ticket_seal.py) by what they seal or open, so neither needs the other's bearer token.

- **Join** (`pyairport worker --join`): a worker asks the catalog, every JOIN_EVERY_SECONDS,
  to name it in endpoints, through a gRPC method of pyairport's own beside Flight on the
  catalog's port (JOIN_METHOD: the request a sealed MessageKind.JOIN {location, leaving}, the
  answer msgpack {lease}). The catalog names it until LEASE_SECONDS after its last request, or
  until it says it leaves. The method is not Flight's: no Flight client calls it.
- **Probe**: the catalog DoGets, each second, a sealed MessageKind.PROBE ticket holding a
  random challenge and the lake's folders from each worker on another host; the worker
  answers one row holding the challenge, which only a holder of the key can read, and the
  ticket format it opens (ticket_seal.TICKET_FORMAT) with its pyairport version, if it sees
  every folder. A worker that does not answer, answers wrong or refuses (it was given another
  key, the lake is not mounted where the catalog has it, or it is another pyairport, which
  would misread the catalog's tickets) is named in no endpoint until it answers right: its
  parts are read by the catalog meanwhile, and no query is sent to a worker that would
  refuse every ticket, fail every read or answer wrong.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urlparse

import grpc
import pyarrow as pa
import pyarrow.flight as flight

from airport_contracts import TicketRefused

from .. import __version__
from ..dispatch import ServedScan
from .ticket_seal import TICKET_FORMAT, MessageKind, TicketSeal

log = logging.getLogger("pyairport.workers")

JOIN_METHOD = "/pyairport.DataWorkers/Join"
JOIN_EVERY_SECONDS = 5.0
LEASE_SECONDS = 15.0  # three joins: one lost request does not drop a worker
PROBE_TIMEOUT_SECONDS = 2.0
LARGEST_JOIN_BYTES = 4096  # a location and a flag, sealed: a few hundred bytes
WORKER_SCHEMES = ("grpc", "grpc+tcp", "grpc+tls", "grpc+unix")
_PROBE_ANSWER = pa.schema(
    [
        pa.field("challenge", pa.binary(), nullable=False),
        pa.field("ticket_format", pa.string(), nullable=False),
        pa.field("version", pa.string(), nullable=False),
    ]
)


# --- the probe ---------------------------------------------------------------------------


def probe_answer(seal: TicketSeal, ticket: bytes) -> ServedScan:
    """A worker's answer to a probe ticket: its challenge, the tickets it opens and its
    version, one row; TicketRefused when it is no probe sealed under seal's key, or this
    worker does not see a folder it names."""
    fields = seal.open_message(MessageKind.PROBE, ticket)
    if fields is None or not isinstance(fields.get("challenge"), bytes):
        raise TicketRefused(reason="a probe not sealed with this worker's key")
    for folder in fields.get("lakes", []):
        if not os.path.isdir(str(folder)):  # only key holders seal probes: they may know it
            raise TicketRefused(reason=f"this worker does not see the lake's folder {folder}")
    row = {"challenge": fields["challenge"], "ticket_format": TICKET_FORMAT, "version": __version__}
    batch = pa.RecordBatch.from_pylist([row], schema=_PROBE_ANSWER)
    return ServedScan(pa.RecordBatchReader.from_batches(_PROBE_ANSWER, [batch]), 1, internal=True)


def is_probe(ticket: bytes) -> bool:
    return ticket.startswith(MessageKind.PROBE.value)


class Prober:
    """The catalog's probe of one worker at location; lakes: the local folders it must see
    (the catalogs' warehouses), why: what the last probe that failed found."""

    def __init__(self, location: str, seal: TicketSeal, lakes: list[str]) -> None:
        self.location = location
        self._seal = seal
        self._lakes = lakes
        self._client: flight.FlightClient | None = None
        self.why = ""

    def answers(self) -> bool:
        """Whether the worker answers a probe right, within PROBE_TIMEOUT_SECONDS."""
        challenge = secrets.token_bytes(16)
        fields = {"challenge": challenge, "lakes": self._lakes}
        ticket = flight.Ticket(self._seal.seal_message(MessageKind.PROBE, fields))
        options = flight.FlightCallOptions(timeout=PROBE_TIMEOUT_SECONDS)
        try:
            if self._client is None:
                # The challenge authenticates the worker, whatever certificate it shows (the
                # clients that read from it check that themselves).
                tls = self.location.startswith("grpc+tls://")
                self._client = flight.FlightClient(self.location, disable_server_verification=tls)
            answer = self._client.do_get(ticket, options).read_all()
        except flight.FlightUnauthorizedError as exc:  # it refused: the reason is its own
            self.why = str(exc).split(". Detail:")[0]
            return False
        except (pa.ArrowException, OSError) as exc:
            self.why = "no answer"
            log.debug("probe of %s: %s", self.location, exc)
            self.close()  # a new connection next time: the worker may have restarted
            return False
        self.why = _what_is_wrong(answer, challenge)
        return not self.why

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _what_is_wrong(answer: pa.Table, challenge: bytes) -> str:
    """Why a probe's answer does not show a worker fit for this catalog's tickets ("": it
    does). The challenge first: only a holder of the key reads it."""
    rows = answer.to_pylist()
    if len(rows) != 1 or rows[0].get("challenge") != challenge:
        return "a wrong answer"
    if rows[0].get("ticket_format") != TICKET_FORMAT:
        version = rows[0].get("version")
        there = f"pyairport {version}" if version else "an older pyairport"
        return (
            f"it is another pyairport ({there} there, pyairport {__version__} here), which"
            " would misread this server's tickets: run the same pyairport on both"
        )
    return ""


# --- the join ----------------------------------------------------------------------------


def check_location(location: str) -> str:
    """location, if a worker could serve at it; ValueError naming what is wrong else."""
    where = urlparse(location)
    if where.scheme not in WORKER_SCHEMES:
        raise ValueError(f"{location!r} is not a grpc://, grpc+tls:// or grpc+unix:// address")
    if where.scheme == "grpc+unix":
        if not where.path:
            raise ValueError(f"{location!r} names no socket")
    elif not where.hostname or where.port is None:
        raise ValueError(f"{location!r} has no host and port")
    elif where.hostname in ("0.0.0.0", "::"):
        raise ValueError(f"{location!r} is where a worker listens, not where clients reach it")
    return location


class JoinRefused(Exception):
    """A join request the catalog does not take; its text is what the worker is told."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def open_join(seal: TicketSeal, request: bytes) -> tuple[str, bool]:
    """(location, leaving) of a join request sealed under seal's key; JoinRefused else."""
    if len(request) > LARGEST_JOIN_BYTES:  # anyone may call: refused before any work
        raise JoinRefused(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"join refused: a join request is at most {LARGEST_JOIN_BYTES} bytes",
        )
    fields = seal.open_message(MessageKind.JOIN, request)
    if fields is None:
        raise JoinRefused(
            grpc.StatusCode.PERMISSION_DENIED,
            "join refused: not sealed with this server's data key (--data-key-file), changed"
            " since, or expired",
        )
    try:
        location = check_location(str(fields.get("location", "")))
    except ValueError as exc:
        raise JoinRefused(grpc.StatusCode.INVALID_ARGUMENT, f"join refused: {exc}") from None
    return location, bool(fields.get("leaving", False))


class JoinTaker(Protocol):
    """The catalog's side of a join (data_workers.DataWorkers)."""

    def take_join(self, request: bytes) -> bytes: ...


def join_service(taker: Callable[[], JoinTaker | None]) -> grpc.GenericRpcHandler[bytes, bytes]:
    """JOIN_METHOD on the catalog's gRPC server: the requests go to taker() (None: the
    server takes no workers, FAILED_PRECONDITION)."""

    def join(request: bytes, context: grpc.ServicerContext) -> bytes:
        workers = taker()
        if workers is None:
            context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                "join refused: this server takes no data workers (serve --data-key-file)",
            )
        try:
            return workers.take_join(request)
        except JoinRefused as refused:
            context.abort(refused.code, str(refused))

    service, method = JOIN_METHOD.strip("/").split("/")
    return grpc.method_handlers_generic_handler(
        service, {method: grpc.unary_unary_rpc_method_handler(join)}
    )


class Joiner:
    """A worker's membership of the catalog at catalog_uri, as advertise, until stop()."""

    def __init__(
        self,
        catalog_uri: str,
        advertise: str,
        seal: TicketSeal,
        root_certificates: bytes | None = None,
    ) -> None:
        self._catalog = catalog_uri
        self._advertise = advertise
        self._seal = seal
        self._channel = _channel(catalog_uri, root_certificates)
        self._join = self._channel.unary_unary(JOIN_METHOD, None, None)  # bytes either way
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pyairport-join", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        joined = failing = False
        while not self._stopping.is_set():
            try:
                self._send(leaving=False)
            except grpc.RpcError as exc:
                if not failing:
                    log.warning("cannot join %s: %s", self._catalog, _status_text(exc))
                joined, failing = False, True
            else:
                if not joined:
                    log.info("joined %s as %s", self._catalog, self._advertise)
                joined, failing = True, False
            self._stopping.wait(JOIN_EVERY_SECONDS)

    def _send(self, leaving: bool) -> None:
        fields = {"location": self._advertise, "leaving": leaving}
        self._join(self._seal.seal_message(MessageKind.JOIN, fields), timeout=JOIN_EVERY_SECONDS)

    def stop(self) -> None:
        """Stop joining, and tell the catalog this worker leaves (at once, not when its
        lease ends)."""
        self._stopping.set()
        self._thread.join()
        try:
            self._send(leaving=True)
        except grpc.RpcError as exc:
            log.info("could not tell %s this worker leaves: %s", self._catalog, _status_text(exc))
        self._channel.close()


def _channel(uri: str, root_certificates: bytes | None) -> grpc.Channel:
    where = urlparse(uri)
    if where.scheme == "grpc+unix":
        return grpc.insecure_channel(f"unix:{where.path}")
    target = f"{where.hostname}:{where.port}"
    if ":" in (where.hostname or ""):
        target = f"[{where.hostname}]:{where.port}"
    if where.scheme == "grpc+tls":
        credentials = grpc.ssl_channel_credentials(root_certificates=root_certificates)
        return grpc.secure_channel(target, credentials)
    return grpc.insecure_channel(target)


def _status_text(exc: grpc.RpcError) -> str:
    code = exc.code() if isinstance(exc, grpc.Call) else None
    details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
    return f"{code.name if code else 'error'}: {details}"
