"""The generator: strict loading, deterministic output, and `check` catching drift."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from airport_codegen.load import ContractError, build_contract, load_contract
from airport_codegen.render import render_package

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "contracts.yaml"


def _data() -> dict:
    return yaml.safe_load(CONTRACT.read_text())


def _mutated(mutate) -> str:
    data = _data()
    mutate(data)
    with pytest.raises(ContractError) as err:
        build_contract(data)
    message = str(err.value)
    assert "\n" not in message
    return message


def test_the_contract_loads() -> None:
    contract = load_contract(CONTRACT)
    assert contract.upstream_module == "github.com/hugr-lab/airport-go"
    assert len(contract.content_hash) == 64


def test_unknown_key_names_its_path() -> None:
    message = _mutated(lambda d: d["types"][0]["fields"][0].update(colour="red"))
    assert message == "types[0].fields[0].colour: unknown key"


def test_missing_key_names_its_path() -> None:
    message = _mutated(lambda d: d["errors"][2].pop("code"))
    assert message == "errors[2]: missing key 'code'"


def test_wrong_type_names_its_path() -> None:
    message = _mutated(lambda d: d["contract"].update(version="one"))
    assert message == "contract.version: expected an integer, got a string"


def test_unknown_status_code() -> None:
    message = _mutated(lambda d: d["errors"][0].update(code="NOPE"))
    assert message == "errors[0].code: unknown gRPC status code 'NOPE'"


def test_dangling_error_reference() -> None:
    message = _mutated(lambda d: d["operations"][0].update(not_supported="no_such_error"))
    assert message == "operations[0].not_supported: unknown error 'no_such_error'"


def test_dangling_type_reference() -> None:
    message = _mutated(lambda d: d["types"][0]["fields"][0].update(type="list[Nothing]"))
    assert message == "types[0].fields[0].type: unknown type 'Nothing'"


def test_duplicate_error_id() -> None:
    def dup(d: dict) -> None:
        d["errors"].append(dict(d["errors"][0], **{"class": "Another"}))

    message = _mutated(dup)
    assert message.startswith(
        f"errors[{len(_data()['errors'])}].id: duplicate error id 'missing_metadata'"
    )


def test_duplicate_capability_method_names_are_refused() -> None:
    def clash(d: dict) -> None:
        batch = next(i for i in d["interfaces"] if i["name"] == "UpdatableBatchTable")
        batch["methods"][0]["python"] = "update_by_row_ids"

    assert "duplicate capability method name 'update_by_row_ids'" in _mutated(clash)


def test_message_placeholders_must_match_params() -> None:
    message = _mutated(lambda d: d["errors"][3].update(params=[]))
    assert message.startswith("errors[3].params: [] do not match the message placeholders ['path']")


def test_yaml_syntax_error_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "contracts.yaml"
    broken.write_text("types: [\n")
    with pytest.raises(ContractError) as err:
        load_contract(broken)
    assert "\n" not in str(err.value) and "contracts.yaml" in str(err.value)


def _render() -> dict[str, str]:
    contract = load_contract(CONTRACT)
    proto = ROOT / "proto" / "Flight.proto"
    templates = ROOT / "templates"
    return render_package(contract, CONTRACT, templates, proto)


def test_generation_is_deterministic_and_matches_the_checked_in_package() -> None:
    first, second = _render(), _render()
    assert first == second
    generated = ROOT / "generated" / "airport_contracts"
    for name, text in first.items():
        assert (generated / name).read_text() == text, f"{name} is stale: run make generate"


def test_every_generated_module_has_the_do_not_edit_header() -> None:
    for name, text in _render().items():
        if name.endswith((".py", ".pyi")):
            assert "DO NOT EDIT" in text.splitlines()[3], name
            assert "source sha256: " in text


def _check(out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "airport_codegen", "check", "--root", str(ROOT), "--out", str(out)],
        capture_output=True,
        text=True,
    )


def test_check_fails_on_a_hand_edit(tmp_path: Path) -> None:
    copy = tmp_path / "airport_contracts"
    shutil.copytree(
        ROOT / "generated" / "airport_contracts", copy, ignore=shutil.ignore_patterns("__pycache__")
    )
    assert _check(copy).returncode == 0
    errors = copy / "errors.py"
    errors.write_text(errors.read_text().replace("missing metadata", "no metadata"))
    done = _check(copy)
    assert done.returncode == 1 and "changed: errors.py" in done.stderr


def test_check_fails_on_an_extra_file(tmp_path: Path) -> None:
    copy = tmp_path / "airport_contracts"
    shutil.copytree(
        ROOT / "generated" / "airport_contracts", copy, ignore=shutil.ignore_patterns("__pycache__")
    )
    (copy / "handwritten.py").write_text("x = 1\n")
    done = _check(copy)
    assert done.returncode == 1 and "unexpected: handwritten.py" in done.stderr


def test_broken_contract_generates_nothing(tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(ROOT / "templates", root / "templates")
    shutil.copytree(ROOT / "proto", root / "proto")
    (root / "contracts.yaml").write_text(
        CONTRACT.read_text().replace("code: INTERNAL", "code: INTERNAAL", 1)
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "airport_codegen",
            "generate",
            "--root",
            str(root),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.strip().startswith("contracts.yaml: errors[")
    assert not out.exists()


def _made_up_package(tmp_path: Path) -> Any:
    """A made-up UPSERT operation and its validation rule, added to a copy of contracts.yaml
    only, rendered by the real templates and imported as madeup_contracts."""
    import importlib.util

    data = _data()
    fit = next(r for r in data["validation_rules"] if r["id"] == "input_columns_fit_table")
    fit["errors"]["upsert"] = "schema_mismatch"
    data["validation_rules"].append(
        {
            "id": "upsert_keys_given",
            "phase": "input_schema",
            "doc": "An UPSERT names its key columns.",
            "sources": ["004"],
            "errors": {"upsert": "schema_mismatch"},
        }
    )
    data["operations"].append(
        {
            "id": "doexchange_upsert",
            "protocol": "doexchange",
            "name": "upsert",
            "statement": "UPSERT",
            "doc": "A made-up UPSERT through DoExchange.",
            "sources": ["protocol §1.6"],
            "interfaces": ["InsertableTable"],
            "not_supported": "insert_not_supported",
            "capability_check": "before_read",
            "rowid": "none",
            "validation": ["upsert_keys_given", "input_columns_fit_table"],
            "output_schema": "input",
            "total_changed": "input_rows",
            "response": "exchange_stream",
        }
    )
    contract_path = tmp_path / "contracts.yaml"
    contract_path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    files = render_package(
        load_contract(contract_path),
        contract_path,
        ROOT / "templates",
        ROOT / "proto" / "Flight.proto",
    )
    package = tmp_path / "madeup_contracts"
    package.mkdir()
    for name, text in files.items():
        (package / name).write_text(text)
    spec = importlib.util.spec_from_file_location(
        "madeup_contracts", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["madeup_contracts"] = module
    spec.loader.exec_module(module)
    return module


def test_a_new_operation_needs_no_template_change(tmp_path: Path) -> None:
    """The made-up operation: the real templates render its row, its rule's error, its
    vocabulary and its route (to the DML handler); without the rule's implementation the runtime refuses the
    contract in one line; with it (registered, no runner or template edit) the operation
    runs on a table, and its rule refuses bad input with the contract's error."""
    import importlib

    from airport_support.vocabulary import RulePhase
    from pyairport.dispatch import Dispatcher, validation
    from pyairport.dispatch.dispatcher import require_implemented

    from .dispatch_helpers import batch, exchange
    from .tables import Catalog, make_table

    try:
        module = _made_up_package(tmp_path)
        dispatch = importlib.import_module("madeup_contracts.dispatch")
        vocabulary = importlib.import_module("madeup_contracts.vocabulary")
        row = dispatch.OPERATIONS["doexchange_upsert"]
        assert (row.protocol, row.name, row.statement) == ("doexchange", "upsert", "UPSERT")
        assert [(m.interface, m.method) for m in row.interfaces] == [("InsertableTable", "insert")]
        assert row.not_supported is module.InsertNotSupported
        assert row.validation == ("upsert_keys_given", "input_columns_fit_table")
        assert row.rule_error("upsert_keys_given") is module.SchemaMismatch
        assert vocabulary.Rule.UPSERT_KEYS_GIVEN == "upsert_keys_given"
        assert vocabulary.OperationName.UPSERT == "upsert"

        with pytest.raises(validation.ContractNotImplemented) as refused:
            require_implemented(dispatch.ROUTES, dispatch.RULE_PHASES)
        assert str(refused.value) == (
            "contracts.yaml names validation rule 'upsert_keys_given', which"
            " pyairport.dispatch.validation does not implement"
        )

        def keys_given(facts: validation.Facts) -> None:
            assert facts.input_schema is not None
            if "id" not in facts.input_schema.names:
                raise facts.row.rule_error("upsert_keys_given")(details="no key column 'id'")

        validation.rule("upsert_keys_given", RulePhase.ROWS_READ)(keys_given)
        with pytest.raises(validation.ContractNotImplemented) as refused:
            require_implemented(dispatch.ROUTES, dispatch.RULE_PHASES)
        assert str(refused.value) == (
            "contracts.yaml places validation rule 'upsert_keys_given' in phase input_schema,"
            " pyairport.dispatch.validation implements it for rows_read"
        )
        validation.rule("upsert_keys_given", RulePhase.INPUT_SCHEMA)(keys_given)
        require_implemented(dispatch.ROUTES, dispatch.RULE_PHASES)

        assert dispatch.ROUTES["doexchange", "upsert"].handler == "doexchange_dml"
        table = make_table("InsertableTable")
        runner = Dispatcher(Catalog({"s": {table.name(): table}}), routes=dispatch.ROUTES)
        rows = batch({"id": [7], "name": ["Gil"]})
        out_schema, _, total = exchange(runner, "upsert", [rows])
        assert (out_schema, total) == (rows.schema, 1)
        assert [r["name"] for r in table.rows.values()] == ["Gil"]
        with pytest.raises(module.SchemaMismatch, match="no key column 'id'"):
            exchange(runner, "upsert", [batch({"name": ["Hal"]})])
        assert [r["name"] for r in table.rows.values()] == ["Gil"]
    finally:
        validation.IMPLEMENTED.pop("upsert_keys_given", None)
        for name in [n for n in sys.modules if n.split(".")[0] == "madeup_contracts"]:
            del sys.modules[name]


