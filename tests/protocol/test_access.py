"""Identities and authorization on every RPC (issue #39): a team's server (tests/team.py) with a
tokens file, JWTs and a policy. Every call a client can make, tried by each identity against
what it may and may not do, and with no token, a wrong one and bad JWTs: the refusals carry
the contract's code and message, change nothing, and never name what another catalog holds."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import msgpack
import pyarrow as pa
import pytest

from airport_contracts import Context, TicketData, flight_pb2, identity_from_context
from airport_contracts.contract import ERROR_TABLE
from pyairport.client import AirportClient
from pyairport.client.remote_catalog import endpoints_request
from pyairport.server import AirportServer
from pyairport.wire.ipc import read_message

from ..team import SECRET_NAMES, Team, make_team, team_server
from .conftest import assert_error_row, refusal

ROWS = pa.table(
    {"id": pa.array([7], pa.int64()), "name": ["Ann"], "email": ["a@x"]},
)
NEW_TABLE = pa.schema([pa.field("x", pa.int64())])


@pytest.fixture
def team(tmp_path: Path) -> Team:
    return make_team(tmp_path)


@pytest.fixture
def server(team: Team) -> Iterator[AirportServer]:
    running = team_server(team)
    yield running
    running.stop(0)


def _ticket(catalog: str, schema: str, table: str) -> flight_pb2.Ticket:
    return flight_pb2.Ticket(
        ticket=TicketData(catalog=catalog, schema=schema, table=table).to_json()
    )


def _statistics_body(schema: str) -> bytes:
    descriptor = flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=[schema, "users"]
    ).SerializeToString()
    body = {"flight_descriptor": descriptor, "column_name": "id", "type": "BIGINT"}
    return bytes(msgpack.packb(body))


Call = Callable[[AirportClient], object]
READS: dict[str, Call] = {}
WRITES: dict[str, Call] = {}
DDL: dict[str, Call] = {}


def _reads(catalog: str, schema: str) -> dict[str, Call]:
    path = flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=[schema, "users"]
    )
    return {
        "DoGet": lambda c: list(
            c.stub.DoGet(_ticket(catalog, schema, "users"), metadata=c.metadata())
        ),
        "GetFlightInfo": lambda c: c.stub.GetFlightInfo(path, metadata=c.metadata()),
        "endpoints": lambda c: c.action("endpoints", endpoints_request(schema, "users", [0], "")),
        "column_statistics": lambda c: c.action("column_statistics", _statistics_body(schema)),
        "flight_info": lambda c: c.action(
            "flight_info", msgpack.packb({"descriptor": path.SerializeToString()})
        ),
        "scan": lambda c: c.scan(schema, "users").read_all(),
    }


def _writes(schema: str) -> dict[str, Call]:
    return {
        "DoExchange insert": lambda c: c.insert(schema, "users", ROWS),
        "DoPut insert": lambda c: c.put_insert(schema, "users", ROWS),
        "DoAction delete": lambda c: c.action_delete(schema, "users", [1]),
    }


def _ddl(catalog: str, schema: str) -> dict[str, Call]:
    return {
        "create_table": lambda c: c.create_table(schema, "made", NEW_TABLE, catalog=catalog),
        "drop_table": lambda c: c.drop_table(schema, "users", catalog=catalog),
        "add_column": lambda c: c.add_column(
            schema, "users", pa.field("extra", pa.int64()), catalog=catalog
        ),
        "create_schema": lambda c: c.create_schema(f"{schema}_2", catalog=catalog),
        "drop_schema": lambda c: c.drop_schema(schema, catalog=catalog),
    }


def _catalog_wide(catalog: str) -> dict[str, Call]:
    return {
        "ListFlights": lambda c: list(
            c.stub.ListFlights(flight_pb2.Criteria(), metadata=c.metadata())
        ),
        "list_schemas": lambda c: c.list_schemas(catalog),
        "catalog_version": lambda c: c.catalog_version(catalog),
        "create_transaction": lambda c: c.begin_transaction(catalog),
    }


def _every_call(catalog: str, schema: str) -> dict[str, Call]:
    return {
        **_reads(catalog, schema),
        **_writes(schema),
        **_ddl(catalog, schema),
        **_catalog_wide(catalog),
    }


def _state(server: AirportServer) -> dict[str, Any]:
    """Everything the catalogs hold: schemas, tables, their columns and rows."""
    ctx = Context.background()
    state = {}
    for name in server.catalogs.names():
        catalog = server.catalogs.get(name).catalog  # type: ignore[union-attr]
        for schema in catalog.schemas(ctx):
            for table in schema.tables(ctx):
                key = f"{name}.{schema.name()}.{table.name()}"
                state[key] = (table.arrow_schema(None), table.to_table().to_pylist())
    return state


def _row(row_id: str) -> tuple[grpc.StatusCode, str]:
    """A parameterless error row as a client receives it."""
    row = next(r for r in ERROR_TABLE if r.id == row_id)
    return grpc.StatusCode[row.code], row.message


def _no_secret(message: str) -> None:
    for name in SECRET_NAMES:
        assert name not in message, message


# --- no identity ---------------------------------------------------------------------------


def _bad_tokens(team: Team) -> dict[str, tuple[str | None, str]]:
    """A token that is not accepted → the error row it gets."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    forger = Team(
        team.tokens,
        team.tokens_file,
        team.policy_file,
        Ed25519PrivateKey.generate(),
        team.jwt_public_file,
    )
    return {
        "none": (None, "auth_header_invalid"),
        "wrong": ("not-a-token-anyone-has", "unauthenticated"),
        "expired JWT": (team.jwt("admin", expires_in=-60), "unauthenticated"),
        "JWT of another audience": (team.jwt("admin", aud="someone-else"), "unauthenticated"),
        "JWT of another issuer": (team.jwt("admin", iss="https://evil.test"), "unauthenticated"),
        "JWT signed by another key": (forger.jwt("admin"), "unauthenticated"),
        "JWT without exp": (_jwt_without_exp(team), "unauthenticated"),
        "a tokens-file digest as the token": (
            team.tokens_file.read_text().split()[-1],
            "unauthenticated",
        ),
    }


