"""Fixtures for the cross-implementation suite: airport-go's server (built from the Go module
in tests/interop/go) and pyairport's memory server, both serving the demo catalog."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from pyairport.demo import memory_demo_catalog
from pyairport.transactions import MemoryTransactionManager

from ..protocol.conftest import serving
from .gobuild import GoUnavailable, binaries, go_server


@pytest.fixture(scope="session")
def go_programs() -> dict[str, Path]:
    try:
        return binaries()
    except GoUnavailable as missing:
        pytest.skip(f"interop suite skipped: {missing}")


@contextmanager
def pyairport_server() -> Iterator[str]:
    """pyairport's memory backend with the demo catalog and a transaction manager."""
    with serving(memory_demo_catalog(), MemoryTransactionManager()) as running:
        yield running.server.location


@pytest.fixture
def servers(go_programs: dict[str, Path]) -> dict[str, Callable[[], AbstractContextManager[str]]]:
    """Factories for a fresh server of each implementation: {"airport-go": ..., "pyairport": ...}."""
    return {"airport-go": go_server, "pyairport": pyairport_server}
