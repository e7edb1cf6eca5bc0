"""`pyairport` command line: serve a catalog over Arrow Flight (serve.py), from the flags
(flags.py) or a config file; ask a server's health; hash a token; diff the contract with
airport-go's source (main.py)."""

import os

# gRPC's C core prints its own lines to stderr (e.g. a failed bind) before Python sees the
# error; the CLI reports errors itself, in one line. Set before grpc is first imported.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

from .main import main  # noqa: E402

__all__ = ["main"]
