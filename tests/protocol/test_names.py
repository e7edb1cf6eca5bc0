"""The name rule on the wire (deviation names_confined), on the memory backend: every way a
name enters — each DDL action that brings one in, each call that looks a schema or table up —
refuses a bad name with the contract's error, naming it and what is wrong, and changes
nothing; every other name is kept exactly. The Spark warehouse's side (folders) is
tests/backend/test_confinement.py."""

from __future__ import annotations

import json
from collections.abc import Callable

import msgpack
import pyarrow as pa
import pytest

from airport_contracts import Context, TicketData, flight_pb2
from pyairport.client import AirportClient, RemoteError
from pyairport.client.remote_catalog import endpoints_request
from pyairport.names import table_path

from .conftest import Running, assert_error_row, refusal

S = "lake"
ONE = pa.schema([pa.field("x", pa.int64())])

# (name, what the client is told is wrong with it)
BAD_NAMES = {
    ".": ". names a folder, not a object",
    "..": ".. names a folder, not a parent object",
    "../x": "it holds the path separator /",
    "/tmp/x": "it holds the path separator /",
    "a/b": "it holds the path separator /",
    "a\\b": "it holds the path separator \\",
    "nul\0byte": "it holds a NUL character",
    "new\nline": "it holds the control character U+000A",
    "tab\there": "it holds the control character U+0009",
    "del\x7f": "it holds the control character U+007F",
    "line\u2028sep": "it holds the control character U+2028",
    "x" * 256: "it is 256 bytes long, more than 255",
    "é" * 128: "it is 256 bytes long, more than 255",
}
EMPTY = "it is empty"  # where Go's own "… is required" row does not come first
GOOD_NAMES = ('"Q1 sales"', "été à Paris", "a;b,c{d}(e)=f", "x" * 255, "日本語", "O'Brien")


def _quoted(name: str) -> str:
    from pyairport.wire.go_text import go_quote

    return go_quote(name)


def _assert_name_refused(error: RemoteError, kind: str, name: str) -> None:
    params = {"kind": kind, "name": _quoted(name), "reason": BAD_NAMES.get(name, EMPTY)}
    assert_error_row("name_invalid", params, error.code, error.message)
    assert "\n" not in error.message  # one line, whatever the name held


def _ddl_bringing(name: str) -> dict[str, tuple[str, Callable[[AirportClient], object]]]:
    """Each DDL action that brings a name into the catalog: (the kind refused, the call)."""
    nested = pa.field("s", pa.struct([pa.field(name, pa.int64())]))
    return {
        "create_schema": ("schema", lambda c: c.create_schema(name)),
        "create_table": ("table", lambda c: c.create_table(S, name, ONE)),
        "create_table column": (
            "column",
            lambda c: c.create_table(S, "t2", pa.schema([pa.field(name, pa.int64())])),
        ),
        "create_table nested field": (
            "column",
            lambda c: c.create_table(S, "t2", pa.schema([nested])),
        ),
        "create_table field of a list's struct": (  # the element's own name is no name
            "column",
            lambda c: c.create_table(
                S, "t2", pa.schema([pa.field("l", pa.list_(pa.field("", nested.type)))])
            ),
        ),
        "rename_table": ("table", lambda c: c.rename_table(S, "t", name)),
        "add_column": ("column", lambda c: c.add_column(S, "t", pa.field(name, pa.int64()))),
        "rename_column": ("column", lambda c: c.rename_column(S, "t", "x", name)),
        "add_field": (
            "column",
            lambda c: c.add_field(S, "t", pa.field("s", pa.struct([pa.field(name, pa.int8())]))),
        ),
        "rename_field": ("column", lambda c: c.rename_field(S, "t", ["s", "a"], name)),
    }


