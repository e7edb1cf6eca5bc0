"""A Spark lake no user can break (issue #44): a team's server over a warehouse plain Spark
wrote, with a user whose grants name one schema. Hostile names as such a user would send them,
the lake functions aimed at another schema's table, folders anyone may leave in the
warehouse — with the file system around the warehouse snapshotted before and after."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import msgpack
import pyarrow as pa
import pyarrow.flight as flight
import pytest

from airport_contracts import TicketData, flight_pb2
from pyairport.client import AirportClient
from pyairport.wire.go_text import go_quote

from ..protocol.conftest import assert_error_row, refusal
from ..team import Lake, spark_team_lake

pytestmark = pytest.mark.spark

HOSTILE = ("..", ".", "../x", "../other/evil", "/tmp/pyairport-escape", "a/b", "new\nline", "tab\t")
KEPT = ('"Q1 sales"', "été", "a b;c=d", "pyairport", "~tilde")


@pytest.fixture
def lake(spark_backend: Any, tmp_path: Path) -> Iterator[Lake]:
    with spark_team_lake(spark_backend.spark, tmp_path) as made:
        yield made


def _no_insides(message: str, lake: Lake) -> None:
    for leak in ("Traceback", "org.apache", str(lake.root), ".py", "Errno", "pyairport_ddl_"):
        assert leak not in message, message


def _tables(client: AirportClient) -> set[tuple[str, str]]:
    return {(s.name, t.name) for s in client.list_schemas() for t in client.list_tables(s.name)}


def _ddl_calls(client: AirportClient, name: str) -> dict[str, Callable[[], object]]:
    """Each DDL action a ddl grant on devs allows, bringing name in."""
    one = pa.schema([pa.field("x", pa.int64())])
    return {
        "create_schema": lambda: client.create_schema(name),
        "create_table": lambda: client.create_table("devs", name, one),
        "create_table in schema": lambda: client.create_table(name, "t0", one),
        "rename_table": lambda: client.rename_table("devs", "seed", name),
        "add_column": lambda: client.add_column("devs", "seed", pa.field(name, pa.int64())),
        "rename_column": lambda: client.rename_column("devs", "seed", "secret", name),
    }


def test_no_name_leaves_the_warehouse_or_its_schema(lake: Lake) -> None:
    """Every hostile name in every DDL action a ddl grant on devs allows: refused in one line
    naming it, nothing made anywhere, the catalog as it was."""
    before_files, before_tables = lake.files(), _tables(lake.admin)
    for name in HOSTILE:
        calls = _ddl_calls(lake.dev, name)
        for call_name, call in calls.items():
            error = refusal(call)
            assert error.code == grpc.StatusCode.INVALID_ARGUMENT, (call_name, error.message)
            assert error.message.startswith("invalid ") and go_quote(name) in error.message
            assert "\n" not in error.message
            _no_insides(error.message, lake)
    assert lake.files() == before_files
    assert _tables(lake.admin) == before_tables
    assert not list(Path("/tmp").glob("pyairport-escape*"))


def test_names_spark_cannot_keep_as_folders_are_refused_and_leave_nothing(lake: Lake) -> None:
    before = lake.files()
    one = pa.schema([pa.field("x", pa.int64())])
    cases = {
        "pyairport_ddl_new_x": "names starting with pyairport_ddl_ are the server's own",
        "é" * 80: "its folder would be 481 bytes long, more than 255"
        " (each byte outside A-Z a-z 0-9 _ - . takes three)",
    }
    for name, reason in cases.items():
        error = refusal(lambda: lake.dev.create_table("devs", name, one))  # noqa: B023
        params = {"kind": "table", "name": go_quote(name), "reason": reason}
        assert_error_row("name_invalid", params, error.code, error.message)
    error = refusal(lambda: lake.dev.create_table("devs", "t", one, checks=["x IN (SELECT 1)"]))
    assert error.code == grpc.StatusCode.INTERNAL
    assert "a subquery is not allowed" in error.message
    _no_insides(error.message, lake)
    assert lake.files() == before


def test_names_are_kept_exactly_under_folders_the_server_derives(
    lake: Lake, spark_backend: Any
) -> None:
    """Quotes, spaces, punctuation, any script: created, written, read, renamed; stored under
    derived folders inside the warehouse; listed under the same names by a new server."""
    from pyairport.backends.spark import SparkBackend

    outside = {p for p in lake.root.iterdir() if p != lake.warehouse}
    for name in KEPT:
        columns = pa.schema([pa.field(name, pa.int64()), pa.field("v (a; b)", pa.string())])
        lake.admin.create_schema(name)
        lake.admin.create_table(name, name, columns)
        rows = pa.table({name: pa.array([7], pa.int64()), "v (a; b)": ["x"]})
        lake.admin.put_insert(name, name, rows)
        lake.admin.rename_table(name, name, name + " 2")
    assert {p for p in lake.root.iterdir() if p != lake.warehouse} == outside
    reopened = SparkBackend(lake.spark, lake.warehouse)
    try:
        from airport_contracts import Context

        ctx = Context.background()
        for name in KEPT:
            schema = reopened.catalog.schema(ctx, name)
            assert schema is not None, name
            table = schema.table(ctx, name + " 2")
            assert table is not None, name
            assert table.schema.names[1:] == [name, "v (a; b)"]  # type: ignore[attr-defined]
            read = lake.admin.scan(name, name + " 2", [name, "v (a; b)"]).read_all()
            assert read.to_pylist() == [{name: 7, "v (a; b)": "x"}]
    finally:
        reopened.close()


def test_a_schema_scoped_user_reaches_no_other_schema_by_any_name(lake: Lake) -> None:
    """dev's ddl grant is on devs: other's tables are not dev's to make, move, drop or read,
    whatever the name says."""
    one = pa.schema([pa.field("x", pa.int64())])
    for call in (
        lambda: lake.dev.create_table("other", "evil", one),
        lambda: lake.dev.drop_table("other", "kept"),
        lambda: lake.dev.rename_table("other", "kept", "moved"),
        lambda: lake.dev.scan("other", "kept").read_all(),
        lambda: lake.dev.scan("hr", "salaries").read_all(),
    ):
        error = refusal(call)
        assert error.code == grpc.StatusCode.PERMISSION_DENIED, error.message
    assert ("other", "kept") in _tables(lake.admin)


def _flight_info_body(schema: str, function: str, values: list[Any]) -> bytes:
    descriptor = flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=[schema, function]
    )
    body = {
        "descriptor": descriptor.SerializeToString(),
        "parameters": _arguments(values),
        "table_input_schema": b"",
        "at_unit": "",
        "at_value": "",
    }
    return bytes(msgpack.packb(body))


def _call(lake: Lake, token: str, function: str, values: list[Any]) -> pa.Table:
    """A table function called as DuckDB calls it (flight_info, then DoGet of its ticket), by
    pyarrow.flight."""
    import pyarrow.flight as flight

    client = flight.connect(lake.server.location)
    options = flight.FlightCallOptions(headers=[(b"authorization", f"Bearer {token}".encode())])
    try:
        action = flight.Action(
            "table_function_flight_info", _flight_info_body("delta", function, values)
        )
        (result,) = client.do_action(action, options)
        info = flight.FlightInfo.deserialize(result.body.to_pybytes())
        return client.do_get(info.endpoints[0].ticket, options).read_all()
    finally:
        client.close()


def _ticket(function: str, values: list[Any]) -> flight_pb2.Ticket:
    data = TicketData(schema="delta", table_function=function, function_params=_arguments(values))
    return flight_pb2.Ticket(ticket=data.to_json())


def test_the_lake_functions_read_only_what_the_caller_may(lake: Lake, caplog: Any) -> None:
    """history and table_changes of hr.salaries, for dev who may read delta and pub only: refused
    as a scan of hr would be — at flight_info and with a forged DoGet ticket — and allowed on
    pub's table; the audit line names the table read, as it is named whatever case it was
    typed in; a refused one as typed (a schema the caller may not read is not looked into)."""
    denied = 'permission denied: "dev" has no read grant on "".' + go_quote("hr")
    for function, values in (
        ("history", ["hr.salaries"]),
        ("table_changes", ["hr.salaries", 0, None]),
    ):
        body = _flight_info_body("delta", function, values)
        error = refusal(lambda: lake.dev.action("table_function_flight_info", body))  # noqa: B023
        assert (error.code, error.message) == (grpc.StatusCode.PERMISSION_DENIED, denied)
        ticket = _ticket(function, values)
        error = refusal(
            lambda: list(lake.dev.stub.DoGet(ticket, metadata=lake.dev.metadata()))  # noqa: B023
        )
        assert (error.code, error.message) == (grpc.StatusCode.PERMISSION_DENIED, denied)
        assert _call(lake, "admin-token", function, values).num_rows > 0
    short = _ticket("table_changes", ["pub.notes"])
    error = refusal(lambda: list(lake.dev.stub.DoGet(short, metadata=lake.dev.metadata())))
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT, error.message
    _no_insides(error.message, lake)
    with caplog.at_level(logging.INFO, logger="pyairport.audit"):
        changes = _call(lake, "dev-token", "table_changes", ["pub.notes", 0, None])
        typed = _call(lake, "dev-token", "history", ["PUB.Notes"])  # found whatever its case
        with pytest.raises(flight.FlightUnauthorizedError):
            _call(lake, "dev-token", "history", ["hr.SALARIES"])
    assert sorted(changes.column("id").to_pylist()) == [1, 2]
    assert typed.num_rows > 0
    read = [r.getMessage() for r in caplog.records if " read " in r.getMessage()]
    allowed, refused = read[:-1], read[-1]
    assert len(allowed) >= 2
    assert all('dev read "".' + '"pub"."notes" rows=- ok' in m for m in allowed)
    assert 'dev read "".' + '"hr"."SALARIES" rows=- failed PERMISSION_DENIED' in refused, refused


def test_folders_anyone_leaves_in_the_warehouse_never_break_the_listing(lake: Lake) -> None:
    """A folder named with a newline holding a table, a table folder with a broken log, an
    unreadable schema folder, a stray file: the listing goes on for every identity, without
    them."""
    bad_table = lake.warehouse / "devs" / "new\nline"
    lake.spark.sql(
        f"CREATE TABLE delta.`{lake.warehouse / 'devs' / 'plain'}` (x BIGINT) USING delta"
    )
    (lake.warehouse / "devs" / "plain").rename(bad_table)
    broken = lake.warehouse / "devs" / "broken" / "_delta_log"
    broken.mkdir(parents=True)
    (broken / "00000000000000000000.json").write_text("{not json")
    (lake.warehouse / "bad\tschema" / "t" / "_delta_log").mkdir(parents=True)
    (lake.warehouse / "stray.txt").write_text("x")
    locked = lake.warehouse / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        for client in (lake.dev, lake.admin):
            tables = _tables(client)
            assert ("devs", "seed") in tables
            assert not any(name in ("new\nline", "broken") for _, name in tables)
    finally:
        locked.chmod(0o755)


def _arguments(values: list[Any]) -> bytes:
    columns = {f"param{i + 1}": [v] for i, v in enumerate(values)}
    batch = pa.record_batch(
        [
            pa.array(c, pa.string() if isinstance(c[0], str) else pa.int64())
            for c in columns.values()
        ],
        names=list(columns),
    )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def test_a_column_default_runs_nothing_of_the_servers(lake: Lake) -> None:
    """A DEFAULT is a constant of the caller's table: a subquery, reflection, the server's
    account, a value drawn anew each time, one of another type or more than one statement is
    refused in one line before the table changes at all (not even Delta's column-defaults
    feature is turned on); a constant is kept."""
    columns = pa.schema([pa.field("x", pa.int64()), pa.field("s", pa.string())])
    lake.dev.create_table("devs", "defaults", columns)
    before = lake.files()
    on_s = {
        "(SELECT max(secret) FROM other.kept)": "a subquery is not allowed",
        "reflect('java.lang.System', 'getenv', 'HOME')": "'reflect' is not allowed",
        "`reflect`('java.lang.System', 'getenv', 'HOME')": "'reflect' is not allowed",
        "IDENTIFIER('reflect')('java.lang.System', 'getenv', 'HOME')": "'IDENTIFIER(…)' is not",
        "java_method('java.lang.System', 'exit', 1)": "'java_method' is not allowed",
        "current_user()": "'current_user' is not allowed",
        "`current_user`()": "'current_user' is not allowed",
        "current_user": "'current_user' is not allowed",
        "USER ()": "'USER' is not allowed",
        "repeat('x', 2000000000)": "'repeat' is not allowed",
        "uuid()": "'uuid' is not allowed",
        "'a'; SET spark.sql.ansi.enabled = false": "Syntax error at or near ';'",
        "no_such_function(1)": "'no_such_function' is not allowed",
    }
    refused = {("s", expression): reason for expression, reason in on_s.items()}
    refused["x", "'abc'"] = "[INVALID_DEFAULT_VALUE.DATA_TYPE] "  # Spark's rule, asked first
    for (column, expression), reason in refused.items():
        error = refusal(lambda: lake.dev.set_default("devs", "defaults", column, expression))  # noqa: B023
        assert error.code == grpc.StatusCode.INTERNAL, (expression, error.message)
        assert reason in error.message and "\n" not in error.message, error.message
        _no_insides(error.message, lake)
        assert lake.files() == before, expression
    lake.dev.set_default("devs", "defaults", "s", "'select from ''user()'''")
    (folder,) = [p.parent for p in lake.warehouse.rglob("_delta_log") if "defaults" in str(p)]
    stored = lake.spark.read.format("delta").load(str(folder)).schema["s"]
    kept = lake.spark.sql("SELECT " + stored.metadata["CURRENT_DEFAULT"]).first()[0]
    assert kept == "select from 'user()'"  # DuckDB's '' is a quote, as the client meant


# CHECK constraints a ddl grant's holder might write to reach past the table or to hold the
# server's one Spark: each refused before any table is made, with what it names.
HOSTILE_CHECKS = {
    "x IN (SELECT max(secret) FROM other.kept)": "a subquery is not allowed",
    "`reflect`('java.lang.System', 'exit', 1) IS NULL": "'reflect' is not allowed",
    "IDENTIFIER('java_method')('java.lang.System', 'exit', 1) IS NULL": "'IDENTIFIER(…)' is not",
    "`current_user`() <> 'root'": "'current_user' is not allowed",
    "current_user <> 'root'": "'current_user' is not allowed",
    "s RLIKE '^(a+)+$'": "'RLIKE' is not allowed",
    "regexp_like(s, '^(a+)+$')": "'regexp_like' is not allowed",
    "s LIKE '%a%a%a%a%a%a%b'": "a LIKE pattern Spark would match by backtracking",
    "s LIKE s": "a LIKE pattern that is not a constant is not allowed",
    "length(lpad(s, 2000000000, 'x')) > 0": "'lpad' is not allowed",
    "x > 0 OR transform(array(x), y -> y) IS NULL": "'transform' is not allowed",
}


def test_a_check_constraint_runs_nothing_of_the_servers(lake: Lake) -> None:
    """A CHECK runs in the server's Spark on every write, for every user: one that names what
    no constraint needs (another table, Java, the server's account, a backtracking match, a
    value as large as the writer likes) is refused in one line, however the name is spelled,
    and no table is made; the constraints a table needs are made and hold."""
    columns = pa.schema([pa.field("x", pa.int64()), pa.field("s", pa.string())])
    before = lake.files()
    for expression, reason in HOSTILE_CHECKS.items():
        error = refusal(lambda: lake.dev.create_table("devs", "c", columns, checks=[expression]))  # noqa: B023
        assert error.code == grpc.StatusCode.INTERNAL, (expression, error.message)
        assert reason in error.message and "\n" not in error.message, error.message
        _no_insides(error.message, lake)
        assert lake.files() == before, expression
    kept = ["x BETWEEN 0 AND 10", "s LIKE 'a%' OR s IS NULL", "coalesce(upper(s), '') <> 'AX'"]
    lake.dev.create_table("devs", "c", columns, checks=kept)
    lake.dev.put_insert("devs", "c", pa.table({"x": [1, 2], "s": ["ab", None]}, columns))
    for row in ({"x": [11], "s": ["a"]}, {"x": [1], "s": ["b"]}, {"x": [1], "s": ["ax"]}):
        error = refusal(lambda: lake.dev.put_insert("devs", "c", pa.table(row, columns)))  # noqa: B023
        assert error.code == grpc.StatusCode.INVALID_ARGUMENT, error.message
    rows = lake.dev.scan("devs", "c", ["x", "s"]).read_all().sort_by("x").to_pylist()
    assert rows == [{"x": 1, "s": "ab"}, {"x": 2, "s": None}]


def test_alters_delta_would_refuse_leave_a_table_spark_wrote_as_it_was(lake: Lake) -> None:
    """devs.seed, as plain Spark wrote it (no column mapping, no type widening, no column
    defaults): each change Delta would refuse only after the server turned a feature on is
    refused first, and the table's files are as they were."""
    before = lake.files()
    cases = [
        (
            lambda: lake.dev.rename_column("devs", "seed", "secret", "ID"),
            grpc.StatusCode.ALREADY_EXISTS,
            'column "ID" already exists',
        ),
        (
            lambda: lake.dev.change_column_type("devs", "seed", pa.field("id", pa.int32())),
            grpc.StatusCode.INTERNAL,
            "failed to change column type: Delta changes a column's type only by widening it:"
            " bigint to int is not a widening",
        ),
        (
            lambda: lake.dev.set_default("devs", "seed", "id", "'abc'"),
            grpc.StatusCode.INTERNAL,
            "failed to set default: [INVALID_DEFAULT_VALUE.DATA_TYPE] ",
        ),
    ]
    for call, code, message in cases:
        error = refusal(call)
        assert error.code == code and error.message.startswith(message), error.message
        _no_insides(error.message, lake)
        assert lake.files() == before, message
    assert lake.dev.scan("devs", "seed", ["id"]).read_all().column("id").to_pylist() == [1, 2]