def _ddl_row(d: dict, name: str) -> dict:
    return next(row for row in d["ddl_actions"] if row["name"] == name)


def test_a_ddl_binding_names_only_fields_of_the_request() -> None:
    index = [row["name"] for row in _data()["ddl_actions"]].index("rename_column")
    message = _mutated(lambda d: _ddl_row(d, "rename_column")["bind"].update(args=["old", "new"]))
    assert message == f"ddl_actions[{index}].bind.args: unknown field of the request 'old'"


def test_a_ddl_rows_existing_names_are_fields_of_known_kinds() -> None:
    index = [row["name"] for row in _data()["ddl_actions"]].index("remove_column")
    row = lambda d: _ddl_row(d, "remove_column")  # noqa: E731
    message = _mutated(lambda d: row(d).update(existing=[{"kind": "view", "field": "name"}]))
    assert message == (
        f"ddl_actions[{index}].existing[0].kind: unknown kind of existing name 'view'"
    )
    message = _mutated(lambda d: row(d).update(existing=[{"kind": "column", "field": "col"}]))
    assert message == f"ddl_actions[{index}].existing[0].field: unknown field of the request 'col'"


def test_a_ddl_binding_passes_as_many_arguments_as_the_method_takes() -> None:
    index = [row["name"] for row in _data()["ddl_actions"]].index("set_default")
    message = _mutated(lambda d: _ddl_row(d, "set_default")["bind"].update(args=["column_name"]))
    assert message == (
        f"ddl_actions[{index}].bind.args: set_default takes 2 argument(s) between ctx and its"
        " options, the map names 1"
    )


