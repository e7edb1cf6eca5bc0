"""DDL over the wire (protocol §5) on the memory backend: every action's success, what it
changes as the catalog and scans then show it, and every error row with its code and message.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import pyarrow as pa
import pytest
import zstandard

from airport_contracts import Context, RenameTableParams, Unimplemented
from airport_contracts.contract import ERROR_TABLE
from airport_contracts.dispatch import DDL_ACTIONS
from airport_contracts.vocabulary import Action
from pyairport.backends.memory.catalog import MemoryCatalog, MemorySchema
from pyairport.catalog import CatalogSchema, MutableCatalog
from pyairport.client import AirportClient, RemoteError

from ..contract.tables import BaseTable
from .conftest import Running, assert_error_row, serving

S = "lake"
COLUMNS = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("tags", pa.struct([("a", pa.int32())])),
    ]
)


def _error(call: Callable[[], object]) -> RemoteError:
    with pytest.raises(RemoteError) as err:
        call()
    return err.value


@pytest.fixture
def lake(srv: Running) -> Running:
    """The memory server with schema lake and its table t (id NOT NULL, name, tags struct)."""
    srv.client.create_schema(S, comment="the lake")
    srv.client.create_table(S, "t", COLUMNS, not_null=[0])
    return srv


def test_a_ddl_session(srv: Running) -> None:
    """The DDL a DuckDB user types, each step read back as DuckDB reads the catalog."""
    client = srv.client
    version = client.catalog_version()
    contents = client.create_schema(S, comment="the lake", tags={"team": "data"})
    assert contents.url is None and len(contents.sha256) == 64
    assert [s.name for s in client.list_schemas()].count(S) == 1
    created = client.create_table(S, "t", COLUMNS, not_null=[0])
    assert created is not None and created.name == "t" and created.rowid_column == "rowid"
    assert created.arrow_schema.field("id").nullable is False
    client.insert(S, "t", pa.table({"id": [1, 2], "name": ["a", "b"]}))
    after = client.add_column(S, "t", pa.field("score", pa.float64()))
    assert after is not None and after.arrow_schema.names[-2:] == ["score", "rowid"]
    assert client.scan(S, "t", ["id", "score"]).read_all().to_pylist() == [
        {"id": 1, "score": None},
        {"id": 2, "score": None},
    ]
    client.rename_column(S, "t", "name", "label")
    client.change_column_type(S, "t", pa.field("score", pa.float32()))
    defaulted = client.set_default(S, "t", "label", "'none'")
    assert defaulted is not None
    assert defaulted.arrow_schema.field("label").metadata == {b"default": b"'none'"}
    client.rename_field(S, "t", ["tags", "a"], "b")
    client.add_field(S, "t", pa.field("tags", pa.struct([("b", pa.int32()), ("c", pa.string())])))
    client.remove_field(S, "t", ["tags", "c"])
    required = client.set_not_null(S, "t", "label")
    assert required is not None and required.arrow_schema.field("label").nullable is False
    optional = client.drop_not_null(S, "t", "label")
    assert optional is not None and optional.arrow_schema.field("label").nullable is True
    client.remove_column(S, "t", "score")
    (table,) = client.list_tables(S)
    assert table.arrow_schema.names == ["id", "label", "tags", "rowid"]
    assert table.arrow_schema.field("tags").type == pa.struct([("b", pa.int32())])
    assert table.arrow_schema.field("label").metadata == {b"default": b"'none'"}
    rows = client.scan(S, "t", ["id", "label"]).read_all().to_pylist()
    assert rows == [{"id": 1, "label": "a"}, {"id": 2, "label": "b"}]
    renamed = client.rename_table(S, "t", "t2")
    assert renamed is not None and renamed.name == "t2"
    assert [t.name for t in client.list_tables(S)] == ["t2"]
    client.drop_table(S, "t2")
    client.drop_schema(S)
    assert S not in [s.name for s in client.list_schemas()]
    assert client.catalog_version() > version


def test_create_table_as_select_is_create_then_insert(srv: Running) -> None:
    """DuckDB's CREATE TABLE … AS SELECT: create_table, then the DoExchange INSERT."""
    srv.client.create_schema(S)
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["x", "y", "z"]})
    srv.client.create_table(S, "ctas", rows.schema)
    answer = srv.client.insert(S, "ctas", rows, returning=True)
    assert answer.total_changed == 3
    scanned = srv.client.scan(S, "ctas", ["id", "name"]).read_all()
    assert scanned.to_pylist() == rows.to_pylist()


