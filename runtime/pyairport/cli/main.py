"""The command line's entry point: the subcommand the arguments name, run; the exit status."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from .flags import parser
from .serve import serve


def _py4j_chatter(record: logging.LogRecord) -> bool:
    """False for py4j's own notes below WARNING, and for its ERROR about a call to a JVM that
    is gone: it reports each connection it closes, and each such call with its traceback,
    some through the root logger, before it raises the call's error to the server, which
    says so itself (UNAVAILABLE, or the JVM's exit). A supervisor that stops the server's
    whole process group (systemd's default) stops Spark's JVM with it, and a stop printed up
    to four tracebacks. --log-level DEBUG keeps them."""
    if f"{os.sep}py4j{os.sep}" not in record.pathname:
        return True
    error = record.exc_info[1] if record.exc_info else None
    gone = isinstance(error, ConnectionError) or type(error).__name__ == "Py4JNetworkError"
    return record.levelno >= logging.WARNING and not gone


def apply_config(args: argparse.Namespace, argv: list[str]) -> None:
    """The config file's settings, under the flags the command line gave."""
    from .config_file import read_config

    values = read_config(args.config, parser().commands["serve"].settings)
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
    flags = parser()
    for action in flags.commands["serve"].settings:
        action.default = argparse.SUPPRESS
    return set(vars(flags.parse_args(argv))) - {"command"}


def _health(args: argparse.Namespace) -> int:
    from ..server.health import check

    host = args.host or "127.0.0.1"
    target = f"[{host}]:{args.port or 8815}" if ":" in host else f"{host}:{args.port or 8815}"
    status = check(target, args.service, timeout=args.timeout, tls=args.tls)
    print(status)
    return 0 if status == "SERVING" else 1


def _hash_token() -> int:
    from ..access.identities import hash_token

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
    args = parser().parse_args(argv)
    if args.command == "hash-token":
        return _hash_token()
    if getattr(args, "config", None):
        from .config_file import ConfigError

        try:
            apply_config(args, argv)
        except ConfigError as exc:
            print(f"pyairport: error: {exc}", file=sys.stderr)
            return 2
    if args.command == "health":
        return _health(args)
    from ..server import call_log

    call_log.install()
    logging.basicConfig(level=getattr(args, "log_level", "INFO"), format=call_log.FORMAT)
    if logging.getLogger().level > logging.DEBUG:
        for handler in logging.getLogger().handlers:
            handler.addFilter(_py4j_chatter)
    if args.command == "serve":
        return serve(args)
    if args.command == "worker":
        from .worker import worker

        return worker(args)
    return 2