def _lookups(name: str) -> dict[str, tuple[str, Callable[[AirportClient], object]]]:
    """Each call that looks a schema or table up by name."""

    def get(schema: str, table: str) -> Callable[[AirportClient], object]:
        ticket = TicketData(schema=schema, table=table).to_json()
        return lambda c: list(c.stub.DoGet(flight_pb2.Ticket(ticket=ticket), metadata=c.metadata()))

    def info(schema: str, table: str) -> Callable[[AirportClient], object]:
        path = flight_pb2.FlightDescriptor(
            type=flight_pb2.FlightDescriptor.PATH, path=[schema, table]
        )
        return lambda c: c.stub.GetFlightInfo(path, metadata=c.metadata())

    def statistics(schema: str, table: str) -> Callable[[AirportClient], object]:
        path = flight_pb2.FlightDescriptor(
            type=flight_pb2.FlightDescriptor.PATH, path=[schema, table]
        )
        body = {"flight_descriptor": path.SerializeToString(), "column_name": "x", "type": "BIGINT"}
        return lambda c: c.action("column_statistics", msgpack.packb(body))

    return {
        "DoGet schema": ("schema", get(name, "t")),
        "DoGet table": ("table", get(S, name)),
        "GetFlightInfo schema": ("schema", info(name, "t")),
        "GetFlightInfo table": ("table", info(S, name)),
        "endpoints schema": (
            "schema",
            lambda c: c.action("endpoints", endpoints_request(name, "t", [0], "")),
        ),
        "endpoints table": (
            "table",
            lambda c: c.action("endpoints", endpoints_request(S, name, [0], "")),
        ),
        "column_statistics table": ("table", statistics(S, name)),
        "DoExchange insert schema": (
            "schema",
            lambda c: c.insert(name, "t", pa.table({"x": pa.array([1], pa.int64())})),
        ),
        "DoExchange insert table": (
            "table",
            lambda c: c.insert(S, name, pa.table({"x": pa.array([1], pa.int64())})),
        ),
        "DoPut insert": ("table", lambda c: c.put_insert(S, name, pa.table({"x": [1]}))),
        "DoAction delete": ("table", lambda c: c.action_delete(S, name, [1])),
        "drop_table": ("table", lambda c: c.drop_table(S, name)),
        "drop_schema": ("schema", lambda c: c.drop_schema(name)),
        "add_column on a table": (
            "table",
            lambda c: c.add_column(S, name, pa.field("y", pa.int8())),
        ),
    }


@pytest.fixture
def lake(srv: Running) -> Running:
    srv.client.create_schema(S)
    columns = pa.schema([pa.field("x", pa.int64()), pa.field("s", pa.struct([("a", pa.int8())]))])
    srv.client.create_table(S, "t", columns)
    return srv


def _state(running: Running) -> list[tuple[str, str, list[str]]]:
    return [
        (schema.name, table.name, table.arrow_schema.names)
        for schema in running.client.list_schemas()
        for table in running.client.list_tables(schema.name)
    ]


@pytest.mark.parametrize("name", list(BAD_NAMES), ids=[repr(n)[:24] for n in BAD_NAMES])
def test_every_ddl_action_refuses_a_bad_name_and_changes_nothing(lake: Running, name: str) -> None:
    before = _state(lake)
    for call_name, (kind, call) in _ddl_bringing(name).items():
        error = refusal(lambda call=call: call(lake.client))  # type: ignore[misc]
        try:
            _assert_name_refused(error, kind, name)
        except AssertionError as failed:
            raise AssertionError(f"{call_name}: {error.code} {error.message!r}") from failed
    assert _state(lake) == before


@pytest.mark.parametrize("name", list(BAD_NAMES), ids=[repr(n)[:24] for n in BAD_NAMES])
def test_every_lookup_refuses_a_bad_name(lake: Running, name: str) -> None:
    lake.client.insert(S, "t", pa.table({"x": pa.array([1], pa.int64())}))
    before = _state(lake), lake.client.scan(S, "t").read_all()
    for call_name, (kind, call) in _lookups(name).items():
        error = refusal(lambda call=call: call(lake.client))  # type: ignore[misc]
        try:
            if call_name.startswith("DoExchange") and not (name.isascii() and name.isprintable()):
                continue  # a header cannot carry it: gRPC refuses to send it
            if call_name.startswith("DoExchange") and "/" in name:
                # DoExchange names its table in one header, schema/table: Go's own row first
                path = f"{name}/t" if kind == "schema" else f"{S}/{name}"
                assert_error_row("invalid_flight_path", {"path": path}, error.code, error.message)
                continue
            _assert_name_refused(error, kind, name)
        except AssertionError as failed:
            raise AssertionError(f"{call_name}: {error.code} {error.message!r}") from failed
    assert (_state(lake), lake.client.scan(S, "t").read_all()) == before


@pytest.mark.parametrize("kind", ["schema", "table"])
def test_a_lone_surrogate_a_tickets_json_brings_is_refused_by_the_name_rule(
    lake: Running, kind: str
) -> None:
    """JSON can write a surrogate no UTF-8 holds (`\\ud800`): the name rule refuses it, its
    message naming the name as Go would read it (U+FFFD); it could not be sent before."""
    names = {"schema": S, "table": "t", kind: "x\ud800"}
    ticket = json.dumps(names).encode()  # ASCII, the surrogate as its escape
    client = lake.client
    error = refusal(
        lambda: list(
            client.stub.DoGet(flight_pb2.Ticket(ticket=ticket), metadata=client.metadata())
        )
    )
    reason = "it holds the lone surrogate U+D800"
    params = {"kind": kind, "name": _quoted("x\ufffd"), "reason": reason}
    assert_error_row("name_invalid", params, error.code, error.message)