def _jwt_without_exp(team: Team) -> str:
    import jwt

    from ..team import AUDIENCE, ISSUER

    return jwt.encode(
        {"sub": "admin", "iss": ISSUER, "aud": AUDIENCE}, team.jwt_key, algorithm="EdDSA"
    )


def _audit_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The audit lines logged, each without its time (checked: the call's seconds so far)."""
    lines = [r.getMessage() for r in caplog.records if r.name == "pyairport.audit"]
    assert all(re.search(r" took=\d+\.\d{3}s$", line) for line in lines), lines
    return [line.rsplit(" took=", 1)[0] for line in lines]


def test_every_call_without_an_accepted_token_is_unauthenticated(
    team: Team, server: AirportServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    before = _state(server)
    for case, (token, row_id) in _bad_tokens(team).items():
        for catalog in ("sales", "hr", "nope"):
            with AirportClient(server.location, token=token, catalog=catalog) as client:
                for name, call in _every_call(catalog, "dml_schema").items():
                    error = refusal(lambda call=call: call(client))
                    assert (error.code, error.message) == _row(row_id), (case, catalog, name)
                listed = refusal(
                    lambda: list(
                        client.stub.ListActions(flight_pb2.Empty(), metadata=client.metadata())
                    )
                )
                assert_error_row(row_id, {}, listed.code, listed.message)
    assert _state(server) == before  # nothing changed
    for token, _row_id in _bad_tokens(team).values():
        if token:
            assert token not in caplog.text  # never logged


# --- what each identity may do -----------------------------------------------------------------


def _client(server: AirportServer, team: Team, identity: str, catalog: str | None) -> AirportClient:
    token = team.tokens.get(identity) or team.jwt(identity)
    return AirportClient(server.location, token=token, catalog=catalog)


def test_a_reader_reads_and_is_refused_every_change(team: Team, server: AirportServer) -> None:
    before = _state(server)
    with _client(server, team, "reader", "sales") as reader:
        for call in {**_reads("sales", "dml_schema"), **_catalog_wide("sales")}.values():
            call(reader)  # allowed
        for right, calls in (
            ("write", _writes("dml_schema")),
            ("ddl", _ddl("sales", "dml_schema")),
        ):
            for name, call in calls.items():
                error = refusal(lambda call=call: call(reader))
                params = {
                    "identity": '"reader"',
                    "right": right,
                    "catalog": '"sales"',
                    "schema": '"dml_schema"',
                }
                if name == "create_schema":
                    params["schema"] = '"dml_schema_2"'
                assert_error_row("permission_denied", params, error.code, error.message)
    assert _state(server) == before


def test_a_writer_of_one_schema_changes_only_its_rows(team: Team, server: AirportServer) -> None:
    with _client(server, team, "writer", "sales") as writer:
        assert writer.insert("dml_schema", "users", ROWS).total_changed == 1
        assert writer.put_insert("dml_schema", "users", ROWS).affected_rows == 1
        before = _state(server)
        for schema in ("batch_schema", "demo_schema"):
            for call in _writes(schema).values():
                error = refusal(lambda call=call: call(writer))
                params = {
                    "identity": '"writer"',
                    "right": "write",
                    "catalog": '"sales"',
                    "schema": f'"{schema}"',
                }
                assert_error_row("permission_denied", params, error.code, error.message)
        for name, call in _ddl("sales", "dml_schema").items():
            error = refusal(lambda call=call: call(writer))
            assert error.code == grpc.StatusCode.PERMISSION_DENIED, name
        writer.scan("batch_schema", "users").read_all()  # reading the rest of sales is allowed
    assert _state(server) == before


def test_no_grant_on_a_catalog_refuses_every_call_and_never_says_whether_it_exists(
    team: Team, server: AirportServer
) -> None:
    before = _state(server)
    for catalog in ("hr", "nope"):
        with _client(server, team, "reader", catalog) as reader:
            for call in _every_call(catalog, "dml_schema").values():
                error = refusal(lambda call=call: call(reader))
                assert_error_row(
                    "catalog_authorization_failed",
                    {"error": f'"reader" has no grant on catalog "{catalog}"'},
                    error.code,
                    error.message,
                )
    with _client(server, team, "admin", "nope") as admin:  # one who may: the truth
        error = refusal(lambda: admin.list_schemas("nope"))
        assert_error_row("catalog_not_found", {"catalog": '"nope"'}, error.code, error.message)
    assert _state(server) == before


def test_a_ticket_forged_for_another_catalog_reads_nothing(
    team: Team, server: AirportServer
) -> None:
    """A ticket naming hr's table, sent by a reader of sales: routed by its catalog (DuckDB 1.4
    sends no header), it is hr's call and refused; with sales' header it does not match."""
    forged = _ticket("hr", "dml_schema", "users")
    with _client(server, team, "reader", None) as no_header:
        error = refusal(lambda: list(no_header.stub.DoGet(forged, metadata=no_header.metadata())))
        assert error.code == grpc.StatusCode.PERMISSION_DENIED
    with _client(server, team, "reader", "sales") as sales:
        error = refusal(lambda: list(sales.stub.DoGet(forged, metadata=sales.metadata())))
        assert (error.code, error.message) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            'catalog name mismatch: expected "sales", got "hr"',
        )
    secret = _ticket("hr", *SECRET_NAMES)
    with _client(server, team, "analyst", "hr") as analyst:  # may read hr, not payroll
        error = refusal(lambda: list(analyst.stub.DoGet(secret, metadata=analyst.metadata())))
        assert_error_row(
            "permission_denied",
            {"identity": '"analyst"', "right": "read", "catalog": '"hr"', "schema": '"payroll"'},
            error.code,
            error.message,
        )


def test_listings_show_only_what_the_identity_may_read(team: Team, server: AirportServer) -> None:
    with _client(server, team, "analyst", "hr") as analyst:  # a JWT identity
        assert [s.name for s in analyst.list_schemas("hr")] == ["dml_schema"]
        infos = list(analyst.stub.ListFlights(flight_pb2.Criteria(), metadata=analyst.metadata()))
        assert {tuple(i.flight_descriptor.path) for i in infos} == {("dml_schema", "users")}
        assert _databases(analyst) == ["hr"]
    with _client(server, team, "reader", "sales") as reader:
        assert _databases(reader) == ["sales"]
    with _client(server, team, "admin", "hr") as admin:
        assert {s.name for s in admin.list_schemas("hr")} >= set(SECRET_NAMES[:1])
        assert _databases(admin) == ["hr", "sales"]


def test_a_ddl_name_in_another_case_finds_only_what_the_identity_may_read(
    team: Team, server: AirportServer
) -> None:
    """DuckDB sends a DDL statement's names as typed (deviation names_any_case): one in
    another case finds the schema only among those the identity may read, and the grants are
    checked on the schema's own name. A schema the grants hide is not found so: its name in
    another case is answered as a name nothing has."""
    before = _state(server)
    with _client(server, team, "analyst", "hr") as analyst:  # reads hr's dml_schema only
        for schema, table in (("DML_SCHEMA", "USERS"), ("dml_schema", "Users")):
            error = refusal(lambda s=schema, t=table: analyst.drop_table(s, t, catalog="hr"))
            params = {
                "identity": '"analyst"',
                "right": "ddl",
                "catalog": '"hr"',
                "schema": '"dml_schema"',
            }
            assert_error_row("permission_denied", params, error.code, error.message)
        hidden, nothing = SECRET_NAMES[0].upper(), "NO_SUCH_SCHEMA"
        for schema in (hidden, nothing):
            for call in (
                lambda s=schema: analyst.drop_table(s, SECRET_NAMES[1], catalog="hr"),
                lambda s=schema: analyst.drop_schema(s, catalog="hr"),
            ):
                error = refusal(call)
                params = {**params, "schema": f'"{schema}"'}
                assert_error_row("permission_denied", params, error.code, error.message)
    assert _state(server) == before
    with _client(server, team, "admin", "hr") as admin:
        note = pa.field("note", pa.string())
        admin.add_column(SECRET_NAMES[0].upper(), SECRET_NAMES[1].title(), note, catalog="hr")
        admin.drop_table(SECRET_NAMES[0].title(), SECRET_NAMES[1].upper(), catalog="hr")
        admin.drop_schema(SECRET_NAMES[0].upper(), catalog="hr")
        assert SECRET_NAMES[0] not in {s.name for s in admin.list_schemas("hr")}


def _databases(client: AirportClient) -> list[str]:
    info = client.stub.GetFlightInfo(
        flight_pb2.FlightDescriptor(type=flight_pb2.FlightDescriptor.PATH, path=["__databases"]),
        metadata=client.metadata(),
    )
    stream = client.stub.DoGet(info.endpoint[0].ticket, metadata=client.metadata())
    from pyairport.wire.ipc import read_message

    messages = [read_message(m) for m in stream]
    schema = pa.ipc.read_schema(messages[0])
    return sorted(
        name
        for m in messages[1:]
        for name in pa.ipc.read_record_batch(m, schema).column(0).to_pylist()
    )


def test_an_admin_does_everything_in_both_catalogs(team: Team, server: AirportServer) -> None:
    for catalog in ("sales", "hr"):
        with _client(server, team, "admin", catalog) as admin:
            assert admin.insert("dml_schema", "users", ROWS).total_changed == 1
            admin.create_table("dml_schema", "made", NEW_TABLE, catalog=catalog)
            admin.drop_table("dml_schema", "made", catalog=catalog)
            admin.scan("dml_schema", "users").read_all()
    with _client(server, team, "admin", "hr") as admin:
        admin.scan(*SECRET_NAMES).read_all()


def test_the_identity_reaches_table_code_and_every_log_line(
    team: Team, server: AirportServer, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[str] = []
    table = (
        server.catalogs.get("sales")
        .catalog.schema(Context.background(), "dml_schema")
        .table(  # type: ignore[union-attr]
            Context.background(), "users"
        )
    )
    original = table.insert

    def insert(ctx: Context, rows: Any, opts: Any) -> Any:
        seen.append(identity_from_context(ctx))
        return original(ctx, rows, opts)

    table.insert = insert
    caplog.set_level(logging.DEBUG)
    with _client(server, team, "writer", "sales") as writer:
        writer.insert(
            "dml_schema",
            "users",
            ROWS,
        )
        refusal(lambda: writer.insert("batch_schema", "users", ROWS))
    assert seen == ["writer"]
    assert _audit_lines(caplog) == [
        'writer insert "sales"."dml_schema"."users" rows=1 ok',
        'writer insert "sales"."batch_schema"."users" rows=- failed PERMISSION_DENIED',
    ]
    calls = [r for r in caplog.records if r.name == "pyairport.transport"]
    assert calls and all(r.identity == "writer" for r in calls)  # type: ignore[attr-defined]


def test_a_tokens_file_is_reloaded_when_it_changes(
    team: Team, server: AirportServer, tmp_path: Path
) -> None:
    import os
    import time

    from pyairport.access.identities import hash_token

    with _client(server, team, "reader", "sales") as reader:
        reader.list_schemas("sales")
    # revoke reader, add a new token for reader
    fresh = "fresh-token-0123456789"
    text = team.tokens_file.read_text()
    kept = [line for line in text.splitlines() if not line.startswith("reader ")]
    text = "\n".join(kept) + f"\nreader {hash_token(fresh)}\n"
    team.tokens_file.write_text(text)
    os.utime(team.tokens_file, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    time.sleep(1.1)  # the file is looked at again at most once a second
    with _client(server, team, "reader", "sales") as old:
        error = refusal(lambda: old.list_schemas("sales"))
        assert_error_row("unauthenticated", {}, error.code, error.message)
    with AirportClient(server.location, token=fresh, catalog="sales") as new:
        new.list_schemas("sales")


def test_every_read_of_a_schema_without_a_grant_is_refused(
    team: Team, server: AirportServer
) -> None:
    """analyst may read hr's dml_schema only: each way of reading batch_schema is refused."""
    with _client(server, team, "analyst", "hr") as analyst:
        for call in _reads("hr", "dml_schema").values():
            call(analyst)
        for call in _reads("hr", "batch_schema").values():
            error = refusal(lambda call=call: call(analyst))
            params = {
                "identity": '"analyst"',
                "right": "read",
                "catalog": '"hr"',
                "schema": '"batch_schema"',
            }
            assert_error_row("permission_denied", params, error.code, error.message)


def test_every_dml_protocol_writes_its_audit_line(
    team: Team, server: AirportServer, caplog: pytest.LogCaptureFixture
) -> None:
    """DoExchange, spec 002's DoPut (JSON descriptor) and DoAction delete (JSON body): each
    statement's line names the table and the rows it changed."""
    caplog.set_level(logging.INFO, logger="pyairport.audit")
    with _client(server, team, "admin", "sales") as admin:
        admin.insert("dml_schema", "users", ROWS)
        admin.put_insert("dml_schema", "users", ROWS)
        rowid = admin.scan("dml_schema", "users", ["rowid"]).read_all()["rowid"][0].as_py()
        admin.action_delete("dml_schema", "users", [rowid])
    assert _audit_lines(caplog) == [
        'admin insert "sales"."dml_schema"."users" rows=1 ok',
        'admin insert "sales"."dml_schema"."users" rows=1 ok',
        'admin delete "sales"."dml_schema"."users" rows=1 ok',
    ]


@pytest.mark.parametrize("size", [9_000, 14_000, 32_000])
def test_an_identity_providers_large_jwt_is_judged_by_the_authenticator(
    team: Team, server: AirportServer, size: int
) -> None:
    """A JWT of 8-32 KiB (a provider's many claims) sent by pyarrow.flight: a good one reads, a
    forged one of the same size is UNAUTHENTICATED — never refused by gRPC for its size."""
    import pyarrow.flight as flight

    bare = team.jwt("analyst", note="")
    good = team.jwt("analyst", note="n" * ((size - len(bare)) * 3 // 4))  # base64: 4 per 3
    assert size - 8 <= len(good) <= size + 8
    forged = good[:-8] + ("A" * 8 if not good.endswith("A" * 8) else "B" * 8)
    client = flight.connect(server.location)

    def options(token: str) -> flight.FlightCallOptions:
        return flight.FlightCallOptions(
            headers=[(b"authorization", f"Bearer {token}".encode()), (b"airport-catalog", b"hr")]
        )

    try:
        path = flight.FlightDescriptor.for_path("dml_schema", "users")
        for _ in range(5):  # gRPC's soft limit refused at random: try it more than once
            assert client.get_flight_info(path, options(good)).schema is not None
            with pytest.raises(flight.FlightUnauthenticatedError) as refused:
                client.get_flight_info(path, options(forged))
            assert "unauthenticated" in str(refused.value)
    finally:
        client.close()


def test_a_users_function_authorizes_the_table_it_is_named(
    team: Team, server: AirportServer
) -> None:
    """The function API: a table function that takes `ctx` gets the caller's identity, and
    authorize_table_read refuses the table as a scan of it would be refused — the analyst, who
    may read hr's dml_schema only, cannot read payroll through a function served in
    dml_schema."""
    from pyairport.functions import authorize_table_read, table_function

    rows = pa.schema([("who", pa.string()), ("table", pa.string())])

    @table_function(params=[pa.string()], schema=rows)
    def peek(name: str, *, ctx: Context) -> pa.Table:
        schema, _, table = name.partition(".")
        authorize_table_read(ctx, schema, table)
        return pa.table({"who": [identity_from_context(ctx)], "table": [name]}, schema=rows)

    hr = server.catalogs.get("hr").catalog  # type: ignore[union-attr]
    hr.schema(Context.background(), "dml_schema").add_function(peek)

    def call(client: AirportClient, name: str) -> pa.Table:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, pa.schema([("param1", pa.string())])) as writer:
            writer.write_batch(pa.record_batch([pa.array([name])], names=["param1"]))
        path = flight_pb2.FlightDescriptor(
            type=flight_pb2.FlightDescriptor.PATH, path=["dml_schema", "peek"]
        )
        body = {
            "descriptor": path.SerializeToString(),
            "parameters": sink.getvalue().to_pybytes(),
            "table_input_schema": b"",
            "at_unit": "",
            "at_value": "",
        }
        (answer,) = client.action("table_function_flight_info", msgpack.packb(body))
        info = flight_pb2.FlightInfo.FromString(answer)
        ticket = info.endpoint[0].ticket
        schema, batches = None, []
        for data in client.stub.DoGet(ticket, metadata=client.metadata()):
            message = read_message(data)
            if schema is None:
                schema = pa.ipc.read_schema(message)
            else:
                batches.append(pa.ipc.read_record_batch(message, schema))
        return pa.Table.from_batches(batches, schema=schema)

    with _client(server, team, "analyst", "hr") as analyst:
        assert call(analyst, "dml_schema.users").to_pylist() == [
            {"who": "analyst", "table": "dml_schema.users"}
        ]
        error = refusal(lambda: call(analyst, "payroll.salaries"))
        assert (error.code, error.message) == (
            grpc.StatusCode.PERMISSION_DENIED,
            'permission denied: "analyst" has no read grant on "hr"."payroll"',
        )
