"""The data workers a catalog server hands scan parts to (data_worker.py): its own worker
processes on Unix sockets (serve --data-workers N), for clients on this host, and workers
on other hosts (serve --data-worker URI) for any client. Each part's ticket is sealed for the
caller (ticket_seal.py) and the parts go round the workers, so that one query's parts, and
several clients' queries, are read and sent by different processes.

The server's own workers are `pyairport worker` processes that end with it: each watches
its stdin, which only the server holds open, so even a server that was killed leaves none
behind. One that exits is started again; until it is up, endpoints name only the others.
Workers on other hosts are named in endpoints while they answer the server's probe, whether
the flags listed them or they joined (worker_link.py).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgpack

from airport_contracts import Context, identity_from_context

from ..dispatch import ServedScan
from ..wire.compression import on_this_host
from .data_plane import LONGEST_SOCKET_PATH
from .data_worker import PlanReader, open_sealed
from .metrics import ServerMetrics
from .ticket_seal import Sealed, TicketSeal
from .worker_link import LEASE_SECONDS, Prober, check_location, open_join
from .worker_reports import add_reports

log = logging.getLogger("pyairport.workers")

READY = "pyairport worker serving on "
"""The line a worker prints once it serves (its address follows)."""
_START_SECONDS = 60.0  # a worker imports pyarrow and delta-rs: seconds on a loaded machine
_WATCH_SECONDS = 1.0


@dataclass
class WorkerFlags:
    """What a worker the server starts needs of the server's settings: the caller's token
    checked the same ways (the shared token itself, the other token flags as serve was
    given them), how streams are compressed, and its log level."""

    token: str | None = None
    token_flags: list[str] = field(default_factory=list)  # --tokens-file, --jwt-* as given
    compression: str = "auto"
    log_level: str = "INFO"


class DataWorkers:
    """Starts `count` workers of its own (0: none) beside the `remote` ones, and takes those
    that join (take_join); stop() ends them. read_plan: how the server reads a sealed part
    itself (open_here). lease: how long a joined worker stays after its last request.
    metrics: the server's, which then count the workers (up, parts) and its own workers'
    DoGets as the server's own (worker_reports.py). lakes: the local folders of the tables
    the workers read, which a worker on another host must see to be named."""

    def __init__(
        self,
        seal_key: bytes,
        count: int,
        remote: list[str],
        flags: WorkerFlags,
        read_plan: PlanReader,
        lease: float = LEASE_SECONDS,
        metrics: ServerMetrics | None = None,
        lakes: list[str] | None = None,
    ) -> None:
        self._seal = TicketSeal(seal_key)
        self._read_plan = read_plan
        self._lease = lease
        self._metrics = metrics
        self._lakes = lakes or []
        self._remote = [self._other(check_location(at)) for at in remote]
        for worker in self._remote:
            worker.probe()
        self._joined: dict[str, _RemoteWorker] = {}
        self._joining = threading.Lock()
        self._turn = itertools.count()
        self._own: list[_OwnWorker] = []
        self._dir: Path | None = None
        self._stopping = threading.Event()
        if count:
            self._dir = _socket_folder(f"{count - 1}.sock")
            try:
                self._start_own(seal_key, count, flags)
            except BaseException:
                self.stop()
                raise
        threading.Thread(target=self._watch, name="pyairport-workers", daemon=True).start()

    @property
    def own_locations(self) -> list[str]:
        return [worker.location for worker in self._own]

    def for_peer(self, peer: str) -> _Placement | None:
        """The workers a caller at gRPC's peer may read from (the server's own only on this
        host), or None: none is up (the server then serves the parts itself)."""
        here = on_this_host(peer)
        named = {w.location: w.label for w in self._own if here and w.serving()}
        named |= {w.location: w.label for w in self._others() if w.up and (here or not w.on_socket)}
        if not named:
            return None
        return _Placement(self._seal, list(named), self._turn, named, self._metrics)

    def take_join(self, request: bytes) -> bytes:
        """A worker's join (or leave) request (worker_link.Joiner), the answer to it; the
        worker is named in endpoints once it answers the probe. JoinRefused: not taken."""
        location, leaving = open_join(self._seal, request)
        with self._joining:
            worker = self._joined.pop(location, None) if leaving else self._joined.get(location)
            if worker is None and not leaving:
                if location in (w.location for w in self._remote):
                    return _lease_answer(self._lease)  # listed: probed anyway
                worker = self._joined[location] = self._other(location)
                log.info("data worker %s joins", location)
        if leaving:
            if worker is not None:
                log.info("data worker %s leaves", location)
                self._gone(worker)
            return _lease_answer(0)
        assert worker is not None
        worker.lease_until = time.monotonic() + self._lease
        if not worker.up:
            worker.probe()  # named at once if it answers, not a second later
        return _lease_answer(self._lease)

    def open_here(self, ctx: Context, ticket: bytes) -> ServedScan:
        """A sealed ticket brought to the server itself (a client that reads every endpoint
        where it asked for them), served as a worker would."""
        return open_sealed(ctx, self._seal, self._read_plan, ticket)

    def reload(self) -> None:
        """SIGHUP to the server's own workers: they read their token files again."""
        for worker in self._own:
            worker.signal(signal.SIGHUP)

    def stop(self, grace: float = 2.0) -> None:
        self._stopping.set()
        for worker in self._own:
            worker.stop(grace)
        for remote in self._others():
            remote.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    def _start_own(self, seal_key: bytes, count: int, flags: WorkerFlags) -> None:
        assert self._dir is not None
        # Other users' clients on this host reach the sockets as they reach a loopback port
        # (the bearer token decides, as there). The key and a shared token go through the
        # worker's stdin, never a file: nothing secret stays behind a server that was killed.
        os.chmod(self._dir, 0o711)
        secrets = json.dumps({"key": seal_key.hex(), "token": flags.token}).encode() + b"\n"
        command = [
            sys.executable,
            "-m",
            "pyairport",
            "worker",
            "--secrets-on-stdin",
            "--compression",
            flags.compression,
            "--log-level",
            flags.log_level,
            *flags.token_flags,
        ]
        if self._metrics is not None:
            command.append("--report-on-stdout")
        self._own = [
            _OwnWorker(self._dir / f"{i}.sock", f"own/{i}", command, secrets, self._metrics)
            for i in range(count)
        ]
        for worker in self._own:  # started together: each takes seconds to import
            worker.start()
        for worker in self._own:  # a failure: stop() ends those that did start
            worker.wait_ready()

    def _other(self, location: str) -> _RemoteWorker:
        return _RemoteWorker(location, Prober(location, self._seal, self._lakes))

    def _others(self) -> list[_RemoteWorker]:
        """The workers on other hosts: listed, then joined."""
        with self._joining:
            return self._remote + list(self._joined.values())

    def _watch(self) -> None:
        while not self._stopping.wait(_WATCH_SECONDS):
            self._drop_expired()
            for remote in self._others():
                remote.probe()
            self._restart_exited()
            if self._metrics is not None:
                for own in self._own:
                    self._metrics.worker_up.labels(own.label).set(int(own.serving()))
                for remote in self._others():
                    if not remote.closed:  # a joined one that left meanwhile has no series
                        self._metrics.worker_up.labels(remote.label).set(int(remote.up))

    def _drop_expired(self) -> None:
        """The joined workers whose lease ended (a host gone without a word) are named no
        more."""
        now = time.monotonic()
        with self._joining:
            gone = [w for w in self._joined.values() if w.lease_until < now]
            for expired in gone:
                del self._joined[expired.location]
        for expired in gone:
            log.warning("data worker %s stopped joining; its parts go elsewhere", expired.location)
            self._gone(expired)

    def _gone(self, worker: _RemoteWorker) -> None:
        worker.close()
        if self._metrics is not None:
            with contextlib.suppress(KeyError):  # it left before the watcher counted it
                self._metrics.worker_up.remove(worker.label)

    def _restart_exited(self) -> None:
        for worker in self._own:
            if worker.exited() and not self._stopping.is_set():
                log.warning("data worker %s exited; starting it again", worker.location)
                try:
                    worker.start()
                    worker.wait_ready()
                except OSError as exc:
                    log.error("data worker %s did not start again: %s", worker.location, exc)