def test_created_tables_take_dml_like_any_other(lake: Running) -> None:
    client = lake.client
    client.insert(S, "t", pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}))
    found = client.scan(S, "t", ["rowid", "id"]).read_all()
    rowid_of = dict(zip(found["id"].to_pylist(), found["rowid"].to_pylist(), strict=True))
    client.update(S, "t", pa.table({"name": ["B"], "rowid": [rowid_of[2]]}))
    client.delete(S, "t", [rowid_of[3]])
    rows = client.scan(S, "t", ["id", "name"]).read_all().to_pylist()
    assert rows == [{"id": 1, "name": "a"}, {"id": 2, "name": "B"}]


def test_not_null_refuses_rows_and_changes_nothing(lake: Running) -> None:
    error = _error(lambda: lake.client.insert(S, "t", pa.table({"id": [None], "name": ["x"]})))
    assert_error_row(
        "rows_refused", {"operation": "INSERT", "reason": "column id does not accept nulls"},
        error.code, error.message,
    )  # fmt: skip
    assert lake.client.scan(S, "t").read_all().num_rows == 0


def test_if_exists_and_if_not_exists_change_nothing(lake: Running) -> None:
    client = lake.client
    client.drop_table(S, "nope", if_exists=True)
    client.drop_schema("nope", if_exists=True)
    client.create_table(S, "t", pa.schema([pa.field("other", pa.int8())]), on_conflict="ignore")
    client.add_column(S, "t", pa.field("id", pa.int64()), if_not_exists=True)
    client.remove_column(S, "t", "nope", if_exists=True)
    # ALTER TABLE IF EXISTS nope RENAME TO …, the table gone since DuckDB listed it: nothing
    # renamed, nothing to answer (a missing table was INTERNAL: its FlightInfo looked up)
    renamed = RenameTableParams(schema=S, name="nope", new_table_name="t2", ignore_not_found=True)
    assert client.action("rename_table", renamed.encode()) == []
    (table,) = client.list_tables(S)
    assert table.arrow_schema.names == [*COLUMNS.names, "rowid"]
    replaced = client.create_table(S, "t", pa.schema([pa.field("x", pa.int8())]), "replace")
    assert replaced is not None and replaced.arrow_schema.names == ["x", "rowid"]


# --- every error row of the DDL actions -----------------------------------------------------


class _Broken(MemoryCatalog):
    """A catalog whose DDL fails the ways the error rows describe."""

    def __init__(self) -> None:
        super().__init__("")
        self.add_schema(_BrokenSchema(S))
        plain = self.add_schema(CatalogSchema("plain"))  # no DDL of its own
        plain.add(BaseTable("fixed"))

    def create_schema(self, ctx: Context, name: str, opts: Any) -> Any:
        if name == "unimplemented":
            raise Unimplemented()
        if name == "fails":
            raise RuntimeError("disk full")
        if name == "unlisted":
            return _Unlisted(name)
        return super().create_schema(ctx, name, opts)

    def drop_schema(self, ctx: Context, name: str, opts: Any) -> None:
        if name == "unimplemented":
            raise Unimplemented()
        if name == "fails":
            raise RuntimeError("disk full")
        super().drop_schema(ctx, name, opts)


class _Unlisted(MemorySchema):
    def tables(self, ctx: Context) -> list[Any]:
        raise RuntimeError("listing failed")


class _FailingTable(BaseTable):
    """Every column change fails with a plain error."""

    def __getattr__(self, name: str) -> Any:
        if name not in DDL_METHODS:
            raise AttributeError(name)

        def fail(*args: Any) -> None:
            raise RuntimeError(f"{name} broke")

        return fail


