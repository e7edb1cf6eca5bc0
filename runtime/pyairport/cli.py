"""`pyairport` command line: serve a catalog over Arrow Flight."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from airport_contracts import Authenticator

    from .access.policy import Policy
    from .catalog import MutableCatalog

# gRPC's C core prints its own lines to stderr (e.g. a failed bind) before Python sees the
# error; the CLI reports errors itself, in one line. Set before grpc is first imported.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line (no usage dump), and keeps the settings
    its add_argument made and its subcommands' parsers (argparse keeps both private): the
    config file is read by serve's settings."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.settings: list[argparse.Action] = []  # before argparse adds --help
        self.commands: dict[str, _Parser] = {}
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.settings.append(action)
        return action

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _parser() -> _Parser:
    from .wire.compression import SETTINGS

    parser = _Parser(
        prog="pyairport", description="Arrow Flight DML server, contract-identical to airport-go."
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    commands.add_parser(
        "diff-upstream", help="compare contracts.yaml with airport-go's Go source", add_help=False
    )
    commands.add_parser(
        "hash-token",
        help="print the digest a --tokens-file keeps for a token read from stdin",
        description="Reads a bearer token from stdin and prints its digest as a --tokens-file"
        " stores it: `openssl rand -hex 32 | tee alice.token | pyairport hash-token`, then add"
        " `alice <digest>` to the tokens file.",
    )
    health = commands.add_parser(
        "health",
        help="ask a server's gRPC health service whether it is serving (exit 0) or not (1)",
        description="One grpc.health.v1 Check, as a load balancer or a container's health"
        " check asks: prints SERVING, NOT_SERVING, SERVICE_UNKNOWN or UNREACHABLE.",
    )
    health.add_argument("--host", default=None, help="the server's address (default 127.0.0.1)")
    health.add_argument("--port", type=int, default=None, help="the server's port (default 8815)")
    health.add_argument(
        "--service", default="", help='a catalog\'s name (default "": the server as a whole)'
    )
    health.add_argument("--tls", action="store_true", help="the server speaks TLS")
    health.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="take --host, --port and TLS from serve's config file",
    )
    health.add_argument("--timeout", type=float, default=5.0, help="seconds (default 5)")
    serve = commands.add_parser(
        "serve",
        help="serve Delta tables (or the in-memory demo) over Arrow Flight",
        description="Serve tables over Arrow Flight to DuckDB, arrow-go and pyarrow clients:"
        " in-memory tables (--backend memory, the default) or the Delta tables of a warehouse"
        " folder or of Spark's catalog (--backend spark; `make serve` runs this one with"
        " --demo). See the README for what each table shape supports.",
    )
    serve.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="TOML file of these settings (each flag's name with underscores, catalogs as"
        " [[catalog]] tables); a flag given here replaces the file's value",
    )
    serve.add_argument(
        "--backend",
        choices=["memory", "spark"],
        default="memory",
        help="table storage (default memory)",
    )
    serve.add_argument(
        "--warehouse",
        default="warehouse",
        help="spark: folder of the Delta tables (default ./warehouse)",
    )
    serve.add_argument(
        "--spark-master", default="local[*]", help="spark: master URL (default local[*], embedded)"
    )
    serve.add_argument(
        "--spark-catalog",
        action="store_true",
        help="spark: serve the Delta tables of Spark's catalog (its databases are schemas)"
        " instead of the --warehouse folder",
    )
    serve.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="spark: a Spark setting for the session (repeatable; spark-defaults.conf is read"
        " too), e.g. spark.sql.catalogImplementation=hive. Local Spark's driver gets a quarter"
        " of the machine's memory (1-16 GiB) unless spark.driver.memory is set here, in"
        " spark-defaults.conf or in SPARK_DRIVER_MEMORY; if its JVM dies the server exits 3",
    )
    serve.add_argument(
        "--enable-row-tracking",
        action="store_true",
        help="spark: turn Delta row tracking on for served tables that have no way to address"
        " rows, so that they take UPDATE and DELETE (upgrades those tables' Delta protocol)",
    )
    serve.add_argument(
        "--demo",
        action="store_true",
        help="spark: create and serve the demo tables (dml_schema.users, batch_schema.users,"
        " demo_schema.readonly) in the warehouse; the memory backend always serves them",
    )
    serve.add_argument(
        "--spark-remote",
        default=None,
        help="spark: a Spark Connect URL sc://host:port instead of a master",
    )
    serve.add_argument(
        "--jars-dir",
        default=None,
        help="spark: take the Delta jars from this folder (make jars) instead of having Spark"
        " fetch them from Maven Central (default)",
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    serve.add_argument(
        "--port", type=int, default=8815, help="port (default 8815; 0 picks a free one)"
    )
    serve.add_argument(
        "--catalog-name",
        "--catalog",
        dest="catalog_name",
        default="",
        help="the catalog's name, as DuckDB attaches it: ATTACH 'NAME' (TYPE airport, …)"
        " (default \"\": ATTACH '')",
    )
    serve.add_argument(
        "--add-catalog",
        action="append",
        default=[],
        metavar="NAME[=FOLDER]",
        help="serve one more catalog beside the first (repeatable): spark: the Delta tables of"
        " FOLDER as catalog NAME; memory: the demo tables as catalog NAME. DuckDB attaches each"
        " by its name; airport_databases() lists them",
    )
    serve.add_argument("--workers", type=int, default=32, help="gRPC worker threads (default 32)")
    serve.add_argument(
        "--max-message-mb", type=int, default=64, help="largest gRPC message in MiB (default 64)"
    )
    serve.add_argument(
        "--compression",
        choices=SETTINGS,
        default="auto",
        help="how DoGet streams are compressed: auto (ZSTD to a client on another host, none"
        " on this one; the default), none, lz4 or zstd",
    )
    serve.add_argument(
        "--no-transactions",
        action="store_true",
        help="serve without a TransactionManager: create_transaction answers no id, so DuckDB"
        " sends none and every statement stands alone",
    )
    serve.add_argument(
        "--transaction-timeout",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="abort a transaction still active this long after it began (DuckDB begins one"
        " per statement and only DML finishes it); 0 never does (default 3600)",
    )
    serve.add_argument(
        "--auth-token", default=None, help="require 'authorization: Bearer TOKEN' on every call"
    )
    serve.add_argument(
        "--auth-token-file", default=None, help="read the bearer token from this file instead"
    )
    serve.add_argument(
        "--tokens-file",
        default=None,
        help="identities by token: lines `IDENTITY sha256:HEX` (pyairport hash-token prints the"
        " digest); re-read when it changes and on SIGHUP",
    )
    serve.add_argument(
        "--jwt-keys",
        default=None,
        metavar="FILE",
        help="accept JWT bearer tokens signed by the key of FILE (a PEM public key or a JWKS"
        " document); the identity is the token's sub claim (--jwt-identity-claim); exp is"
        " required; re-read on SIGHUP",
    )
    serve.add_argument("--jwt-issuer", default=None, help="the iss a JWT must carry")
    serve.add_argument("--jwt-audience", default=None, help="the aud a JWT must carry")
    serve.add_argument(
        "--jwt-algorithm",
        action="append",
        default=None,
        help="a signature algorithm JWTs may use (repeatable; default RS256, ES256 and EdDSA)",
    )
    serve.add_argument(
        "--jwt-identity-claim", default="sub", help="the JWT claim that names the identity"
    )
    serve.add_argument(
        "--policy",
        default=None,
        help="TOML grants of read, write and ddl per identity, catalog and schema (see the"
        " README); needs identities; re-read on SIGHUP",
    )
    serve.add_argument(
        "--tls-cert", default=None, help="PEM certificate chain: serve over TLS (needs --tls-key)"
    )
    serve.add_argument("--tls-key", default=None, help="PEM private key for --tls-cert")
    serve.add_argument(
        "--max-row-ids",
        type=int,
        default=None,
        help="longest row_ids list a spec-002 UPDATE/DELETE may send (default: no limit)",
    )
    serve.add_argument(
        "--delta-scan-refs",
        action="store_true",
        help="spark: let DuckDB read a Delta table itself, as delta_scan of its folder, where it"
        " reads it as served (no rowid column, no column stored as another type, no deletion"
        " vector, no time point); DuckDB then needs its delta extension loaded and access to"
        " the table's files, and those reads are not covered by this server's token or TLS",
    )
    serve.add_argument(
        "--scan-parts",
        type=int,
        default=None,
        help="split a scan of more than a million rows into up to N endpoints, which DuckDB"
        " reads on threads of their own (default: one per two cores)",
    )
    serve.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="serve Prometheus metrics at http://HOST:PORT/metrics (calls, rows read and"
        " written per table, statements, transactions; no identities)",
    )
    serve.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="what pyairport logs to stderr (default INFO; Spark's own log stays at ERROR)",
    )
    parser.commands = dict(commands.choices)
    return parser


def _serve(args: argparse.Namespace) -> int:
    from .server.airport_server import AirportServer, ListenError, ServerConfig
    from .transactions import MemoryTransactionManager

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
        from .backends.scan_parts import SPLIT

        SPLIT.max_parts = args.scan_parts
    try:
        from .access.tokens import read_token

        token = read_token(args.auth_token, args.auth_token_file)
        tls = _tls(args.tls_cert, args.tls_key)
        added = _added_catalogs(args)
        authenticator, policy = _access(args, token)
    except (OSError, ValueError) as exc:
        print(f"pyairport: error: {exc}", file=sys.stderr)
        return 2
    try:
        catalogs, close_backend, engine_exit = _catalogs(args, added)
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
    )
    try:
        server = AirportServer(None, None, config, authenticator=authenticator, policy=policy)
    except ListenError as exc:
        print(f"pyairport: error: {exc}", file=sys.stderr)
        return 1
    for catalog in catalogs:
        transactions = None if args.no_transactions else MemoryTransactionManager(timeout=timeout)
        server.add_catalog(catalog, transactions)  # type: ignore[arg-type]
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    signal.signal(signal.SIGHUP, lambda *_: _reload(authenticator, policy))
    server.start()
    names = ", ".join(repr(name) for name in server.catalogs.names())
    print(
        f"pyairport serving on {server.location} (backend {args.backend}; catalogs {names})",
        flush=True,
    )
    if server.metrics_port is not None:
        print(f"pyairport metrics on http://{args.host}:{server.metrics_port}/metrics", flush=True)
    # Python runs signal handlers in the main thread only, and the kernel may deliver the
    # signal to any thread (gRPC's, Spark's): a wait without a timeout would then never wake.
    while not stop.is_set():
        stop.wait(0.2)
        status = engine_exit()
        if status is not None:  # deviation engine_failure_is_unavailable
            server.engine_lost()
            print(
                f"pyairport: error: Spark's JVM exited (status {status}): stopping so that a"
                " supervisor starts the server again (give Spark more memory with --spark-conf"
                " spark.driver.memory=…)",
                file=sys.stderr,
                flush=True,
            )
            _exit_soon()
            server.stop(grace=2.0)
            with contextlib.suppress(Exception):  # the session is gone; the staging goes too
                close_backend()
            return 3
    print("pyairport: shutting down", flush=True)
    _exit_soon()  # armed first: nothing in shutting down may keep the process alive
    server.stop(grace=2.0)
    close_backend()
    return 0


def _tls(cert: str | None, key: str | None) -> tuple[bytes | None, bytes | None]:
    if bool(cert) != bool(key):
        raise ValueError("--tls-cert and --tls-key go together")
    if not cert or not key:
        return None, None
    with open(cert, "rb") as cert_file, open(key, "rb") as key_file:
        return cert_file.read(), key_file.read()


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


def _access(
    args: argparse.Namespace, token: str | None
) -> tuple[Authenticator | None, Policy | None]:
    """The Authenticator (the shared token, a tokens file, JWTs: any of them) and the policy."""
    from .access.identities import AnyOf, JwtBearer, StaticToken, TokensFile
    from .access.policy import Policy

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
    policy = Policy.from_file(args.policy) if args.policy else None
    if policy is not None and not authenticators:
        raise ValueError("--policy grants rights to identities: give --tokens-file or --jwt-keys")
    if not authenticators:
        return None, policy
    authenticator = authenticators[0] if len(authenticators) == 1 else AnyOf(authenticators)
    return authenticator, policy


def _reload(*reloadable: object) -> None:
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


def _catalogs(
    args: argparse.Namespace, added: list[tuple[str, str]]
) -> tuple[list[MutableCatalog], Callable[[], None], Callable[[], int | None]]:
    """The catalogs to serve, the first one named --catalog-name, how to close them, and the
    exit status of the engine under them once it has stopped (None while it runs)."""
    if args.backend == "memory":
        from .demo.catalogs import memory_demo_catalog

        first = memory_demo_catalog(args.catalog_name)
        catalogs = [first] + [memory_demo_catalog(name) for name, _ in added]
        return catalogs, lambda: None, lambda: None
    from pathlib import Path

    from .backends.spark import SparkBackend
    from .backends.spark.session import default_driver_memory, jvm_exit_code, spark_session
    from .demo.catalogs import spark_demo_catalog

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
        session.stop()

    return catalogs, close, lambda: jvm_exit_code(session)


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


def _apply_config(args: argparse.Namespace, argv: list[str]) -> None:
    """The config file's settings, under the flags the command line gave."""
    from .config_file import read_config

    values = read_config(args.config, _parser().commands["serve"].settings)
    if args.command == "health":  # where the server listens, and whether with TLS
        args.host = args.host or values.get("host")
        args.port = args.port or values.get("port")
        args.tls = args.tls or bool(values.get("tls_cert"))
        return
    given = _given(argv)
    for key, value in values.items():
        if key not in given:
            setattr(args, key, value)


