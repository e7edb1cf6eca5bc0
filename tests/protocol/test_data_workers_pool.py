"""The workers a server hands scan parts to (server/data_workers.py, worker_link.py), without
a lake: a worker on another host is named in endpoints only while it answers the server's
probe, so a worker that is down, or holds another key, costs no query (the server serves the
parts itself until it answers right); a worker may join a running server with the key, and
is named until it leaves or stops joining; a join without the key is refused on the wire."""

from __future__ import annotations

import importlib.util
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import msgpack
import pyarrow as pa
import pyarrow.flight as flight
import pytest

from airport_contracts import Context
from pyairport import __version__
from pyairport.demo import memory_demo_catalog
from pyairport.server import AirportServer, ServerConfig
from pyairport.server.data_worker import DataWorker
from pyairport.server.data_workers import DataWorkers, WorkerFlags
from pyairport.server.metrics import ServerMetrics
from pyairport.server.ticket_seal import (
    PREFIX,
    TICKET_FORMAT,
    MessageKind,
    TicketSeal,
    new_key,
)
from pyairport.server.worker_link import JOIN_METHOD, Joiner

from ..waiting import until
from .test_auth_limits import _self_signed

ELSEWHERE = "ipv4:10.1.2.3:5000"  # a client on another host


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _unread(ctx: object, plan: bytes) -> object:
    raise AssertionError("no plan is read here")


def test_a_remote_worker_is_named_only_while_it_answers() -> None:
    key = new_key()
    port = _free_port()
    at = f"grpc://127.0.0.1:{port}"
    workers = DataWorkers(key, 0, [at], WorkerFlags(), _unread)  # type: ignore[arg-type]
    try:
        assert workers.for_peer("ipv4:127.0.0.1:5000") is None  # down: the server serves
        worker = DataWorker(at, TicketSeal(key), _unread)  # type: ignore[arg-type]
        try:
            assert until(lambda: workers.for_peer("ipv4:10.1.2.3:5000") is not None)
            placement = workers.for_peer("ipv4:10.1.2.3:5000")
            assert placement is not None and placement.locations == [at]
        finally:
            worker.stop(0)
        assert until(lambda: workers.for_peer("ipv4:10.1.2.3:5000") is None)
    finally:
        workers.stop()


def _offered(workers: DataWorkers, peer: str = ELSEWHERE) -> list[str]:
    placement = workers.for_peer(peer)
    return [] if placement is None else placement.locations


def test_a_worker_with_another_key_is_never_named() -> None:
    """It would refuse every ticket: the probe finds that out before any client does."""
    key = new_key()
    right = DataWorker("grpc://127.0.0.1:0", TicketSeal(key), _unread)  # type: ignore[arg-type]
    wrong = DataWorker("grpc://127.0.0.1:0", TicketSeal(new_key()), _unread)  # type: ignore[arg-type]
    listed = [f"grpc://127.0.0.1:{right.port}", f"grpc://127.0.0.1:{wrong.port}"]
    workers = DataWorkers(key, 0, listed, WorkerFlags(), _unread)  # type: ignore[arg-type]
    try:
        assert _offered(workers) == listed[:1]
        time.sleep(1.5)  # the watcher's probes agree
        assert _offered(workers) == listed[:1]
        assert right.probes >= 2 and right.scans == 0  # probes are not counted as reads
    finally:
        workers.stop()
        right.stop(0)
        wrong.stop(0)


class _Impostor(flight.FlightServerBase):  # type: ignore[misc]
    """Answers every DoGet with one row of whatever, as a server without the key could."""

    def do_get(self, context: object, ticket: flight.Ticket) -> flight.RecordBatchStream:
        table = pa.table({"challenge": pa.array([b"0" * 16], pa.binary())})
        return flight.RecordBatchStream(table)


def _never_named(key: bytes, server: flight.FlightServerBase) -> None:
    """server, listed as a worker of a catalog with key, is offered to no client while the
    watcher probes it; shut down afterwards."""
    at = f"grpc://127.0.0.1:{server.port}"
    workers = DataWorkers(key, 0, [at], WorkerFlags(), _unread)  # type: ignore[arg-type]
    try:
        time.sleep(1.5)
        assert _offered(workers) == []
    finally:
        workers.stop()
        server.shutdown()


def test_a_server_that_answers_without_the_key_is_never_named() -> None:
    _never_named(new_key(), _Impostor("grpc://127.0.0.1:0"))


