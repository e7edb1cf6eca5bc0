"""Where the DuckDB tier finds DuckDB's Airport extension, and how it loads it.

In order: `AIRPORT_EXTENSION=/path/airport.duckdb_extension`; the one `make duckdb-extension`
builds from source into `.cache/duckdb-airport/` (linked to this checkout's .venv: DuckDB's
community extensions cannot be installed on this project's machines); DuckDB's own
`INSTALL airport FROM community`, where the machine reaches DuckDB's extension repository.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BUILT = ROOT / ".cache" / "duckdb-airport" / "airport.duckdb_extension"
COMMUNITY = "community"
REQUIRED = "PYAIRPORT_REQUIRE_DUCKDB"
"""Set (by `make test` where the extension can be built) to fail instead of skipping."""

# The extension posts a telemetry event when it loads unless told not to.
os.environ.setdefault("QUERY_FARM_TELEMETRY_OPT_OUT", "1")


class Unavailable(RuntimeError):
    """No Airport extension can be loaded here; the message says why in one line."""


def _community_reachable() -> bool:
    """Whether `INSTALL airport FROM community` works here, tried in a child process so that
    a machine without DuckDB's repository costs at most a few seconds."""
    probe = (
        "import duckdb; c = duckdb.connect(); "
        "c.execute('INSTALL airport FROM community'); c.execute('LOAD airport')"
    )
    try:
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def locate() -> str:
    """The extension to LOAD: a file path, or COMMUNITY. Raises Unavailable."""
    try:
        import duckdb
    except ImportError:
        raise Unavailable("duckdb is not installed (pip install 'pyairport[duckdb]')") from None
    if duckdb.__version__ != "1.4.4":
        raise Unavailable(f"the DuckDB tier is for duckdb 1.4.4, found {duckdb.__version__}")
    given = os.environ.get("AIRPORT_EXTENSION")
    if given:
        if not Path(given).is_file():
            raise Unavailable(f"AIRPORT_EXTENSION={given} is not a file")
        return given
    if BUILT.is_file():
        return str(BUILT)
    if _community_reachable():
        return COMMUNITY
    raise Unavailable(
        "no Airport extension: `make duckdb-extension` builds one (needs ../shared/duckdb-airport), "
        "or set AIRPORT_EXTENSION=/path/airport.duckdb_extension"
    )


def connect(extension: str) -> Any:
    """A fresh in-memory DuckDB with the Airport extension loaded."""
    import duckdb

    if extension == COMMUNITY:
        connection = duckdb.connect()
        connection.execute("LOAD airport")
        return connection
    site = Path(duckdb.__file__).parents[1]
    connection = duckdb.connect(
        config={
            "allow_unsigned_extensions": "true",
            # httpfs, which Airport needs, from the duckdb-ext-httpfs package
            "extension_directory": str(site / "duckdb_ext" / "extensions"),
            "autoinstall_known_extensions": "false",
        }
    )
    connection.execute(f"LOAD '{extension}'")
    return connection
