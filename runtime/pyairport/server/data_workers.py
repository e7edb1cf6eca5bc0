"""The data workers a catalog server hands scan parts to (data_worker.py): its own worker
processes on Unix sockets (serve --data-workers N), for clients on this host, and workers
on other hosts (serve --data-worker URI) for any client. Each part's ticket is sealed for the
caller (ticket_seal.py) and the parts go round the workers, so that one query's parts, and
several clients' queries, are read and sent by different processes.

The server's own workers are `pyairport worker` processes that end with it: each watches
its stdin, which only the server holds open, so even a server that was killed leaves none
behind. One that exits is started again; until it is up, endpoints name only the others.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from airport_contracts import Context, identity_from_context

from ..dispatch import ServedScan
from ..wire.compression import on_this_host
from .data_plane import LONGEST_SOCKET_PATH
from .data_worker import PlanReader, open_sealed
from .ticket_seal import Sealed, TicketSeal

log = logging.getLogger("pyairport.workers")

READY = "pyairport worker serving on "
"""The line a worker prints once it serves (its address follows)."""
_START_SECONDS = 60.0  # a worker imports pyarrow and delta-rs: seconds on a loaded machine
_WATCH_SECONDS = 1.0
_PROBE_SECONDS = 0.5


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
    """Starts `count` workers of its own (0: none) beside the `remote` ones; stop() ends
    them. read_plan: how the server reads a sealed part itself (open_here)."""

    def __init__(
        self,
        seal_key: bytes,
        count: int,
        remote: list[str],
        flags: WorkerFlags,
        read_plan: PlanReader,
    ) -> None:
        self._seal = TicketSeal(seal_key)
        self._read_plan = read_plan
        self._remote = [_RemoteWorker(location) for location in remote]
        for worker in self._remote:
            worker.probe()
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
        if self._own or self._remote:
            threading.Thread(target=self._watch, name="pyairport-workers", daemon=True).start()

    @property
    def own_locations(self) -> list[str]:
        return [worker.location for worker in self._own]

    def for_peer(self, peer: str) -> _Placement | None:
        """The workers a caller at gRPC's peer may read from (the server's own only on this
        host), or None: none is up (the server then serves the parts itself)."""
        here = on_this_host(peer)
        locations = [w.location for w in self._own if here and w.serving()]
        locations += [w.location for w in self._remote if w.up]
        return _Placement(self._seal, locations, self._turn) if locations else None

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
        self._own = [_OwnWorker(self._dir / f"{i}.sock", command, secrets) for i in range(count)]
        for worker in self._own:  # started together: each takes seconds to import
            worker.start()
        for worker in self._own:  # a failure: stop() ends those that did start
            worker.wait_ready()

    def _watch(self) -> None:
        while not self._stopping.wait(_WATCH_SECONDS):
            for remote in self._remote:
                remote.probe()
            for worker in self._own:
                if worker.exited() and not self._stopping.is_set():
                    log.warning("data worker %s exited; starting it again", worker.location)
                    try:
                        worker.start()
                        worker.wait_ready()
                    except OSError as exc:
                        log.error("data worker %s did not start again: %s", worker.location, exc)


class _RemoteWorker:
    """A worker the server did not start, at location; up while it accepts connections (a
    worker that is down is named in no endpoint until it accepts them again)."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.up = False
        self._where = urlparse(location)

    def probe(self) -> None:
        try:
            self._connect().close()
        except OSError:
            if self.up:
                log.warning("data worker %s does not answer; its parts go elsewhere", self.location)
            self.up = False
            return
        if not self.up:
            log.info("data worker %s answers", self.location)
        self.up = True

    def _connect(self) -> socket.socket:
        if self._where.scheme == "grpc+unix":
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            unix.settimeout(_PROBE_SECONDS)
            try:
                unix.connect(self._where.path)
            except OSError:
                unix.close()
                raise
            return unix
        address = (self._where.hostname, self._where.port)
        return socket.create_connection(address, timeout=_PROBE_SECONDS)


def _socket_folder(longest_name: str) -> Path:
    """A new folder for the workers' sockets: in the temporary folder (TMPDIR), or in /tmp
    where that folder's path leaves a socket's no room."""
    folder = Path(tempfile.mkdtemp(prefix="pyairport-workers-"))
    if len(os.fsencode(folder / longest_name)) <= LONGEST_SOCKET_PATH:
        return folder
    folder.rmdir()
    return Path(tempfile.mkdtemp(prefix="pyairport-workers-", dir="/tmp"))


class _OwnWorker:
    """One worker process of the server's own, on a Unix socket at path."""

    def __init__(self, path: Path, command: list[str], secrets: bytes) -> None:
        self.location = f"grpc+unix://{path}"
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

    def endpoint(
        self,
        ctx: Context,
        table: tuple[str, str, str],
        plan: bytes,
        expected_rows: int,
        columns: list[str],
        rows_only: bool,
    ) -> tuple[bytes, str]:
        sealed = Sealed(
            identity=identity_from_context(ctx),
            table=table,
            plan=plan,
            expected_rows=expected_rows,
            columns=tuple(columns),
            rows_only=rows_only,
            expires=self.seal.expiry(),
        )
        location = self.locations[next(self.turn) % len(self.locations)]
        return self.seal.seal(sealed), location