def test_a_ddl_binding_needs_every_option_in_the_request() -> None:
    """create_schema's comment is optional on the wire and a string in its options: a
    conversion, so the row cannot copy it; CreateSchemaOptions' fields are in the request,
    but CreateTableOptions.comment is not in create_table's."""
    index = [row["name"] for row in _data()["ddl_actions"]].index("create_table")
    message = _mutated(
        lambda d: _ddl_row(d, "create_table").update(bind={"args": ["table_name", "arrow_schema"]})
    )
    assert message == (
        f"ddl_actions[{index}].bind (options comment): unknown field of the request 'comment'"
    )


def test_a_validation_rule_names_a_phase_the_runtime_knows() -> None:
    message = _mutated(lambda d: d["validation_rules"][0].update(phase="whenever"))
    assert message.startswith("validation_rules[0].phase: unknown value 'whenever' (expected ")


def test_a_name_is_served_once_per_protocol() -> None:
    """The dispatch table routes each (protocol, name) to one handler: a function operation
    named like a DML one is refused where it is written."""
    kinds = _data()["functions"]["kinds"]
    index = next(i for i, k in enumerate(kinds) if k["exchange_operations"])
    message = _mutated(
        lambda d: d["functions"]["kinds"][index]["exchange_operations"].append("insert")
    )
    assert message == (
        f"functions.kinds[{index}].exchange_operations: duplicate name a protocol serves"
        " 'doexchange insert' (first at operations[0].name)"
    )


