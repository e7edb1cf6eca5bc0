"""allocator.keep_message_memory: Flight message buffers, once freed, serve the next message
instead of being unmapped and faulted in again."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from pyairport.demo import memory_demo_catalog
from pyairport.server import ServerConfig, airport_server

# INSERTs 5 x 300k rows (64k-row messages) into a memory table through a server and a client
# in this one process; prints page faults per page of data. The table keeps the data (one
# fault per page); everything above that is message buffers faulted in afresh.
_INSERTS = """
import resource, sys
from pyairport.client import AirportClient
from pyairport.demo import generated_users, memory_demo_catalog
from pyairport.server import AirportServer, ServerConfig
config = ServerConfig(port=0, keep_message_memory=sys.argv[1] == "keep")
with AirportServer(memory_demo_catalog(), None, config) as server:
    client = AirportClient(server.location)
    data = generated_users(300_000)
    client.insert("dml_schema", "users", data, batch_rows=65_536)  # warm-up
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(5):
        client.insert("dml_schema", "users", data, batch_rows=65_536)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    client.close()
print(faults / (5 * data.nbytes / 4096))
"""


def _faults_per_page(mode: str) -> float:
    run = subprocess.run(
        [sys.executable, "-c", _INSERTS, mode], capture_output=True, text=True, check=True
    )
    return float(run.stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt settings are glibc's")
def test_message_buffers_are_reused_instead_of_faulted_in_again() -> None:
    default, kept = _faults_per_page("default"), _faults_per_page("keep")
    assert default > 2.5, f"glibc's defaults: {default:.2f} faults per page of data"
    assert kept < 2.0, f"with keep_message_memory: {kept:.2f} faults per page of data"


@pytest.mark.parametrize("keep", [True, False])
def test_the_server_applies_it_unless_told_not_to(
    keep: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[None] = []
    monkeypatch.setattr(airport_server, "keep_message_memory", lambda: calls.append(None) or True)
    config = ServerConfig(port=0) if keep else ServerConfig(port=0, keep_message_memory=False)
    airport_server.AirportServer(memory_demo_catalog(), None, config).stop(0)
    assert len(calls) == (1 if keep else 0)
