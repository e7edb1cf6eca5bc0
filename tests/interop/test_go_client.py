"""Go client → pyairport: tests/interop/go/cmd/interop-client drives a running server with
arrow-go's Flight client and checks every answer; it prints one line per scenario. The same
program also runs against airport-go itself (DoExchange scenarios only), which shows its
expectations are the Go contract and not pyairport's own behaviour. With -dictionaries its
scans expect `--string-dictionaries`' types; -scan reads one table and reports its values."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyairport.demo import memory_demo_catalog
from pyairport.server import ServerConfig
from pyairport.transactions import MemoryTransactionManager

from ..duckdb.wide import serving_wide, wide_table
from ..protocol.conftest import serving
from .conftest import pyairport_server
from .gobuild import go_server


def scenarios(program: Path, target: str) -> list[str]:
    listed = subprocess.run(
        [str(program), "-list", "-target", target], capture_output=True, text=True, check=True
    )
    return listed.stdout.split()


def run_client(program: Path, location: str, target: str, *flags: str) -> None:
    """Run every scenario for target; each must print "ok   <name>" and the exit code be 0."""
    result = subprocess.run(
        [str(program), "-location", location, "-target", target, *flags],
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


def test_go_client_reads_string_dictionaries(go_programs: dict[str, Path]) -> None:
    """--string-dictionaries to arrow-go: every scenario's scans find the string columns
    declared and streamed as dictionaries (each batch its own) and read the same values."""
    config = ServerConfig(port=0, string_dictionaries=True)
    with serving(memory_demo_catalog(), MemoryTransactionManager(), config) as running:
        run_client(
            go_programs["interop-client"], running.server.location, "pyairport", "-dictionaries"
        )


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_go_client_reads_each_batch_its_own_dictionary(
    go_programs: dict[str, Path], compression: str
) -> None:
    """A table of three 64k-row batches, each sent with its own dictionary (Arrow's stream
    format replaces a field's dictionary): arrow-go reads every value, nulls included, as the
    table holds it, over plain and ZSTD-compressed messages."""
    config = ServerConfig(port=0, string_dictionaries=True, compression=compression)
    with serving_wide(config) as server:
        report = scan_report(go_programs["interop-client"], server.location, "-dictionaries")
    notes = wide_table().column("note").to_pylist()
    assert report["rows"] == len(notes) and report["batches"] == 3
    assert report["nulls"] == {"note": notes.count(None)}
    assert report["values"] == {"note": dict(Counter(n for n in notes if n is not None))}


def scan_report(program: Path, location: str, *flags: str) -> dict[str, Any]:
    """What the Go client's -scan prints of the wide table (data.wide)."""
    result = subprocess.run(
        [str(program), "-location", location, "-scan", "data.wide", *flags],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


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