def _given(argv: list[str]) -> set[str]:
    """The serve settings the command line names (parsed with no defaults)."""
    parser = _parser()
    for action in parser.commands["serve"].settings:
        action.default = argparse.SUPPRESS
    return set(vars(parser.parse_args(argv))) - {"command"}


def _health(args: argparse.Namespace) -> int:
    from .server.health import check

    host = args.host or "127.0.0.1"
    target = f"[{host}]:{args.port or 8815}" if ":" in host else f"{host}:{args.port or 8815}"
    status = check(target, args.service, timeout=args.timeout, tls=args.tls)
    print(status)
    return 0 if status == "SERVING" else 1


def _hash_token() -> int:
    from .access.identities import hash_token

    token = sys.stdin.readline().strip()
    if not token:
        print("pyairport: error: no token on stdin", file=sys.stderr)
        return 2
    print(hash_token(token))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["diff-upstream"]:
        try:
            from airport_codegen.cli import diff_upstream
        except ImportError:
            print(
                "pyairport: error: diff-upstream needs the dev tools: pip install 'pyairport[dev]'",
                file=sys.stderr,
            )
            return 2
        return diff_upstream(argv[1:], prog="pyairport diff-upstream")
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "hash-token":
        return _hash_token()
    if getattr(args, "config", None):
        from .config_file import ConfigError

        try:
            _apply_config(args, argv)
        except ConfigError as exc:
            print(f"pyairport: error: {exc}", file=sys.stderr)
            return 2
    if args.command == "health":
        return _health(args)
    from .server import call_log

    call_log.install()
    logging.basicConfig(level=getattr(args, "log_level", "INFO"), format=call_log.FORMAT)
    if args.command == "serve":
        return _serve(args)
    return 2
