"""`pyairport serve`: the backend, catalogs, access and server the flags describe, run until
SIGINT or SIGTERM (SIGHUP reads the tokens, keys and policy again), or until Spark's JVM
exits (status 3, so that a supervisor starts it again). Local Spark warms up in the
background once the server is up (backends/spark/warm_up.py)."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from .access_flags import authenticator_from, read_tls, reload_files, token_flags

if TYPE_CHECKING:
    from airport_contracts import Authenticator

    from ..access.policy import Policy
    from ..catalog import MutableCatalog
    from ..server.data_workers import DataWorkers
    from ..server.metrics import ServerMetrics


def serve(args: argparse.Namespace) -> int:
    """`pyairport serve`: the catalogs the flags name, served until a signal (or Spark's
    JVM) stops them; the exit status."""
    from ..server.airport_server import AirportServer, ListenError, ServerConfig
    from ..transactions import MemoryTransactionManager

    for flag, port in (("--port", args.port), ("--metrics-port", args.metrics_port)):
        if port is not None and not 0 <= port <= 65535:
            print(f"pyairport: error: {flag} {port} is not a port number", file=sys.stderr)
            return 2
    if not args.transaction_timeout >= 0:  # also refuses nan
        print("pyairport: error: --transaction-timeout must be 0 or more", file=sys.stderr)
        return 2
    if args.scan_parts is not None:
        if args.scan_parts < 1:
            print("pyairport: error: --scan-parts must be 1 or more", file=sys.stderr)
            return 2
        from ..backends.scan_parts import SPLIT

        SPLIT.max_parts = args.scan_parts
    if args.data_workers < 0:
        print("pyairport: error: --data-workers must be 0 or more", file=sys.stderr)
        return 2
    if (args.data_workers or args.data_worker or args.data_key_file) and args.backend != "spark":
        print(
            "pyairport: error: data workers read Delta tables: use --backend spark", file=sys.stderr
        )
        return 2
    if args.string_dictionaries and args.delta_scan_refs:
        # a delta_scan reads the files' strings where the catalog declared dictionaries
        print(
            "pyairport: error: --string-dictionaries and --delta-scan-refs: choose one",
            file=sys.stderr,
        )
        return 2
    try:
        from ..access.tokens import read_token

        token = read_token(args.auth_token, args.auth_token_file)
        tls = read_tls(args.tls_cert, args.tls_key)
        added = _added_catalogs(args)
        authenticator = authenticator_from(args, token)
        policy = _policy(args, authenticator)
        data_key = _data_key(args)
    except (OSError, ValueError) as exc:
        print(f"pyairport: error: {exc}", file=sys.stderr)
        return 2
    try:
        engine = _engine(args, added)
    except Exception as exc:  # SparkSetupError and Spark start-up failures: one line
        print(f"pyairport: error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    timeout = args.transaction_timeout or None
    config = ServerConfig(
        args.host,
        args.port,
        args.workers,
        args.max_message_mb * 1024 * 1024,
        max_row_ids=args.max_row_ids,
        tls_cert=tls[0],
        tls_key=tls[1],
        metrics_port=args.metrics_port,
        compression=args.compression,
        data_socket=args.data_socket,
        string_dictionaries=args.string_dictionaries,
    )
    try:
        server = AirportServer(None, None, config, authenticator=authenticator, policy=policy)
    except ListenError as exc:
        print(f"pyairport: error: {exc}", file=sys.stderr)
        engine.close()  # its staging folder and Spark's JVM
        return 1
    try:
        workers = _data_workers(args, data_key, token, server.metrics, added)
    except OSError as exc:
        print(f"pyairport: error: {exc}", file=sys.stderr)
        engine.close()
        return 1
    server.serve_parts_at(workers)
    for catalog in engine.catalogs:
        transactions = None if args.no_transactions else MemoryTransactionManager(timeout=timeout)
        server.add_catalog(catalog, transactions)  # type: ignore[arg-type]
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    signal.signal(signal.SIGHUP, lambda *_: reload_files(authenticator, policy, workers))
    try:
        server.start()
    except ListenError as exc:
        print(f"pyairport: error: {exc}", file=sys.stderr)
        if workers is not None:
            workers.stop()
        engine.close()
        return 1
    names = ", ".join(repr(name) for name in server.catalogs.names())
    print(
        f"pyairport serving on {server.location} (backend {args.backend}; catalogs {names})",
        flush=True,
    )
    if server.data_plane is not None:
        print(f"pyairport scans for this host on {server.data_plane.location}", flush=True)
    if workers is not None:
        for at in workers.own_locations:
            print(f"pyairport data worker on {at}", flush=True)
    if server.metrics_port is not None:
        print(f"pyairport metrics on http://{args.host}:{server.metrics_port}/metrics", flush=True)
    if engine.warm_up is not None:
        threading.Thread(
            target=_warm_up, args=(engine, stop), name="pyairport-warm-up", daemon=True
        ).start()
    # Python runs signal handlers in the main thread only, and the kernel may deliver the
    # signal to any thread (gRPC's, Spark's): a wait without a timeout would then never wake.
    while not stop.is_set():
        stop.wait(0.2)
        status = engine.exit_status()
        # a stop signal to the whole process group (systemd's default) stops the JVM too
        if status is not None and not stop.is_set():  # deviation engine_failure_is_unavailable
            server.engine_lost()
            print(
                f"pyairport: error: Spark's JVM exited (status {status}): stopping so that a"
                " supervisor starts the server again (give Spark more memory with --spark-conf"
                " spark.driver.memory=…)",
                file=sys.stderr,
                flush=True,
            )
            _exit_soon()
            server.stop(grace=2.0)  # and its data workers
            with contextlib.suppress(Exception):  # the session is gone; the staging goes too
                engine.close()
            return 3
    _exit_soon()  # armed first: nothing in shutting down may keep the process alive, not
    # even a print to an output nobody reads any more
    print("pyairport: shutting down", flush=True)
    server.stop(grace=2.0)  # and its data workers
    engine.close()
    return 0


def _exit_soon(seconds: float = 30.0) -> None:
    """End the process this long after a signal even if shutting down hangs: stopping the
    server, the backend (Spark's JVM) or interpreter teardown (an embedded JVM's gateway can)."""

    def force() -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    timer = threading.Timer(seconds, force)
    timer.daemon = True
    timer.start()


def _data_key(args: argparse.Namespace) -> bytes | None:
    """The key of --data-key-file, or a new one for the server's own workers (None: no
    workers)."""
    from ..server.ticket_seal import new_key, read_key

    if args.data_key_file:
        return read_key(args.data_key_file)
    if args.data_worker:
        raise ValueError("--data-worker needs --data-key-file: the key its worker was given")
    return new_key() if args.data_workers else None


def _data_workers(
    args: argparse.Namespace,
    key: bytes | None,
    token: str | None,
    metrics: ServerMetrics | None,
    added: list[tuple[str, str]],
) -> DataWorkers | None:
    """The data workers the flags name, the server's own started, and those that join with
    the key (None: no key, no workers); those on other hosts must see the lakes' folders."""
    if key is None:
        return None
    from ..backends.spark.detached import DetachedReader
    from ..server.data_workers import DataWorkers, WorkerFlags

    flags = WorkerFlags(token, token_flags(args), args.compression, args.log_level)
    read = DetachedReader().read
    lakes = [] if args.spark_catalog else [args.warehouse, *(folder for _, folder in added)]
    lakes = [os.path.abspath(folder) for folder in lakes if "://" not in folder]
    return DataWorkers(
        key, args.data_workers, args.data_worker, flags, read, metrics=metrics, lakes=lakes
    )