class _RemoteWorker:
    """A worker the server did not start, at location; up while it answers the server's
    probe (worker_link.Prober): one that is down, or holds another key, is named in no
    endpoint until it answers right. A joined one's lease_until: when it is dropped unless
    it joins again."""

    def __init__(self, location: str, prober: Prober) -> None:
        self.location = location
        self.label = location  # in the server's metrics: an address its operator gave
        self.on_socket = location.startswith("grpc+unix://")  # for clients on this host only
        self.up = False
        self.lease_until = float("inf")
        self._prober = prober
        self._probing = threading.Lock()  # the watcher's probe and a join's
        self.closed = False
        self._why = ""  # what the last failed probe found: said once, not each second

    def probe(self) -> None:
        with self._probing:
            if self.closed:  # left while the watcher held it
                return
            answers = self._prober.answers()
            why = self._prober.why
        if answers and not self.up:
            log.info("data worker %s answers", self.location)
        elif not answers and (self.up or why != self._why):
            log.warning("data worker %s: %s; its parts go elsewhere", self.location, why)
        self.up, self._why = answers, why

    def close(self) -> None:
        self.up = False
        with self._probing:
            self.closed = True
            self._prober.close()


def _lease_answer(seconds: float) -> bytes:
    """The answer to a join: how long the catalog names the worker without another."""
    answer: bytes = msgpack.packb({"lease": seconds})
    return answer


