"""The command line's flags: every subcommand's, with their help."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn


class CommandParser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line (no usage dump), and keeps the settings
    its add_argument made and its subcommands' parsers (argparse keeps both private): the
    config file is read by serve's settings."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.settings: list[argparse.Action] = []  # before argparse adds --help
        self.commands: dict[str, CommandParser] = {}
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.settings.append(action)
        return action

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def parser() -> CommandParser:
    top = CommandParser(
        prog="pyairport", description="Arrow Flight DML server, contract-identical to airport-go."
    )
    commands = top.add_subparsers(dest="command", required=True, parser_class=CommandParser)
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
        "--no-spark-warm-up",
        action="store_true",
        help="spark: do not run each kind of statement once on scratch tables when the server"
        " starts (local Spark only; about 20 s of CPU in the background, which takes Spark's"
        " first run of a statement, several times its warm time, off the first clients')",
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
    _compression_flag(serve)
    serve.add_argument(
        "--string-dictionaries",
        action="store_true",
        help="declare and send tables' string columns as Arrow dictionaries, to every client:"
        " compressed, a low-cardinality column's bytes fall to a fraction (TPC-H lineitem's"
        " under Parquet's); DuckDB reads them as VARCHAR, pyarrow and Go clients as"
        " dictionaries. Costs the server about 30 ns a value to encode",
    )
    serve.add_argument(
        "--data-socket",
        metavar="PATH",
        help="serve the scans of clients on this host (DuckDB's reads) over a Unix socket at"
        " PATH, by Arrow C++'s Flight server, which serves several at once faster; auto: a"
        " socket of the server's own. Other clients read at the server's address as always",
    )
    serve.add_argument(
        "--data-workers",
        type=int,
        default=0,
        metavar="N",
        help="spark: start N worker processes (pyairport worker) that read and send the parts of"
        " the Delta scans of clients on this host, on Unix sockets of the server's own, so that"
        " a scan's parts are served by as many processes (default 0: none)",
    )
    serve.add_argument(
        "--data-worker",
        action="append",
        default=[],
        metavar="URI",
        help="spark: a `pyairport worker` on another host, at URI (repeatable), that serves the"
        " parts of any client's Delta scans; needs --data-key-file, the worker's --key-file",
    )
    serve.add_argument(
        "--data-key-file",
        default=None,
        metavar="FILE",
        help="the key tickets for data workers are sealed with (64 hex digits: openssl rand -hex"
        " 32), shared with the workers on other hosts, which may then also join (pyairport"
        " worker --join); default: a new one for each start, known to the server's own"
        " workers only",
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
    _token_flags(serve)
    serve.add_argument(
        "--policy",
        default=None,
        help="TOML grants of read, write and ddl per identity, catalog and schema (see the"
        " README); needs identities; re-read on SIGHUP",
    )
    _tls_flags(serve)
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
    _log_level_flag(serve)
    worker = commands.add_parser(
        "worker",
        help="serve the scan parts a catalog server (serve --data-worker, or joined) hands out",
        description="A data worker: serves DoGet of the scan parts its catalog server sealed"
        " with the key of --key-file (the catalog's --data-key-file), reading the Delta files"
        " itself; the catalog decides the grants, the worker checks the caller's token (give it"
        " the catalog's token flags) and the ticket. Needs the tables' folders at the same paths"
        " as the catalog server sees them.",
    )
    worker.add_argument(
        "--listen",
        required=True,
        metavar="URI",
        help="where to serve: grpc://HOST:PORT, grpc+tls://HOST:PORT (with --tls-cert and"
        " --tls-key) or grpc+unix://PATH; the catalog's --data-worker names the same address",
    )
    worker.add_argument(
        "--key-file",
        default=None,
        help="the key the catalog server seals tickets with (64 hex digits: openssl rand -hex"
        " 32), readable by this worker's user only",
    )
    worker.add_argument(
        "--secrets-on-stdin",
        action="store_true",
        help="read the key (and a shared bearer token) from stdin's first line, as JSON, and"
        " exit when stdin closes: how serve starts its own workers",
    )
    worker.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="serve Prometheus metrics of this worker's reads at http://HOST:PORT/metrics (HOST:"
        " --listen's; the calls, rows and bytes sent per table, as the catalog server's)",
    )
    worker.add_argument(
        "--report-on-stdout",
        action="store_true",
        help="write a JSON line on stdout as each DoGet ends: how serve's own workers add their"
        " reads to its metrics",
    )
    worker.add_argument(
        "--join",
        default=None,
        metavar="URI",
        help="the catalog server to join (its address: grpc://HOST:PORT or grpc+tls://…): it"
        " names this worker in endpoints while the worker runs, with no --data-worker; the"
        " server needs the same key (its --data-key-file)",
    )
    worker.add_argument(
        "--advertise",
        default=None,
        metavar="URI",
        help="with --join: the address clients reach this worker at (default: --listen's, with"
        " the port it got; give it when listening on 0.0.0.0 or behind a mapped port)",
    )
    worker.add_argument(
        "--join-root-cert",
        default=None,
        metavar="FILE",
        help="with --join grpc+tls://: the PEM certificates the catalog's is checked against"
        " (default: the system's)",
    )
    _token_flags(worker)
    _tls_flags(worker)
    _compression_flag(worker)
    _log_level_flag(worker)
    top.commands = dict(commands.choices)
    return top


def _compression_flag(command: CommandParser) -> None:
    from ..wire.compression import SETTINGS

    command.add_argument(
        "--compression",
        choices=SETTINGS,
        default="auto",
        help="how DoGet streams are compressed: auto (ZSTD to a client on another host, none"
        " on this one, LZ4 to both for a count's rows, whose values are null; the default),"
        " none, lz4 or zstd",
    )


def _token_flags(command: CommandParser) -> None:
    command.add_argument(
        "--auth-token", default=None, help="require 'authorization: Bearer TOKEN' on every call"
    )
    command.add_argument(
        "--auth-token-file", default=None, help="read the bearer token from this file instead"
    )
    command.add_argument(
        "--tokens-file",
        default=None,
        help="identities by token: lines `IDENTITY sha256:HEX` (pyairport hash-token prints the"
        " digest); re-read when it changes and on SIGHUP",
    )
    command.add_argument(
        "--jwt-keys",
        default=None,
        metavar="FILE",
        help="accept JWT bearer tokens signed by the key of FILE (a PEM public key or a JWKS"
        " document); the identity is the token's sub claim (--jwt-identity-claim); exp is"
        " required; re-read on SIGHUP",
    )
    command.add_argument("--jwt-issuer", default=None, help="the iss a JWT must carry")
    command.add_argument("--jwt-audience", default=None, help="the aud a JWT must carry")
    command.add_argument(
        "--jwt-algorithm",
        action="append",
        default=None,
        help="a signature algorithm JWTs may use (repeatable; default RS256, ES256 and EdDSA)",
    )
    command.add_argument(
        "--jwt-identity-claim", default="sub", help="the JWT claim that names the identity"
    )


def _tls_flags(command: CommandParser) -> None:
    command.add_argument(
        "--tls-cert", default=None, help="PEM certificate chain: serve over TLS (needs --tls-key)"
    )
    command.add_argument("--tls-key", default=None, help="PEM private key for --tls-cert")


def _log_level_flag(command: CommandParser) -> None:
    command.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="what pyairport logs to stderr (default INFO; Spark's own log stays at ERROR)",
    )