def test_every_route_names_a_handler_the_runtime_implements() -> None:
    """A route to a handler the Dispatcher lacks stops the import, naming it."""
    from airport_contracts.dispatch import ACTIONS, ROUTES, RULE_PHASES
    from airport_support.rows import Route
    from pyairport.dispatch.dispatcher import require_implemented
    from pyairport.dispatch.validation import ContractNotImplemented

    routes = dict(ROUTES)
    routes["doaction", "made_up"] = Route(
        "doaction", "made_up", "made_up", ACTIONS["catalog_version"]
    )
    with pytest.raises(ContractNotImplemented) as refused:
        require_implemented(routes, RULE_PHASES)
    assert str(refused.value) == (
        "contracts.yaml routes to handler 'made_up', which pyairport.dispatch.Dispatcher"
        " does not implement"
    )
    require_implemented(ROUTES, RULE_PHASES)


def _operation(d: dict, op_id: str) -> dict:
    return next(row for row in d["operations"] if row["id"] == op_id)


def test_a_dml_client_sends_what_its_protocol_carries() -> None:
    """The generated client's DML methods: a DoPut one sends rows with its descriptor, never
    bare rowids; a request field the client cannot fill is refused where it is written."""
    index = [row["id"] for row in _data()["operations"]].index("doput_insert")
    message = _mutated(lambda d: _operation(d, "doput_insert")["client"].update(input="rowids"))
    assert message == (
        f"operations[{index}].client.input: a doput operation's client sends rows, not 'rowids'"
    )

    def extra_field(d: dict) -> None:
        descriptor = next(p for p in d["payloads"] if p["name"] == "InsertDescriptor")
        descriptor["fields"].append(
            {
                "name": "note",
                "go": "Note",
                "wire": "note",
                "type": "str",
                "required": True,
                "doc": "A note.",
            }
        )

    message = _mutated(extra_field)
    assert message.startswith(
        f"operations[{index}].client: the client fills no request field 'note'"
    )


def test_the_client_has_a_method_per_dml_operation() -> None:
    """Every DML operation's client method is the generated client's, sending its row's
    request payload."""
    from airport_contracts.client import DmlCalls
    from airport_contracts.dispatch import OPERATIONS
    from pyairport.client import AirportClient

    data = _data()
    methods = [row["client"]["method"] for row in data["operations"] if "client" in row]
    assert methods == ["insert", "update", "delete", "put_insert", "put_update", "action_delete"]
    for name in methods:
        assert getattr(AirportClient, name) is getattr(DmlCalls, name)
    assert {row.name for row in OPERATIONS.values() if row.interfaces} == {
        "insert",
        "update",
        "delete",
    }