class _BrokenSchema(MemorySchema):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.add(_FailingTable("broken"))

    def create_table(self, ctx: Context, name: str, schema: pa.Schema, opts: Any) -> Any:
        if name == "fails":
            raise RuntimeError("disk full")
        return super().create_table(ctx, name, schema, opts)

    def drop_table(self, ctx: Context, name: str, opts: Any) -> None:
        if name == "fails":
            raise RuntimeError("disk full")
        super().drop_table(ctx, name, opts)

    def rename_table(self, ctx: Context, old: str, new: str, opts: Any) -> None:
        if new == "fails":
            raise RuntimeError("disk full")
        if new == "vanishes":
            self._tables.pop(old)
            return
        super().rename_table(ctx, old, new, opts)

    def table(self, ctx: Context, name: str) -> Any:
        if name == "unreadable":
            raise RuntimeError("lookup failed")
        return super().table(ctx, name)


DDL_METHODS = {row.method for row in DDL_ACTIONS.values() if row.interface == "DynamicTable"}


@pytest.fixture
def broken() -> Iterator[Running]:
    with serving(_Broken()) as running:
        running.client.create_table(S, "t", COLUMNS)
        yield running


def _body(action: str, **fields: Any) -> bytes:
    body: bytes = DDL_ACTIONS[action].request(**fields).encode()
    return body


def _raw(action: str, body: bytes) -> Callable[[Running], RemoteError]:
    return lambda r: _error(lambda: r.client.action(action, body))


def _on(call: Callable[[Any], object]) -> Callable[[Running], RemoteError]:
    return lambda r: _error(lambda: call(r.client))


def _table_call(method: str, *args: Any) -> Callable[[Any], object]:
    return lambda c: getattr(c, method)(*args)


_ONE = pa.field("x", pa.int64())
_ALTERS = {  # action → (client method, its arguments after schema and table)
    "add_column": ("add_column", (_ONE,)),
    "remove_column": ("remove_column", ("name",)),
    "rename_column": ("rename_column", ("name", "n2")),
    "change_column_type": ("change_column_type", (pa.field("id", pa.int32()),)),
    "set_not_null": ("set_not_null", ("name",)),
    "drop_not_null": ("drop_not_null", ("name",)),
    "set_default": ("set_default", ("name", "'x'")),
    "add_field": ("add_field", (pa.field("tags", pa.struct([("z", pa.int8())])),)),
    "rename_field": ("rename_field", (["tags", "a"], "b")),
    "remove_field": ("remove_field", (["tags", "a"],)),
}