@pytest.mark.parametrize("name", GOOD_NAMES, ids=[repr(n)[:24] for n in GOOD_NAMES])
def test_any_other_name_is_kept_exactly(srv: Running, name: str) -> None:
    client = srv.client
    client.create_schema(name)
    client.create_table(name, name, pa.schema([pa.field(name, pa.int64())]))
    client.put_insert(name, name, pa.table({name: pa.array([7], pa.int64())}))  # no header
    client.add_column(name, name, pa.field(name[:-1] + "2", pa.string()))
    client.rename_table(name, name, name[:-1] + "!")
    assert name in [s.name for s in client.list_schemas()]
    (table,) = client.list_tables(name)
    assert table.name == name[:-1] + "!"
    assert table.arrow_schema.names[:2] == [name, name[:-1] + "2"]
    assert client.scan(name, name[:-1] + "!", [name]).read_all().column(name).to_pylist() == [7]


def test_an_empty_name_is_refused_where_go_requires_none(lake: Running) -> None:
    """An empty schema or table name in a DDL body is Go's own `… is required` row; an empty
    column name, which Go lets through, is the name rule's."""
    before = _state(lake)
    for call_name in ("create_table column", "create_table nested field", "add_column"):
        kind, call = _ddl_bringing("")[call_name]
        _assert_name_refused(refusal(lambda: call(lake.client)), kind, "")  # noqa: B023
    error = refusal(lambda: lake.client.create_schema(""))
    assert_error_row("schema_name_required", {}, error.code, error.message)
    assert _state(lake) == before


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("hr.salaries", ("hr", "salaries")),
        ("s.a.b", ("s", "a.b")),  # bare: the schema ends at the first dot
        ('"eu.sales".orders', ("eu.sales", "orders")),
        ('"a ""b"""."c.d"', ('a "b"', "c.d")),
        ('a"b.c', ('a"b', "c")),  # a quote inside a bare name is the name's
        ('s."""t"', ("s", '"t')),
        ("salaries", None),
        (".t", None),
        ("s.", None),
        ('"".t', None),
        ('"x', None),
        ('"x"y.t', None),
        ('"x"."y"z', None),
        ('s."t', None),
    ],
)
def test_a_functions_table_argument_names_schema_and_table(
    text: str, path: tuple[str, str] | None
) -> None:
    assert table_path(text) == path


def test_names_that_differ_only_in_case_are_one_name(lake: Running) -> None:
    """DuckDB and Delta take a column or field name whatever its case: a table with `a` and
    `A` is refused (DuckDB read the second as `A_1`, and its queries by `A` got `a`; two
    columns of one name failed every DuckDB query of the table), as are an added column and a
    rename onto a name in another case (its own too, as the Spark backend refuses it)."""
    client = lake.client
    before = _state(lake)
    same = "DuckDB and Delta take a name whatever its case"
    for columns, name, first in (
        ([pa.field("a", pa.int64()), pa.field("A", pa.string())], "A", "a"),
        ([pa.field("a", pa.int64()), pa.field("a", pa.string())], "a", "a"),
        ([pa.field("s", pa.struct([("Été", pa.int8()), ("éTÉ", pa.int8())]))], "éTÉ", "Été"),
        ([pa.field("l", pa.list_(pa.struct([("k", pa.int8()), ("K", pa.int8())])))], "K", "k"),
    ):
        error = refusal(lambda columns=columns: client.create_table(S, "t2", pa.schema(columns)))  # type: ignore[misc]
        reason = f"it is also the name of {_quoted(first)}: {same}"
        params = {"kind": "column", "name": _quoted(name), "reason": reason}
        assert_error_row("name_invalid", params, error.code, error.message)
    error = refusal(
        lambda: client.add_field(
            S, "t", pa.field("s", pa.struct([("a", pa.int8()), ("A", pa.int8())]))
        )
    )
    reason = f"it is also the name of {_quoted('a')}: {same}"
    assert_error_row(
        "name_invalid",
        {"kind": "column", "name": _quoted("A"), "reason": reason},
        error.code,
        error.message,
    )
    error = refusal(lambda: client.add_column(S, "t", pa.field("X", pa.int8())))
    assert_error_row("column_already_exists", {"column": _quoted("X")}, error.code, error.message)
    for old in ("s", "x"):
        error = refusal(lambda old=old: client.rename_column(S, "t", old, "X"))  # type: ignore[misc]
        assert_error_row(
            "column_already_exists", {"column": _quoted("X")}, error.code, error.message
        )
    error = refusal(lambda: client.rename_field(S, "t", ["s", "a"], "A"))
    # Go's rename_field has no AlreadyExists row: its "failed" one, INTERNAL
    params = {"error": "field 'A' already exists"}
    assert_error_row("rename_field_failed", params, error.code, error.message)
    assert _state(lake) == before


