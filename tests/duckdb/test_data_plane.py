"""Scans over the data socket (`--data-socket`): both DuckDB clients, each in its own Python
with its own build of the extension, follow the endpoints to the Unix socket, send their token
there and read exactly what they read at the catalog's address; DuckDB's UPDATE and DELETE,
which scan the rowids first, change exactly the rows they name."""

from __future__ import annotations

from contextlib import AbstractContextManager

import pytest

from pyairport.server import AirportServer, ServerConfig
from pyairport.server.data_plane import AUTO

from .conftest import OpenSession
from .sqllogic.clients import CLIENTS, Client
from .wide import ROWS, ask, serving_wide

pytestmark = pytest.mark.duckdb

TOKEN = "data-plane-token"


def _serving(
    data_socket: str | None, token: str | None = None, name: str = "lake"
) -> AbstractContextManager[AirportServer]:
    return serving_wide(ServerConfig(port=0, data_socket=data_socket, auth_token=token), name)


@pytest.mark.parametrize("client", CLIENTS, ids=[c.name for c in CLIENTS])
def test_both_duckdb_clients_read_over_the_data_socket_exactly(client: Client) -> None:
    with _serving(None) as server:
        at_the_catalog = ask(client, server.location)
    assert at_the_catalog[0] == str(ROWS)
    with _serving(AUTO) as server:
        assert server.data_plane is not None
        assert ask(client, server.location) == at_the_catalog
        assert server.data_plane.scans == 1


def test_duckdb_sends_its_token_to_the_data_socket_and_changes_exactly_its_rows(
    open_session: OpenSession,
) -> None:
    with _serving(AUTO, TOKEN, name="") as server:
        assert server.data_plane is not None
        duck = open_session(server.location, TOKEN)
        assert duck.value("SELECT count(*) FROM lake.data.wide WHERE id % 10 = 3") == ROWS // 10
        duck.run("UPDATE lake.data.wide SET note = 'changed' WHERE id < 1000")
        duck.run("DELETE FROM lake.data.wide WHERE id >= 100000")
        assert duck.run(
            "SELECT count(*), count(*) FILTER (note = 'changed'), max(id) FROM lake.data.wide"
        ) == [(100_000, 1000, 99_999)]
        assert server.data_plane.scans >= 3  # the read, and the rowid scans of both changes