TRIGGERS: dict[str, tuple[Callable[[Running], RemoteError], dict[str, Any]]] = {
    "schema_name_required": (_on(lambda c: c.create_schema("")), {}),
    "schema_name_field_required": (_on(lambda c: c.create_table("", "t", COLUMNS)), {}),
    "table_name_field_required": (_on(lambda c: c.create_table(S, "", COLUMNS)), {}),
    "arrow_schema_required": (
        _raw("create_table", _body("create_table", schema_name=S, table_name="u")),
        {},
    ),
    "schema_required": (_on(lambda c: c.set_not_null("", "t", "id")), {}),
    "table_name_required": (_on(lambda c: c.set_not_null(S, "", "id")), {}),
    "column_schema_required": (
        _raw("add_column", _body("add_column", schema=S, name="t")),
        {},
    ),
    "removed_column_required": (_on(lambda c: c.remove_column(S, "t", "")), {}),
    "old_name_required": (_on(lambda c: c.rename_column(S, "t", "", "x")), {}),
    "new_name_required": (_on(lambda c: c.rename_column(S, "t", "id", "")), {}),
    "new_table_name_required": (_on(lambda c: c.rename_table(S, "t", "")), {}),
    "column_name_required": (_on(lambda c: c.drop_not_null(S, "t", "")), {}),
    "column_path_required": (_on(lambda c: c.remove_field(S, "t", [])), {}),
    "schema_cannot_create_tables": (_on(lambda c: c.create_table("plain", "u", COLUMNS)), {}),
    "schema_cannot_drop_tables": (_on(lambda c: c.drop_table("plain", "fixed")), {}),
    "schema_cannot_rename_tables": (_on(lambda c: c.rename_table("plain", "fixed", "f2")), {}),
    "table_cannot_alter_columns": (_on(lambda c: c.drop_not_null("plain", "fixed", "id")), {}),
    "schema_creation_unimplemented": (_on(lambda c: c.create_schema("unimplemented")), {}),
    "schema_deletion_unimplemented": (_on(lambda c: c.drop_schema("unimplemented")), {}),
    "ddl_schema_not_found": (_on(lambda c: c.add_column("nope", "t", _ONE)), {"schema": '"nope"'}),
    "ddl_table_not_found": (_on(lambda c: c.add_column(S, "nope", _ONE)), {"table": '"nope"'}),
    "ddl_column_not_found": (
        _on(lambda c: c.rename_column(S, "t", "nope", "x")),
        {"column": '"nope"'},
    ),
    "ddl_column_not_found_unnamed": (
        _on(lambda c: c.change_column_type(S, "t", pa.field("nope", pa.int8()))),
        {},
    ),
    "ddl_column_path_not_found": (
        _on(lambda c: c.add_field(S, "t", pa.field("nope", pa.struct([("a", pa.int8())])))),
        {},
    ),
    "ddl_field_path_not_found": (_on(lambda c: c.rename_field(S, "t", ["tags", "x"], "y")), {}),
    # what DuckDB sends for ADD COLUMN tags.b INTEGER: the column with the new field's type
    "add_field_without_field_name": (
        _on(lambda c: c.add_field(S, "t", pa.field("tags", pa.int32()))),
        {"column": '"tags"', "type": "int32"},
    ),
    "schema_already_exists": (_on(lambda c: c.create_schema(S)), {"schema": f'"{S}"'}),
    "table_already_exists": (_on(lambda c: c.create_table(S, "t", COLUMNS)), {"table": '"t"'}),
    "column_already_exists": (
        _on(lambda c: c.add_column(S, "t", pa.field("id", pa.int8()))),
        {"column": '"id"'},
    ),
    "field_already_exists": (
        _on(lambda c: c.add_field(S, "t", pa.field("tags", pa.struct([("a", pa.int32())])))),
        {},
    ),
    "schema_not_empty": (_on(lambda c: c.drop_schema(S)), {"schema": f'"{S}"'}),
    "invalid_arrow_schema": (
        _raw(
            "create_table", _body("create_table", schema_name=S, table_name="u", arrow_schema=b"xx")
        ),
        {"error": None},
    ),
    "invalid_column_schema": (
        _raw("add_column", _body("add_column", schema=S, name="t", column_schema=b"xx")),
        {"error": None},
    ),
    "column_schema_not_one_field": (
        _raw(
            "add_column",
            _body("add_column", schema=S, name="t", column_schema=COLUMNS.serialize().to_pybytes()),
        ),
        {"count": 3},
    ),
    "invalid_on_conflict": (
        _on(lambda c: c.create_table(S, "u", COLUMNS, on_conflict="merge")),
        {"value": '"merge"'},
    ),
    "serialize_schema_contents_failed": (
        _on(lambda c: c.create_schema("unlisted")),
        {"error": "listing failed"},
    ),
    "renamed_table_lookup_failed": (
        _on(lambda c: c.rename_table(S, "t", "vanishes")),
        {"error": None},
    ),
    "create_schema_failed": (_on(lambda c: c.create_schema("fails")), {"error": "disk full"}),
    "drop_schema_failed": (_on(lambda c: c.drop_schema("fails")), {"error": "disk full"}),
    "create_table_failed": (
        _on(lambda c: c.create_table(S, "fails", COLUMNS)),
        {"error": "disk full"},
    ),
    "drop_table_failed": (_on(lambda c: c.drop_table(S, "fails")), {"error": "disk full"}),
    "rename_table_failed": (_on(lambda c: c.rename_table(S, "t", "fails")), {"error": "disk full"}),
}
for _action, (_method, _args) in _ALTERS.items():
    TRIGGERS[f"{_action}_failed"] = (
        _on(_table_call(_method, S, "broken", *_args)),
        {"error": f"{_action} broke"},
    )
for _action in DDL_ACTIONS:
    TRIGGERS[f"{_action}_payload_invalid"] = (_raw(_action, b"\x93\x01\x02\x03"), {"error": None})

# A catalog without DDL: its own server (the broken catalog has DDL).
NO_DDL = {"catalog_cannot_create_schemas", "catalog_cannot_drop_schemas"}