class _OtherPyairport(flight.FlightServerBase):  # type: ignore[misc]
    """Holds the key and answers the probe's challenge right, as a worker of another
    pyairport would: one without the ticket format (older) or with another."""

    def __init__(self, seal: TicketSeal, ticket_format: str | None) -> None:
        super().__init__("grpc://127.0.0.1:0")
        self._seal = seal
        self._format = ticket_format

    def do_get(self, context: object, ticket: flight.Ticket) -> flight.RecordBatchStream:
        fields = self._seal.open_message(MessageKind.PROBE, ticket.ticket)
        assert fields is not None
        row = {"challenge": pa.array([fields["challenge"]], pa.binary())}
        if self._format is not None:
            row |= {"ticket_format": pa.array([self._format]), "version": pa.array(["9.9.9"])}
        return flight.RecordBatchStream(pa.table(row))


@pytest.mark.parametrize("ticket_format", [None, TICKET_FORMAT + ",ticket_field_of_tomorrow"])
def test_a_worker_of_another_pyairport_is_never_named(
    ticket_format: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    """It holds the key, but would open the catalog's tickets without a field the catalog
    sealed (--string-dictionaries': strings sent where dictionaries were declared): named in
    no endpoint, and the server's log says why."""
    key = new_key()
    _never_named(key, _OtherPyairport(TicketSeal(key), ticket_format))
    there = "pyairport 9.9.9" if ticket_format else "an older pyairport"
    assert f"another pyairport ({there} there, pyairport {__version__} here)" in caplog.text


def test_a_unix_socket_worker_is_named_to_clients_on_this_host_only(tmp_path: object) -> None:
    key = new_key()
    at = f"grpc+unix://{tmp_path}/w.sock"
    worker = DataWorker(at, TicketSeal(key), _unread)  # type: ignore[arg-type]
    workers = DataWorkers(key, 0, [at], WorkerFlags(), _unread)  # type: ignore[arg-type]
    try:
        assert _offered(workers, "ipv4:127.0.0.1:5000") == [at]
        assert _offered(workers, "unix:") == [at]
        assert _offered(workers) == []
    finally:
        workers.stop()
        worker.stop(0)


@pytest.fixture(scope="module")
def catalog_server() -> Iterator[AirportServer]:
    catalog = memory_demo_catalog()
    with AirportServer(catalog, config=ServerConfig("127.0.0.1", 0)) as server:
        yield server


def _join(server: AirportServer, request: bytes) -> bytes:
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        answer: bytes = channel.unary_unary(JOIN_METHOD)(request, timeout=5)
        return answer


def test_workers_join_a_running_server_and_leave_it(catalog_server: AirportServer) -> None:
    key = new_key()
    workers = DataWorkers(key, 0, [], WorkerFlags(), _unread, lease=2.0)  # type: ignore[arg-type]
    catalog_server.serve_parts_at(workers)
    one = DataWorker("grpc://127.0.0.1:0", TicketSeal(key), _unread)  # type: ignore[arg-type]
    two = DataWorker("grpc://127.0.0.1:0", TicketSeal(key), _unread)  # type: ignore[arg-type]
    at_one, at_two = f"grpc://127.0.0.1:{one.port}", f"grpc://127.0.0.1:{two.port}"
    try:
        assert _offered(workers) == []
        first = Joiner(catalog_server.location, at_one, TicketSeal(key))
        second = Joiner(catalog_server.location, at_two, TicketSeal(key))
        assert until(lambda: sorted(_offered(workers)) == sorted([at_one, at_two]))
        first.stop()  # leaves at once, not when its lease ends
        assert _offered(workers) == [at_two]
        two.stop(0)  # stops answering while it still joins: dropped within the probe's second
        assert until(lambda: _offered(workers) == [], 5.0)
        second.stop()
        # A worker that stops joining (a host gone without a word) goes when its lease ends.
        seal = TicketSeal(key)
        request = seal.seal_message(MessageKind.JOIN, {"location": at_one, "leaving": False})
        assert msgpack.unpackb(_join(catalog_server, request)) == {"lease": 2.0}
        assert _offered(workers) == [at_one]  # probed at its join: named at once
        assert until(lambda: _offered(workers) == [], 6.0)
    finally:
        catalog_server.serve_parts_at(None)
        workers.stop()
        one.stop(0)
        two.stop(0)


def _join_refused(server: AirportServer, request: bytes) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as refused:
        _join(server, request)
    error = refused.value
    assert isinstance(error, grpc.Call)
    return error.code(), error.details()


def test_a_join_without_the_key_is_refused_on_the_wire(catalog_server: AirportServer) -> None:
    key = new_key()
    workers = DataWorkers(key, 0, [], WorkerFlags(), _unread)  # type: ignore[arg-type]
    worker = DataWorker("grpc://127.0.0.1:0", TicketSeal(key), _unread)  # type: ignore[arg-type]
    at = f"grpc://127.0.0.1:{worker.port}"
    denied = (
        grpc.StatusCode.PERMISSION_DENIED,
        "join refused: not sealed with this server's data key (--data-key-file), changed since,"
        " or expired",
    )
    try:
        catalog_server.serve_parts_at(None)
        no_workers = (
            grpc.StatusCode.FAILED_PRECONDITION,
            "join refused: this server takes no data workers (serve --data-key-file)",
        )
        assert _join_refused(catalog_server, b"anything") == no_workers
        catalog_server.serve_parts_at(workers)
        other = TicketSeal(new_key()).seal_message(MessageKind.JOIN, {"location": at})
        assert _join_refused(catalog_server, other) == denied
        genuine = TicketSeal(key).seal_message(MessageKind.JOIN, {"location": at})
        flipped = genuine[:-1] + bytes([genuine[-1] ^ 1])
        for request in (flipped, genuine[:30], b"", b"\x80" * 64):
            assert _join_refused(catalog_server, request) == denied
        # A probe or a ticket sealed with the right key is not a join.
        probe = TicketSeal(key).seal_message(MessageKind.PROBE, {"location": at})
        assert _join_refused(catalog_server, probe) == denied
        for bad in ("http://evil:80", "grpc://0.0.0.0:9", "grpc://host", "grpc+unix://"):
            request = TicketSeal(key).seal_message(MessageKind.JOIN, {"location": bad})
            code, message = _join_refused(catalog_server, request)
            assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith(
                f"join refused: {bad!r} "
            )
        too_large = TicketSeal(key).seal_message(MessageKind.JOIN, {"location": "x" * 5000})
        assert _join_refused(catalog_server, too_large) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            "join refused: a join request is at most 4096 bytes",
        )
        assert _offered(workers) == []  # nothing refused was taken
        # A probe sealed with another key is refused by the worker, not answered.
        client = flight.FlightClient(at)
        forged = TicketSeal(new_key()).seal_message(MessageKind.PROBE, {"challenge": b"x" * 16})
        with pytest.raises(flight.FlightUnauthorizedError, match="ticket refused: a probe not"):
            client.do_get(flight.Ticket(forged)).read_all()
        client.close()
    finally:
        catalog_server.serve_parts_at(None)
        workers.stop()
        worker.stop(0)