def _socket_folder(longest_name: str) -> Path:
    """A new folder for the workers' sockets: in the temporary folder (TMPDIR), or in /tmp
    where that folder's path leaves a socket's no room."""
    folder = Path(tempfile.mkdtemp(prefix="pyairport-workers-"))
    if len(os.fsencode(folder / longest_name)) <= LONGEST_SOCKET_PATH:
        return folder
    folder.rmdir()
    return Path(tempfile.mkdtemp(prefix="pyairport-workers-", dir="/tmp"))


class _OwnWorker:
    """One worker process of the server's own, on a Unix socket at path; label: its name in
    the server's metrics (the socket's path changes with each start). With metrics, what it
    reports on its stdout is added to them."""

    def __init__(
        self,
        path: Path,
        label: str,
        command: list[str],
        secrets: bytes,
        metrics: ServerMetrics | None,
    ) -> None:
        self.location = f"grpc+unix://{path}"
        self.label = label
        self._metrics = metrics
        self._path = path
        self._command = command + ["--listen", self.location]
        self._secrets = secrets
        self._process: subprocess.Popen[bytes] | None = None
        self._ready = False

    def start(self) -> None:
        self._ready = False
        self._path.unlink(missing_ok=True)
        self._process = subprocess.Popen(
            self._command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
        )
        assert self._process.stdin is not None
        self._process.stdin.write(self._secrets)
        self._process.stdin.flush()

    def wait_ready(self) -> None:
        """Until the worker says it serves; OSError if it exits or does not within
        _START_SECONDS."""
        process = self._process
        assert process is not None and process.stdout is not None
        with selectors.DefaultSelector() as waiting:
            waiting.register(process.stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + _START_SECONDS
            line = b""
            while not line.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0 or not waiting.select(left):
                    process.kill()
                    raise OSError(f"data worker {self.location} did not start in time")
                chunk = os.read(process.stdout.fileno(), 4096)
                if not chunk:
                    raise OSError(f"data worker {self.location} exited (status {process.wait()})")
                line += chunk
        if not line.decode(errors="replace").startswith(READY):
            raise OSError(f"data worker {self.location} said {line!r}")
        os.chmod(self._path, 0o666)
        self._ready = True
        if self._metrics is not None:
            threading.Thread(
                target=add_reports,
                args=(process.stdout, self._metrics),
                name=f"pyairport-{self.label}-reports",
                daemon=True,
            ).start()

    def serving(self) -> bool:
        return self._ready and not self.exited()

    def exited(self) -> bool:
        return self._process is not None and self._process.poll() is not None

    def signal(self, signum: int) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signum)

    def stop(self, grace: float) -> None:
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()  # the worker's cue to stop
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class _Placement:
    """The workers one call's endpoints go to (dispatch/scan_location.DataWorkers)."""

    seal: TicketSeal
    locations: list[str]
    turn: itertools.count[int]
    labels: dict[str, str]  # each location's label in the metrics
    metrics: ServerMetrics | None

    def endpoint(
        self,
        ctx: Context,
        table: tuple[str, str, str],
        plan: bytes,
        expected_rows: int,
        columns: list[str],
        rows_only: bool,
        string_dictionaries: bool = False,
    ) -> tuple[bytes, str]:
        sealed = Sealed(
            identity=identity_from_context(ctx),
            table=table,
            plan=plan,
            expected_rows=expected_rows,
            columns=tuple(columns),
            rows_only=rows_only,
            expires=self.seal.expiry(),
            string_dictionaries=string_dictionaries,
        )
        location = self.locations[next(self.turn) % len(self.locations)]
        if self.metrics is not None:
            self.metrics.worker_parts.labels(self.labels[location]).inc()
        return self.seal.seal(sealed), location
