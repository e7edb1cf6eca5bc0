"""What DuckDB's extension says of itself on every call reaches the server: its trace id (one
per query), session id and user agent, in the call's ContextMeta and the server's log."""

from __future__ import annotations

import logging
import re

import pytest

from .conftest import OpenSession

pytestmark = pytest.mark.duckdb


def test_a_duckdb_session_shows_its_trace_ids_in_the_log(
    open_session: OpenSession, caplog: pytest.LogCaptureFixture
) -> None:
    from pyairport.demo import memory_demo_catalog
    from pyairport.server import AirportServer, ServerConfig

    caplog.set_level(logging.DEBUG, logger="pyairport.transport")
    server = AirportServer(memory_demo_catalog(), None, ServerConfig(port=0)).start()
    try:
        db = open_session(server.location)
        db.run("SELECT * FROM lake.demo_schema.readonly")
        db.run("SELECT lake.demo_schema.email_domain('a@b')")
    finally:
        server.stop(0)
    # each call's line names its agent; every line of the call carries its trace and session
    calls = [
        (re.fullmatch(r"(\w+) agent=(.+)", r.getMessage()), r)
        for r in caplog.records
        if r.name == "pyairport.transport"
    ]
    seen = [(m.group(1), r.trace, r.session) for m, r in calls if m]
    agents = {m.group(2) for m, _ in calls if m}
    # the scan (endpoints, then DoGet) is one query, the function call another: each names it
    traces = {rpc: trace for rpc, trace, _ in seen if trace != "-"}
    assert set(traces) >= {"DoAction", "DoGet", "DoExchange"}
    assert traces["DoAction"] == traces["DoGet"] != traces["DoExchange"]
    # every call, the catalog's too, names the one DuckDB session
    assert len({session for _, _, session in seen}) == 1 and seen[0][2] != "-"
    # and the extension's user agent, the same on every call
    assert len(agents) == 1 and "-" not in agents and seen