def _policy(args: argparse.Namespace, authenticator: Authenticator | None) -> Policy | None:
    from ..access.policy import Policy

    policy = Policy.from_file(args.policy) if args.policy else None
    if policy is not None and authenticator is None:
        raise ValueError("--policy grants rights to identities: give --tokens-file or --jwt-keys")
    return policy


def _added_catalogs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """--add-catalog NAME[=FOLDER] as (name, folder); every name once, beside --catalog-name."""
    added: list[tuple[str, str]] = []
    names = {args.catalog_name}
    for value in args.add_catalog:
        name, _, folder = value.partition("=")
        if name in names:
            raise ValueError(f"--add-catalog {value}: catalog {name!r} is served already")
        if args.backend == "spark" and not folder:
            raise ValueError(f"--add-catalog {value}: the spark backend needs NAME=FOLDER")
        if args.backend == "memory" and folder:
            raise ValueError(f"--add-catalog {value}: a memory catalog has no folder")
        names.add(name)
        added.append((name, folder))
    return added


class Engine(NamedTuple):
    """What serves the catalogs: the catalogs (the first one named --catalog-name), how to
    close them, the exit status of the engine under them once it has stopped (None while it
    runs), and what to run in the background once the server is up (None: nothing)."""

    catalogs: list[MutableCatalog]
    close: Callable[[], None]
    exit_status: Callable[[], int | None]
    warm_up: Callable[[], float] | None = None


