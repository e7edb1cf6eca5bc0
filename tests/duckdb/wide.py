"""A table of several 64k-row batches, of the column kinds a stream's encoding treats apart,
and one query over it asked by a DuckDB client in its own Python (tests/duckdb/sqllogic/
clients.py): how the DuckDB tier shows that two ways of serving a scan read the same rows."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa
import pytest

from pyairport.backends.memory import memory_table
from pyairport.backends.memory.catalog import MemoryCatalog, MemorySchema
from pyairport.server import AirportServer, ServerConfig
from pyairport.transactions import MemoryTransactionManager

from .extension import REQUIRED
from .sqllogic.clients import Client

ROWS = 150_000

QUERY = (
    "SELECT count(*), sum(id), sum(amount), count(DISTINCT note), min(day), max(day),"
    " sum(length(note)), count(note) FROM lake.data.wide"
)

_RUN = """
import json, sys
import duckdb
extension, extension_dir, location, catalog = sys.argv[1:5]
config = {"allow_unsigned_extensions": "true", "autoinstall_known_extensions": "false"}
if extension_dir:
    config["extension_directory"] = extension_dir
db = duckdb.connect(config=config)
db.execute(f"LOAD '{extension}'")
db.execute(f"ATTACH '{catalog}' AS lake (TYPE AIRPORT, LOCATION '{location}')")
for query in sys.argv[5:]:
    print(json.dumps([[str(v) for v in row] for row in db.execute(query).fetchall()]))
"""


def wide_table() -> pa.Table:
    ids = pa.array(range(ROWS), pa.int64())
    return pa.table(
        {
            "id": ids,
            "amount": pa.array([i * 0.25 for i in range(ROWS)], pa.float64()),
            "note": pa.array([None if i % 7 == 0 else f"note {i % 1000}" for i in range(ROWS)]),
            "day": pa.array([i % 20000 for i in range(ROWS)], pa.date32()),
        }
    )


@contextmanager
def serving_wide(config: ServerConfig, name: str = "lake") -> Iterator[AirportServer]:
    """A server of the wide table as `name`.data.wide (DuckDB sessions attach the catalog
    ""; QUERY's clients, "lake")."""
    catalog = MemoryCatalog(name)
    rows = wide_table()
    schema = catalog.add_schema(MemorySchema("data"))
    schema.add(memory_table("wide", rows.schema, rows=rows))
    server = AirportServer(catalog, MemoryTransactionManager(), config).start()
    try:
        yield server
    finally:
        server.stop(0)


def ask(client: Client, location: str, query: str = QUERY, catalog: str = "lake") -> list[str]:
    """The first row of query's answer (as text) from client, attached as `lake` to the
    catalog at location."""
    return session(client, location, [query], catalog)[0][0]


def session(
    client: Client, location: str, queries: list[str], catalog: str = "lake"
) -> list[list[list[str]]]:
    """Each query's rows (as text), run in order in one session of client, attached as `lake`
    to the catalog at location."""
    why = client.missing()
    if why:
        if os.environ.get(REQUIRED):
            pytest.fail(f"the DuckDB client {client.name} cannot run: {why}", pytrace=False)
        pytest.skip(f"the DuckDB client {client.name} cannot run: {why}")
    extension_dir = str(client.extension_dir) if client.extension_dir is not None else ""
    done = subprocess.run(
        [str(client.python), "-c", _RUN, str(client.extension), extension_dir, location, catalog]
        + queries,
        capture_output=True,
        text=True,
        timeout=300,
        env={"QUERY_FARM_TELEMETRY_OPT_OUT": "1", "PATH": "/usr/bin:/bin", "HOME": "/tmp"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.strip().splitlines()]
