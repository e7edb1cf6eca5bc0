"""A server with identities and /metrics, and one scrape of its metrics: shared by the
metrics tests of the protocol and DuckDB tiers."""

from __future__ import annotations

import contextlib
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from pyairport.access.identities import TokensFile, hash_token
from pyairport.demo import memory_demo_catalog
from pyairport.server import AirportServer, ServerConfig
from pyairport.transactions import MemoryTransactionManager


@contextlib.contextmanager
def metrics_server(
    folder: Path, identity: str, token: str, catalog: str = ""
) -> Iterator[AirportServer]:
    """The demo catalog named catalog, one identity holding token, /metrics on a free port."""
    tokens = folder / "tokens"
    tokens.write_text(f"{identity} {hash_token(token)}\n")
    config = ServerConfig(port=0, metrics_port=0)
    with AirportServer(
        memory_demo_catalog(catalog),
        MemoryTransactionManager(),
        config,
        authenticator=TokensFile(tokens),
    ) as running:
        yield running


class Scrape:
    """/metrics as the server answered it once: the text, and each sample by name and labels."""

    def __init__(self, server: AirportServer) -> None:
        url = f"http://127.0.0.1:{server.metrics_port}/metrics"
        self.text = urllib.request.urlopen(url).read().decode()
        self.samples: dict[tuple[str, Any], float] = {}
        for family in text_string_to_metric_families(self.text):
            for sample in family.samples:
                self.samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value

    def get(self, name: str, **labels: str) -> float:
        return self.samples.get((name, tuple(sorted(labels.items()))), 0.0)
