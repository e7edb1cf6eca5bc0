"""`pyairport worker`: a data worker (server/data_worker.py) serving the scan parts its
catalog server seals, until SIGINT or SIGTERM, or, started by serve, until its stdin closes
(SIGHUP reads the tokens and keys files again). With --join it asks that catalog to name it
in endpoints while it runs (server/worker_link.py)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from .access_flags import authenticator_from, read_tls, reload_files

if TYPE_CHECKING:
    from ..server.metrics import ServerMetrics


def worker(args: argparse.Namespace) -> int:
    import pyarrow as pa

    from ..access.tokens import read_token
    from ..server.data_worker import DataWorker
    from ..server.data_workers import READY
    from ..server.metrics import ReadMetrics, ServerMetrics
    from ..server.ticket_seal import TicketSeal, key_from_hex, read_key
    from ..server.worker_reports import StdoutReport

    try:
        join_root = _check_flags(args)  # flags that cannot work together: before anything
        token = read_token(args.auth_token, args.auth_token_file)
        if args.secrets_on_stdin:
            secrets = json.loads(sys.stdin.buffer.readline() or b"{}")
            if not isinstance(secrets, dict):
                raise ValueError("stdin does not hold the worker's secrets")
            key = key_from_hex(str(secrets.get("key", "")), "stdin")
            token = secrets.get("token") or token
        elif args.key_file:
            key = read_key(args.key_file)
        else:
            raise ValueError("give --key-file (the catalog server's --data-key-file)")
        cert, tls_key = read_tls(args.tls_cert, args.tls_key)
        authenticator = authenticator_from(args, token)
    except (OSError, ValueError) as exc:
        print(f"pyairport: error: {exc}", file=sys.stderr)
        return 2
    try:  # delta-rs is imported where a read needs it: a worker without it could serve none
        import deltalake  # noqa: F401

        from ..backends.spark.detached import DetachedReader
    except ImportError as missing:
        print(
            f"pyairport: error: a worker reads Delta tables ({missing.name} is missing):"
            " pip install 'pyairport[spark]'",
            file=sys.stderr,
        )
        return 2
    tls = (cert, tls_key) if cert is not None and tls_key is not None else None
    metrics: ReadMetrics | None = StdoutReport(sys.stdout) if args.report_on_stdout else None
    served_metrics = ServerMetrics() if args.metrics_port is not None else None
    try:
        server = DataWorker(
            args.listen,
            TicketSeal(key),
            DetachedReader().read,
            authenticator,
            args.compression,
            tls,
            metrics or served_metrics,
        )
    except (OSError, pa.ArrowException) as exc:
        print(f"pyairport: error: cannot listen on {args.listen}: {exc}", file=sys.stderr)
        return 1
    try:
        metrics_at = _serve_metrics(args, served_metrics)
    except OSError as exc:
        print(f"pyairport: error: cannot serve metrics: {exc}", file=sys.stderr)
        server.stop(grace=0)
        return 1
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    signal.signal(signal.SIGHUP, lambda *_: reload_files(authenticator))
    if args.secrets_on_stdin:
        threading.Thread(target=_until_closed, args=(stop,), daemon=True).start()
    served_at = _served_at(args.listen, server.port)
    joiner = None
    if args.join:
        from ..server.worker_link import Joiner, check_location

        try:
            advertise = check_location(args.advertise or served_at)
        except ValueError as exc:
            print(f"pyairport: error: give --advertise: {exc}", file=sys.stderr)
            server.stop(grace=0)
            return 2
        joiner = Joiner(args.join, advertise, TicketSeal(key), join_root)
    print(f"{READY}{served_at}", flush=True)
    if metrics_at is not None:
        print(f"pyairport worker metrics on {metrics_at}", flush=True)
    while not stop.is_set():  # a timeout: signal handlers run in the main thread only
        stop.wait(0.2)
    if joiner is not None:
        joiner.stop()  # first: the catalog stops naming this worker before it goes
    server.stop(grace=2.0)
    if served_metrics is not None:
        served_metrics.stop()
    return 0


def _serve_metrics(args: argparse.Namespace, metrics: ServerMetrics | None) -> str | None:
    """Where metrics are served (--metrics-port, on --listen's host), or None."""
    if metrics is None:
        return None
    host = urlparse(args.listen).hostname or "127.0.0.1"  # a Unix socket's: this host
    return f"http://{host}:{metrics.serve(host, args.metrics_port)}/metrics"


def _check_flags(args: argparse.Namespace) -> bytes | None:
    """The root certificates of --join-root-cert; ValueError for flags that cannot work."""
    from ..server.worker_link import check_location

    if args.metrics_port is not None:
        if not 0 <= args.metrics_port <= 65535:
            raise ValueError(f"--metrics-port {args.metrics_port} is not a port number")
        if args.report_on_stdout:
            raise ValueError("--report-on-stdout is serve's: give --metrics-port without it")
    if args.join is None:
        if args.advertise or args.join_root_cert:
            raise ValueError("--advertise and --join-root-cert go with --join")
        return None
    if args.secrets_on_stdin:
        raise ValueError("a worker serve starts (--secrets-on-stdin) does not join: serve names it")
    if not args.join.startswith(("grpc://", "grpc+tcp://", "grpc+tls://")):
        raise ValueError(f"--join {args.join!r}: the catalog's grpc:// or grpc+tls:// address")
    check_location(args.join)
    if args.join_root_cert is None:
        return None
    with open(args.join_root_cert, "rb") as handle:
        return handle.read()


def _until_closed(stop: threading.Event) -> None:
    """Sets stop once stdin ends: the server that started this worker has stopped (or died)."""
    sys.stdin.buffer.read()  # returns at end of file: nothing more is ever written to it
    stop.set()


def _served_at(listen: str, port: int) -> str:
    """listen with the port it was given, where it asked for any (port 0)."""
    if listen.startswith(("grpc://", "grpc+tcp://", "grpc+tls://")) and listen.endswith(":0"):
        return f"{listen[:-2]}:{port}"
    return listen
