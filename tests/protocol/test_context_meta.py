"""The call's ContextMeta (Go's EnrichContextMetadata): what its headers say of the client
(authorization, DuckDB's trace and session ids and user agent, the catalog) reaches the table's Context, and
the trace id the server's log."""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa
import pytest

from airport_contracts import (
    Context,
    ContextMeta,
    DMLOptions,
    DMLResult,
    authorization_from_context,
    catalog_name_from_context,
    meta_from_context,
    session_id_from_context,
    trace_id_from_context,
    with_context_meta,
)
from airport_contracts.vocabulary import Header
from pyairport.backends.memory import memory_table
from pyairport.catalog import CatalogSchema, MutableCatalog
from pyairport.demo import USERS_COLUMNS

from .conftest import serving, users


class _Seeing:
    """An insertable table that keeps the ContextMeta of each call."""

    def __init__(self) -> None:
        self.inner = memory_table("users", USERS_COLUMNS)
        self.seen: list[ContextMeta | None] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def insert(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        self.seen.append(meta_from_context(ctx))
        return self.inner.insert(ctx, rows, opts)  # type: ignore[no-any-return]


def test_the_helpers_read_what_the_context_carries() -> None:
    ctx = Context.background()
    assert meta_from_context(ctx) is None and trace_id_from_context(ctx) == ""
    meta = ContextMeta(
        authorization="Bearer t", trace_id="q1", session_id="s1", catalog_name="c", user_agent="a/1"
    )
    ctx = with_context_meta(ctx, meta)
    assert meta_from_context(ctx) == meta
    assert (
        authorization_from_context(ctx),
        trace_id_from_context(ctx),
        session_id_from_context(ctx),
        catalog_name_from_context(ctx),
    ) == ("Bearer t", "q1", "s1", "c")


def test_the_headers_reach_the_tables_context_and_the_log(caplog: pytest.LogCaptureFixture) -> None:
    table = _Seeing()
    catalog = MutableCatalog("", [CatalogSchema("s", tables=[table])])  # type: ignore[list-item]
    caplog.set_level(logging.DEBUG, logger="pyairport.transport")
    with serving(catalog) as running:
        headers = {
            Header.AIRPORT_TRACE_ID: "trace-7",
            Header.AIRPORT_CLIENT_SESSION_ID: "sess-3",
            Header.AIRPORT_USER_AGENT: "airport/test",
        }
        running.client.exchange("insert", "s", "users", users([1]), headers=headers)
        running.client.insert("s", "users", users([2]))
    assert table.seen == [
        ContextMeta(trace_id="trace-7", session_id="sess-3", user_agent="airport/test"),
        ContextMeta(),
    ]
    # every line of the call carries its trace and session (call_log); the call's own line
    # names the agent
    line = next(r for r in caplog.records if r.getMessage() == "DoExchange agent=airport/test")
    assert (line.trace, line.session) == ("trace-7", "sess-3")  # type: ignore[attr-defined]