def test_schema_and_table_names_that_differ_only_in_case_are_one_name(lake: Running) -> None:
    """DuckDB takes a schema or table name whatever its case and lists one of two such: a
    table "T" made beside t was hidden from it, and the statements it sent to "T" went to t.
    So CREATE SCHEMA, CREATE TABLE and RENAME onto a name the catalog has in another case are
    ALREADY_EXISTS (CREATE TABLE IF NOT EXISTS answers the table of the other case); a table
    may take its own name in another case."""
    client = lake.client
    client.create_table(S, "u", ONE)
    before = _state(lake)
    error = refusal(lambda: client.create_schema(S.upper()))
    assert_error_row(
        "schema_already_exists", {"schema": _quoted(S.upper())}, error.code, error.message
    )
    for call in (
        lambda: client.create_table(S, "T", ONE),
        lambda: client.create_table(S, "T", ONE, on_conflict="replace"),
        lambda: client.rename_table(S, "u", "T"),
    ):
        error = refusal(call)
        assert_error_row("table_already_exists", {"table": _quoted("T")}, error.code, error.message)
    ignored = client.create_table(S, "T", ONE, on_conflict="ignore")
    assert ignored.name == "t"
    assert _state(lake) == before
    client.rename_table(S, "u", "U")
    assert sorted(t.name for t in client.list_tables(S)) == ["U", "t"]


def test_a_ddl_name_in_another_case_finds_the_one_object_so_named(lake: Running) -> None:
    """DuckDB sends a DDL statement's names as the user typed them (deviation
    names_any_case): each action finds its schema, table, column or struct field named in
    another case (they were NOT_FOUND). Where two objects have the name in other cases (a
    lake may hold such, made elsewhere) it finds neither: NOT_FOUND naming the name sent."""
    from pyairport.backends.memory import memory_table

    client, up = lake.client, S.upper()
    client.add_column(up, "T", pa.field("y", pa.int64()))
    client.rename_column(up, "T", "X", "x2")
    client.set_not_null(up, "T", "Y")
    client.drop_not_null(up, "T", "Y")
    client.change_column_type(up, "T", pa.field("X2", pa.int64()))
    client.rename_field(up, "T", ["S", "A"], "b")
    client.remove_column(up, "T", "Y")
    client.rename_table(up, "T", "u")
    [table] = client.list_tables(S)
    assert (table.name, table.arrow_schema.names) == ("u", ["x2", "s", "rowid"])
    assert table.arrow_schema.field("s").type == pa.struct([("b", pa.int8())])
    schema = lake.catalog.schema(Context.background(), S)
    for name in ("Two", "TWO"):
        schema.add(memory_table(name, ONE))
    error = refusal(lambda: client.drop_table(up, "two"))
    assert_error_row("ddl_table_not_found", {"table": '"two"'}, error.code, error.message)
    client.drop_table(up, "U")
    client.drop_table(up, "Two")
    client.drop_table(up, "two")  # now the one so named
    client.drop_schema(up)
    assert S not in {schema.name for schema in client.list_schemas()}


def test_a_column_named_rowid_is_refused_unless_marked_as_the_row_id(lake: Running) -> None:
    """The contract takes a field named rowid for the row id column, which the backend keeps
    itself: DuckDB's `CREATE TABLE t (rowid INTEGER, v INTEGER)` lost its rowid column unsaid.
    A field marked with is_rowid metadata still declares the row id."""
    client = lake.client
    before = _state(lake)
    data = pa.schema([pa.field("rowid", pa.int32()), pa.field("v", pa.int32())])
    error = refusal(lambda: client.create_table(S, "r", data))
    reason = (
        "the table keeps a row id column of that name: name this column otherwise"
        " (or mark it with is_rowid metadata to declare the row id)"
    )
    params = {"kind": "column", "name": _quoted("rowid"), "reason": reason}
    assert_error_row("name_invalid", params, error.code, error.message)
    assert _state(lake) == before
    marked = pa.schema(
        [pa.field("rowid", pa.int64(), metadata={"is_rowid": "1"}), ("v", pa.int32())]
    )
    created = client.create_table(S, "r", marked)
    assert [f.name for f in created.arrow_schema if f.name != "rowid"] == ["v"]
