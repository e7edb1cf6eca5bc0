"""Every item the specs define is in the contract (counted against spec_inventory.py)."""

from __future__ import annotations

from pathlib import Path

from airport_codegen.load import load_contract

from . import spec_inventory as inv

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = load_contract(ROOT / "contracts.yaml")


def test_interfaces_and_methods() -> None:
    for name, methods in inv.INTERFACES.items():
        assert {m.name for m in CONTRACT.interface(name).methods} == methods, name


def test_types_enums_helpers() -> None:
    types = {t.name: t for t in CONTRACT.types}
    for name, fields in inv.TYPES.items():
        assert {f.name for f in types[name].fields} == fields, name
    for name, values in inv.ENUMS.items():
        assert {v.value for v in types[name].values} == values, name
    assert inv.HELPERS <= {h.name for h in CONTRACT.helpers}


def test_payloads() -> None:
    for name, keys in inv.PAYLOADS.items():
        assert {f.wire for f in CONTRACT.payload(name).fields} == keys, name


def test_rules_matrix_deviations() -> None:
    assert inv.VALIDATION_RULES <= {r.id for r in CONTRACT.validation_rules}
    assert len(CONTRACT.matrix) == inv.MATRIX_ROWS
    assert inv.DEVIATIONS <= {d.id for d in CONTRACT.deviations}


def test_every_spec_error_is_a_row() -> None:
    rows = {(e.code, e.message) for e in CONTRACT.errors}
    missing = inv.ERRORS - rows
    assert not missing, f"error rows dropped from contracts.yaml: {sorted(missing)}"


def test_every_method_has_a_distinct_python_name() -> None:
    names = [m.python for i in CONTRACT.interfaces if "Table" in i.extends for m in i.methods]
    assert len(names) == len(set(names))


def test_every_spec_contract_test_has_a_python_test() -> None:
    from . import test_spec000_scenarios as scenarios

    for go_name, python_name in inv.CONTRACT_TESTS.items():
        assert callable(getattr(scenarios, python_name, None)), f"no test for spec 000's {go_name}"
