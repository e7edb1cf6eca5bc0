"""16 clients of three identities at once on a team's server (tests/team.py): every call an
identity may make succeeds, every one it may not is refused with a message naming that
identity and nothing else; the rows each writer's statements added are exactly there."""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable
from pathlib import Path

import grpc
import pyarrow as pa

from airport_contracts import Context
from pyairport.client import AirportClient, RemoteError

from ..team import make_team, team_server

CLIENTS = 16
IDENTITIES = ("reader", "writer", "admin")
CALLS = int(os.environ.get("PYAIRPORT_LOAD_IDENTITY_CALLS", "150"))


def _row(name: str) -> pa.Table:
    return pa.table({"id": pa.nulls(1, pa.int64()), "name": [name], "email": ["e"]})


def _plan(identity: str) -> list[tuple[str, Callable[[AirportClient, str], object], str | None]]:
    """(what, call, the refusal it must get or None when it must succeed)."""

    def denied(right: str, catalog: str, schema: str) -> str:
        return f'permission denied: "{identity}" has no {right} grant on "{catalog}"."{schema}"'

    no_hr = f'catalog authorization failed: "{identity}" has no grant on catalog "hr"'
    may_write = identity in ("writer", "admin")
    return [
        ("read sales", lambda c, _: c.scan("dml_schema", "users").read_all(), None),
        (
            "insert sales",
            lambda c, tag: c.insert("dml_schema", "users", _row(tag)),
            None if may_write else denied("write", "sales", "dml_schema"),
        ),
        (
            "insert sales.batch_schema",
            lambda c, tag: c.insert("batch_schema", "users", _row(tag)),
            None if identity == "admin" else denied("write", "sales", "batch_schema"),
        ),
        (
            "list hr",
            lambda c, _: c.list_schemas("hr"),
            None if identity == "admin" else no_hr,
        ),
        (
            "create table",
            lambda c, tag: c.create_table(
                "dml_schema", f"t_{tag}", pa.schema([pa.field("x", pa.int64())]), catalog="sales"
            ),
            None if identity == "admin" else denied("ddl", "sales", "dml_schema"),
        ),
    ]


def _client_run(
    location: str,
    token: str,
    identity: str,
    k: int,
    written: list[str],
    problems: list[str],
) -> None:
    rng = random.Random(k)
    plan = _plan(identity)
    with (
        AirportClient(location, token=token, catalog="sales") as sales,
        AirportClient(location, token=token, catalog="hr") as hr,
    ):
        for j in range(CALLS):
            what, call, refusal = rng.choice(plan)
            tag = f"{identity}_{k}_{j}"
            client = hr if what == "list hr" else sales
            try:
                call(client, tag)
            except RemoteError as error:
                if refusal is None:
                    problems.append(f"{identity}: {what} refused: {error.message}")
                elif error.message != refusal or error.code != grpc.StatusCode.PERMISSION_DENIED:
                    problems.append(f"{identity}: {what}: {error.code.name} {error.message}")
                continue
            except BaseException as exc:  # a failure of the client itself
                problems.append(f"{identity}: {what}: {exc!r}")
                continue
            if refusal is not None:
                problems.append(f"{identity}: {what} was allowed")
            elif what.startswith("insert"):
                written.append(tag)


def test_sixteen_clients_of_three_identities(tmp_path: Path) -> None:
    team = make_team(tmp_path)
    server = team_server(team)
    written: list[str] = []
    problems: list[str] = []
    try:
        threads = [
            threading.Thread(
                target=_client_run,
                args=(
                    server.location,
                    team.tokens[IDENTITIES[k % 3]],
                    IDENTITIES[k % 3],
                    k,
                    written,
                    problems,
                ),
            )
            for k in range(CLIENTS)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
        assert not any(t.is_alive() for t in threads), "a client is stuck"
        assert problems == []
        ctx = Context.background()
        sales = server.catalogs.get("sales")
        assert sales is not None
        names = []
        for schema in ("dml_schema", "batch_schema"):
            table = sales.catalog.schema(ctx, schema).table(ctx, "users")
            names += table.to_table().column("name").to_pylist()
        assert sorted(names) == sorted(written)  # exactly the allowed inserts, nothing else
    finally:
        server.stop(0)