def test_the_workers_are_in_the_servers_metrics_and_probes_in_no_workers(
    catalog_server: AirportServer,
) -> None:
    """pyairport_data_worker_up and _parts at the server, by the worker's address; a joined
    worker's series goes when it leaves; a worker's own metrics count no probe."""
    key = new_key()
    own_metrics = ServerMetrics()
    listed = DataWorker("grpc://127.0.0.1:0", TicketSeal(key), _unread, metrics=own_metrics)  # type: ignore[arg-type]
    joined = DataWorker("grpc://127.0.0.1:0", TicketSeal(key), _unread)  # type: ignore[arg-type]
    at_listed, at_joined = f"grpc://127.0.0.1:{listed.port}", f"grpc://127.0.0.1:{joined.port}"
    metrics = ServerMetrics()
    workers = DataWorkers(key, 0, [at_listed], WorkerFlags(), _unread, metrics=metrics)  # type: ignore[arg-type]
    catalog_server.serve_parts_at(workers)
    up = "pyairport_data_worker_up"
    try:
        joiner = Joiner(catalog_server.location, at_joined, TicketSeal(key))
        sample = metrics.registry.get_sample_value
        assert until(lambda: sample(up, {"worker": at_listed}) == 1)
        assert until(lambda: sample(up, {"worker": at_joined}) == 1)
        placement = workers.for_peer(ELSEWHERE)
        assert placement is not None
        for _ in range(4):
            placement.endpoint(Context.background(), ("", "s", "t"), b"plan", 10, [], False)
        for at in (at_listed, at_joined):
            assert sample("pyairport_data_worker_parts_total", {"worker": at}) == 2
        joiner.stop()
        assert sample(up, {"worker": at_joined}) is None  # left: no series
        gone = "grpc://127.0.0.1:9"  # joins and leaves before the watcher counts it
        for leaving in (False, True):
            request = TicketSeal(key).seal_message(
                MessageKind.JOIN, {"location": gone, "leaving": leaving}
            )
            answer = msgpack.unpackb(_join(catalog_server, request))
        assert answer == {"lease": 0} and sample(up, {"worker": gone}) is None
        listed.stop(0)
        assert until(lambda: sample(up, {"worker": at_listed}) == 0)
        assert listed.probes >= 2
        calls = own_metrics.registry.get_sample_value(
            "pyairport_calls_total", {"rpc": "DoGet", "method": "-", "code": "OK"}
        )
        assert calls is None  # the probes it answered are no client's reads
    finally:
        catalog_server.serve_parts_at(None)
        workers.stop()
        listed.stop(0)
        joined.stop(0)