DDL_ROWS = {r.id for r in ERROR_TABLE if r.id in TRIGGERS} | NO_DDL
"""The error rows this file triggers (the DoAction coverage check elsewhere leaves them out)."""


def test_every_ddl_row_is_triggered() -> None:
    referenced = set()
    for row in DDL_ACTIONS.values():
        referenced |= {row.bad_payload.id, row.unsupported.id, row.failed.id}  # type: ignore[attr-defined]
        referenced |= {e.id for _, e in row.required}  # type: ignore[attr-defined]
        referenced |= {e.id for e in row.sentinels.values()}  # type: ignore[attr-defined]
    assert referenced <= set(TRIGGERS) | NO_DDL


@pytest.mark.parametrize("row_id", sorted(TRIGGERS))
def test_ddl_error_row_on_the_wire(broken: Running, row_id: str) -> None:
    trigger, params = TRIGGERS[row_id]
    before = broken.client.list_schemas()
    error = trigger(broken)
    assert_error_row(row_id, params, error.code, error.message)
    assert broken.client.list_schemas() == before or row_id.endswith("_failed")


@pytest.mark.parametrize(
    ("row_id", "call"),
    [
        ("catalog_cannot_create_schemas", lambda c: c.create_schema("x")),
        ("catalog_cannot_drop_schemas", lambda c: c.drop_schema("x")),
    ],
)
def test_a_catalog_without_ddl_says_so(row_id: str, call: Callable[[Any], object]) -> None:
    with serving(MutableCatalog("")) as running:
        error = _error(lambda: call(running.client))
    assert_error_row(row_id, {}, error.code, error.message)


def test_the_catalog_name_is_checked(lake: Running) -> None:
    error = _error(lambda: lake.client.create_schema("x", catalog="other"))
    assert_error_row(
        "catalog_name_mismatch", {"expected": '""', "got": '"other"'}, error.code, error.message
    )


@pytest.mark.parametrize("action", sorted(DDL_ACTIONS))
def test_the_clients_ddl_call_answers_what_the_contract_says(action: str) -> None:
    """AirportClient has one method per DDL action, named as the action, whose answer is the
    contract's: a table's FlightInfo → TableInfo | None (the generated calls' TableInfoT is
    the client's TableInfo), a schema's contents, or nothing."""
    from airport_contracts.client import DdlCalls
    from pyairport.client.remote_catalog import TableInfo

    assert DdlCalls[TableInfo] in AirportClient.__orig_bases__  # type: ignore[attr-defined]
    method = getattr(AirportClient, action)
    expected = {
        "flight_info": "TableInfoT | None",
        "schema_contents": "SerializedContents",
        "none": "None",
    }[DDL_ACTIONS[action].answer]
    assert inspect.signature(method).return_annotation == expected


def test_ddl_actions_are_listed() -> None:
    assert {a.value for a in Action} >= set(DDL_ACTIONS)


def test_create_schema_answers_its_contents(srv: Running) -> None:
    """Go's AirportSerializedContentsWithSHA256Hash: the new schema's (no) tables, as
    list_schemas serializes a schema, and their sha256."""
    contents = srv.client.create_schema(S)
    length, data = msgpack.unpackb(contents.serialized, raw=True)
    tables = msgpack.unpackb(zstandard.ZstdDecompressor().decompress(data, max_output_size=length))
    assert tables == []
    assert contents.sha256 == hashlib.sha256(contents.serialized).hexdigest()


@pytest.mark.parametrize(
    ("expression", "plain"),
    [
        ("CAST(age AS BIGINT)", True),  # DuckDB's ALTER age TYPE BIGINT
        ('CAST("age" AS DECIMAL(10, 2))', True),
        ("TRY_CAST(age AS INTEGER)", True),
        ("age", True),
        ("", True),
        ("CAST(age + 1 AS BIGINT)", False),
        ("CAST(other AS BIGINT)", False),
        ("age * 2", False),
    ],
)
def test_a_type_change_names_a_plain_conversion_as_duckdb_sends_it(
    expression: str, plain: bool
) -> None:
    from pyairport.dispatch.ddl_actions import conversion_expression

    assert (conversion_expression(expression, "age") == "") is plain