def _warm_up(engine: Engine, stop: threading.Event) -> None:
    """The engine's warm-up, said on stdout when done; a failure is said, not raised (the
    first statements then pay Spark's first run), and nothing is said once the server stops
    or its engine has exited (the main loop says that)."""
    assert engine.warm_up is not None
    try:
        seconds = engine.warm_up()
    except Exception as exc:
        if not stop.is_set() and engine.exit_status() is None:
            from ..backends.spark.sql import one_line

            print(
                f"pyairport: warning: Spark's warm-up failed: {one_line(exc)}",
                file=sys.stderr,
                flush=True,
            )
        return
    print(f"pyairport: Spark warmed up in {seconds:.1f} s", flush=True)


def _engine(args: argparse.Namespace, added: list[tuple[str, str]]) -> Engine:
    """The backend the flags name, with its catalogs."""
    if args.backend == "memory":
        from ..demo.catalogs import memory_demo_catalog

        first = memory_demo_catalog(args.catalog_name)
        catalogs = [first] + [memory_demo_catalog(name) for name, _ in added]
        return Engine(catalogs, lambda: None, lambda: None)
    from pathlib import Path

    from ..backends.spark import SparkBackend
    from ..backends.spark.session import (
        default_driver_memory,
        engine_lost,
        jvm_exit_code,
        spark_session,
    )
    from ..backends.spark.warm_up import warm_up
    from ..demo.catalogs import spark_demo_catalog

    conf = {}
    for setting in args.spark_conf:
        key, equals, value = setting.partition("=")
        if not equals or not key:
            raise ValueError(f"--spark-conf {setting}: expected KEY=VALUE")
        conf[key.strip()] = value
    if not args.spark_remote and not _driver_memory_set(conf):
        conf["spark.driver.memory"] = default_driver_memory()
    warehouse = Path(args.warehouse)
    for name, folder in added:
        if not Path(folder).is_dir():
            raise ValueError(f"--add-catalog {name}={folder}: no such folder")
    session = spark_session(
        master=args.spark_master,
        remote=args.spark_remote,
        warehouse=None if args.spark_catalog else warehouse,
        jars_dir=Path(args.jars_dir) if args.jars_dir else None,
        conf=conf,
    )
    backend = SparkBackend(
        session,
        warehouse,
        remote=args.spark_remote,
        session_catalog=args.spark_catalog,
        enable_row_tracking=args.enable_row_tracking,
        delta_scan_refs=args.delta_scan_refs,
    )
    catalog = spark_demo_catalog(backend) if args.demo else backend.catalog
    backend.serve_lake_functions()
    catalog.rename(args.catalog_name)
    backends, catalogs = [backend], [catalog]
    for name, folder in added:
        lake = SparkBackend(
            session,
            Path(folder),
            remote=args.spark_remote,
            enable_row_tracking=args.enable_row_tracking,
            delta_scan_refs=args.delta_scan_refs,
        )
        lake.serve_lake_functions()
        lake.catalog.rename(name)
        backends.append(lake)
        catalogs.append(lake.catalog)

    def close() -> None:
        for each in backends:
            each.close()
        try:
            session.stop()
        except Exception as exc:
            if not engine_lost(exc):
                raise  # else the JVM went first, stopped with the server's process group

    # The warm-up's tables go in a folder of this machine: only a local Spark shares it.
    local = not args.spark_remote and args.spark_master.startswith("local")
    scratch = backend.staging / "warm-up"  # goes with the staging, even if the server is killed
    warm = (lambda: warm_up(session, scratch)) if local and not args.no_spark_warm_up else None
    return Engine(catalogs, close, lambda: jvm_exit_code(session), warm)


def _driver_memory_set(conf: dict[str, str]) -> bool:
    """Whether the operator sized Spark's driver: --spark-conf, SPARK_DRIVER_MEMORY or
    spark-defaults.conf."""
    from pathlib import Path

    if "spark.driver.memory" in conf or os.environ.get("SPARK_DRIVER_MEMORY"):
        return True
    folders = [os.environ.get("SPARK_CONF_DIR"), os.environ.get("SPARK_HOME")]
    for folder in filter(None, folders):
        for defaults in (
            Path(folder) / "spark-defaults.conf",
            Path(folder) / "conf" / "spark-defaults.conf",
        ):
            if defaults.is_file() and any(
                line.split()[:1] == ["spark.driver.memory"]
                for line in defaults.read_text(encoding="utf-8", errors="replace").splitlines()
            ):
                return True
    return False