@pytest.mark.skipif(
    importlib.util.find_spec("deltalake") is None, reason="a worker needs deltalake"
)
def test_sighup_reaches_the_servers_own_workers(tmp_path: Path) -> None:
    """A JWT key rotated in the file serve and its workers were given: the workers take the
    new key only at the server's SIGHUP (DataWorkers.reload), as the server does."""
    import jwt

    keys = tmp_path / "jwt.key"
    keys.write_text("first-secret-of-thirty-two-bytes!!")
    flags = WorkerFlags(token_flags=["--jwt-keys", str(keys), "--jwt-algorithm", "HS256"])
    workers = DataWorkers(new_key(), 1, [], flags, _unread)  # type: ignore[arg-type]

    def refusal(secret: str) -> str:
        claims = {"sub": "alice", "exp": int(time.time()) + 600}
        token = jwt.encode(claims, secret, algorithm="HS256")
        options = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {token}".encode())])
        (at,) = workers.own_locations
        with flight.connect(at) as client:
            ticket = flight.Ticket(PREFIX + b"\0" * 64)
            with pytest.raises(flight.FlightError) as refused:
                client.do_get(ticket, options).read_all()
        return type(refused.value).__name__

    try:
        admitted, unknown = "FlightUnauthorizedError", "FlightUnauthenticatedError"
        assert refusal("first-secret-of-thirty-two-bytes!!") == admitted  # past the token
        keys.write_text("second-secret-of-thirty-two-bytes!")
        time.sleep(1.5)  # a keys file is read again at SIGHUP only, not when it changes
        assert refusal("second-secret-of-thirty-two-bytes!") == unknown
        workers.reload()
        assert until(lambda: refusal("second-secret-of-thirty-two-bytes!") == admitted)
        assert refusal("first-secret-of-thirty-two-bytes!!") == unknown
    finally:
        workers.stop()


def test_a_worker_that_does_not_see_the_lake_is_never_named(tmp_path: Path) -> None:
    """The lake not mounted where the catalog has it: every read would fail there, so the
    probe, which names the lakes' folders, finds it first and says why."""
    key = new_key()
    worker = DataWorker("grpc://127.0.0.1:0", TicketSeal(key), _unread)  # type: ignore[arg-type]
    at = f"grpc://127.0.0.1:{worker.port}"
    missing = str(tmp_path / "not-mounted")
    seen = DataWorkers(key, 0, [at], WorkerFlags(), _unread, lakes=[str(tmp_path)])  # type: ignore[arg-type]
    unseen = DataWorkers(key, 0, [at], WorkerFlags(), _unread, lakes=[str(tmp_path), missing])  # type: ignore[arg-type]
    try:
        assert _offered(seen) == [at]
        assert _offered(unseen) == []
        probe = TicketSeal(key).seal_message(
            MessageKind.PROBE, {"challenge": b"c" * 16, "lakes": [missing]}
        )
        with flight.connect(at) as client:
            with pytest.raises(flight.FlightUnauthorizedError) as refused:
                client.do_get(flight.Ticket(probe)).read_all()
        assert str(refused.value).startswith(
            f"ticket refused: this worker does not see the lake's folder {missing}."
            " Detail: Unauthorized"
        )
    finally:
        seen.stop()
        unseen.stop()
        worker.stop(0)


def test_a_worker_joins_a_tls_catalog_and_is_probed_over_tls(tmp_path: Path) -> None:
    """--join grpc+tls:// checks the catalog's certificate against --join-root-cert: with it
    the worker joins; without it (a self-signed catalog) it cannot, and is never named. The
    probe reaches a worker on grpc+tls:// (its challenge, not its certificate, vouches)."""
    cert, tls_key = _self_signed(tmp_path)
    key = new_key()
    config = ServerConfig(port=0, tls_cert=cert, tls_key=tls_key)
    with AirportServer(memory_demo_catalog(), None, config) as server:
        workers = DataWorkers(key, 0, [], WorkerFlags(), _unread)  # type: ignore[arg-type]
        server.serve_parts_at(workers)
        worker = DataWorker("grpc+tls://127.0.0.1:0", TicketSeal(key), _unread, tls=(cert, tls_key))  # type: ignore[arg-type]
        at = f"grpc+tls://127.0.0.1:{worker.port}"
        untrusting = Joiner(server.location, at, TicketSeal(key))
        try:
            time.sleep(2.0)
            assert _offered(workers) == []
            untrusting.stop()
            trusting = Joiner(server.location, at, TicketSeal(key), root_certificates=cert)
            assert until(lambda: _offered(workers) == [at])
            trusting.stop()
            assert _offered(workers) == []
        finally:
            server.serve_parts_at(None)
            workers.stop()
            worker.stop(0)