def test_add_constraint_is_an_unknown_action_as_in_airport_go(srv: Running) -> None:
    """The extension's add_constraint (DuckDB refuses ADD PRIMARY KEY, UNIQUE and CHECK
    before sending it): airport-go serves no such action, and neither does pyairport."""
    body = msgpack.packb(
        {
            "catalog": "",
            "schema": "dml_schema",
            "name": "users",
            "ignore_not_found": False,
            "constraint": "PRIMARY KEY (id)",
        }
    )
    error = _error(lambda: srv.client.action("add_constraint", body))
    assert_error_row("unknown_action", {"type": "add_constraint"}, error.code, error.message)


def test_every_ddl_action_has_exactly_one_binding() -> None:
    """The contract's bind or the runtime's binder, never both and never neither: the
    generated DdlBinders has an abstract method for each row without a bind map (the runtime's
    RequestBinders cannot be made without them all), a row with neither is refused when the
    dispatch library is imported, and a binder for a row the contract binds is refused too."""
    from dataclasses import replace

    from airport_contracts.dispatch import DdlBinders
    from pyairport.dispatch.ddl_actions import RequestBinders, binder, check_binders
    from pyairport.dispatch.dispatcher import require_implemented
    from pyairport.dispatch.validation import ContractNotImplemented

    unbound = {name for name, row in DDL_ACTIONS.items() if row.bind is None}
    assert DdlBinders.__abstractmethods__ == unbound
    assert issubclass(RequestBinders, DdlBinders) and not RequestBinders.__abstractmethods__
    bound_by_contract = DDL_ACTIONS[Action.RENAME_COLUMN]
    bound_here = DDL_ACTIONS[Action.CREATE_TABLE]
    assert binder(bound_by_contract) is not None and binder(bound_here) is not None
    neither = replace(bound_by_contract, name="rename_everything", bind=None)
    assert binder(neither) is None
    with pytest.raises(ContractNotImplemented, match="'rename_everything'"):
        require_implemented({}, {}, {neither.name: neither})
    both = replace(bound_here, bind=bound_by_contract.bind)
    with pytest.raises(RuntimeError, match=r"RequestBinders binds \['create_table'\]"):
        check_binders({both.name: both})


def test_update_returning_answers_a_decimal_in_the_width_it_was_sent(srv: Running) -> None:
    """An UPDATE answers in its input's schema (protocol §1.8). A table serving a DECIMAL as
    decimal64 (as the Spark backend serves DECIMAL(p <= 18)) answers an UPDATE that sends it
    as decimal128 (as DuckDB sends every DECIMAL) in decimal128, values exact; a DECIMAL of
    another precision is not the same column and is still refused."""
    from decimal import Decimal

    srv.client.create_schema(S)
    declared = pa.schema([("id", pa.int64()), ("price", pa.decimal64(15, 2))])
    srv.client.create_table(S, "prices", declared)
    srv.client.insert(
        S,
        "prices",
        pa.table({"id": [1], "price": pa.array([Decimal("1.25")], pa.decimal64(15, 2))}),
    )
    (rowid,) = srv.client.scan(S, "prices", ["rowid"]).read_all().column("rowid").to_pylist()
    sent = pa.table(
        {"price": pa.array([Decimal("99999999999.99")], pa.decimal128(15, 2)), "rowid": [rowid]}
    )
    answer = srv.client.update(S, "prices", sent, returning=True)
    assert answer.returning is not None
    assert answer.returning.schema.field("price").type == pa.decimal128(15, 2)
    assert answer.returning.column("price").to_pylist() == [Decimal("99999999999.99")]
    wider = pa.table({"price": pa.array([Decimal("2.50")], pa.decimal128(20, 2)), "rowid": [rowid]})
    refused = _error(lambda: srv.client.update(S, "prices", wider, returning=True))
    assert_error_row(
        "returning_type_mismatch",
        {"operation": "UPDATE", "source": "decimal64(15, 2)", "target": "decimal128(20, 2)"},
        refused.code,
        refused.message,
    )
    stored = srv.client.scan(S, "prices", ["price"]).read_all().column("price")
    assert stored.to_pylist() == [Decimal("99999999999.99")]  # the refused UPDATE left it
