"""Go client → pyairport: tests/interop/go/cmd/interop-client drives a running server with
arrow-go's Flight client and checks every answer; it prints one line per scenario. The same
program also runs against airport-go itself (DoExchange scenarios only), which shows its
expectations are the Go contract and not pyairport's own behaviour."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyairport.transactions import MemoryTransactionManager

from ..protocol.conftest import serving
from .conftest import pyairport_server
from .gobuild import go_server


def scenarios(program: Path, target: str) -> list[str]:
    listed = subprocess.run(
        [str(program), "-list", "-target", target], capture_output=True, text=True, check=True
    )
    return listed.stdout.split()


def run_client(program: Path, location: str, target: str) -> None:
    """Run every scenario for target; each must print "ok   <name>" and the exit code be 0."""
    result = subprocess.run(
        [str(program), "-location", location, "-target", target],
        capture_output=True,
        text=True,
        timeout=300,
    )
    print(result.stdout)  # the per-scenario report, shown with -s and in failures
    failures = [line for line in result.stdout.splitlines() if not line.startswith("ok   ")]
    assert result.returncode == 0 and not failures, failures or result.stderr
    passed = [line.removeprefix("ok   ") for line in result.stdout.splitlines()]
    assert passed == scenarios(program, target)


def test_go_client_against_pyairport_memory(go_programs: dict[str, Path]) -> None:
    with pyairport_server() as location:
        run_client(go_programs["interop-client"], location, "pyairport")


def test_go_client_expectations_hold_on_airport_go(go_programs: dict[str, Path]) -> None:
    program = go_programs["interop-client"]
    # airport-go v0.2.1 no longer serves spec 002: those scenarios are pyairport's alone
    assert set(scenarios(program, "pyairport")) - set(scenarios(program, "airport-go")) == {
        "doput_insert",
        "doput_update_returning",
        "action_delete_with_transaction",
        "spec002_errors",
    }
    with go_server() as location:
        run_client(program, location, "airport-go")


@pytest.fixture
def spark_tx_server(spark_backend: Any) -> Iterator[str]:
    """The demo catalog as Delta tables, with a transaction manager."""
    from pyairport.demo import spark_demo_catalog

    with serving(spark_demo_catalog(spark_backend), MemoryTransactionManager()) as running:
        try:
            yield running.server.location
        finally:
            running.reset()  # the Delta tables are shared with the protocol suite


@pytest.mark.spark
def test_go_client_against_pyairport_spark(
    go_programs: dict[str, Path], spark_tx_server: str
) -> None:
    run_client(go_programs["interop-client"], spark_tx_server, "pyairport")
