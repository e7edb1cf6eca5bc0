"""diff-upstream: each kind of difference on small Go fixtures (written for these tests),
the command's exit codes, and a run against the pinned airport-go through the module proxy."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from airport_codegen.diff import Difference, diff
from airport_codegen.goextract import extract
from airport_codegen.load import build_contract
from airport_codegen.model import Contract

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "fixture"
needs_go = pytest.mark.skipif(
    shutil.which("go") is None, reason="the Go toolchain is not installed"
)
pytestmark = needs_go

KEEP_INTERFACES = {"Table", "InsertableTable"}
KEEP_TYPES = {"DMLOptions", "DMLResult", "ScanOptions", "TimePoint", "TransactionState"}
KEEP_ERRORS = {"insert_not_supported", "operation_failed"}
PYAIRPORT_FIELDS = {"rows_only", "partition"}


def _trimmed_contract_data() -> dict:
    """contracts.yaml cut down to what the fixture declares (and nothing that refers elsewhere)."""
    data = yaml.safe_load((ROOT / "contracts.yaml").read_text())
    data["interfaces"] = [i for i in data["interfaces"] if i["name"] in KEEP_INTERFACES]
    data["types"] = [t for t in data["types"] if t["name"] in KEEP_TYPES]
    for t in data["types"]:  # pyairport's own fields (recorded differences, not kept here)
        t["fields"] = [f for f in t.get("fields", []) if f["name"] not in PYAIRPORT_FIELDS]
    data["payloads"] = [p for p in data["payloads"] if p["name"] == "FinalMetadata"]
    data["helpers"] = [h for h in data["helpers"] if h["name"] == "FindRowIDColumn"]
    data["errors"] = [e for e in data["errors"] if e["id"] in KEEP_ERRORS]
    for error in data["errors"]:
        error["go"]["file"] = "flight/doexchange_dml.go"
        error["protocols"] = ["any"]
    data["operations"], data["protocols"], data["validation_rules"] = [], [], []
    data["actions"], data["recorded_differences"], data["ddl_actions"] = [], [], []
    data["compatibility_matrix"]["rows"] = []
    data["functions"]["kinds"] = []
    data["upstream_api"] = {"packages": {"catalog": "catalog", "flight": "flight"}, "unbound": []}
    return data


def _contract(edit: Callable[[dict], None] | None = None) -> Contract:
    data = _trimmed_contract_data()
    if edit:
        edit(data)
    return build_contract(data)


def _fixture(tmp_path: Path, file: str = "", old: str = "", new: str = "") -> Path:
    root = tmp_path / "fixture"
    shutil.copytree(FIXTURE, root)
    if file:
        path = root / file
        text = path.read_text()
        assert old in text, f"fixture edit does not apply: {old!r}"
        path.write_text(text.replace(old, new))
    return root


def _diff(root: Path, contract: Contract | None = None) -> list[Difference]:
    return diff(contract or _contract(), extract(root, ["catalog", "flight"]))


def test_agreeing_source_has_no_drift(tmp_path: Path) -> None:
    assert _diff(_fixture(tmp_path)) == []


def test_method_missing_in_go(tmp_path: Path) -> None:
    root = _fixture(
        tmp_path,
        "catalog/table.go",
        "	Insert(ctx context.Context, rows array.RecordReader, opts *DMLOptions) (*DMLResult, error)\n",
        "",
    )
    assert _diff(root) == [
        Difference(
            "missing in Go",
            "interfaces[1] InsertableTable.Insert",
            "catalog/table.go:21",
            "InsertableTable has no method Insert",
        )
    ]


def test_method_missing_in_the_contract(tmp_path: Path) -> None:
    root = _fixture(
        tmp_path,
        "catalog/table.go",
        "	Comment() string\n",
        "	Comment() string\n	Truncate(ctx context.Context) error\n",
    )
    assert _diff(root) == [
        Difference(
            "missing in the contract",
            "interfaces[0] Table",
            "catalog/table.go:16",
            "Table.Truncate is not in the contract",
        )
    ]


def test_changed_signature(tmp_path: Path) -> None:
    root = _fixture(
        tmp_path,
        "catalog/table.go",
        "rows array.RecordReader, opts *DMLOptions",
        "rows arrow.RecordBatch, opts *DMLOptions",
    )
    (difference,) = _diff(root)
    assert (
        difference.kind == "changed signature"
        and difference.contract == "interfaces[1] InsertableTable.Insert"
    )
    assert difference.go == "catalog/table.go:23"
    assert "contract Insert(ctx context.Context, rows array.RecordReader" in difference.detail
    assert "Go Insert(ctx context.Context, rows arrow.RecordBatch" in difference.detail


def test_changed_helper_signature(tmp_path: Path) -> None:
    root = _fixture(
        tmp_path,
        "catalog/table.go",
        "func FindRowIDColumn(schema *arrow.Schema) int {",
        "func FindRowIDColumn(schema *arrow.Schema) (int, bool) {",
    )
    (difference,) = _diff(root)
    assert (difference.kind, difference.contract) == (
        "changed signature",
        "helpers[0] FindRowIDColumn",
    )


def test_changed_tag(tmp_path: Path) -> None:
    root = _fixture(
        tmp_path, "flight/doexchange_dml.go", 'msgpack:"total_changed"', 'msgpack:"changed"'
    )
    assert _diff(root) == [
        Difference(
            "changed field or tag",
            "payloads[0] FinalMetadata.total_changed",
            "flight/doexchange_dml.go:10",
            'contract tag msgpack:"total_changed"; Go tag `msgpack:"changed"`',
        )
    ]


def test_changed_field_type_and_extra_field(tmp_path: Path) -> None:
    root = _fixture(
        tmp_path,
        "catalog/table.go",
        "	AffectedRows  int64\n",
        "	AffectedRows  int32\n	Warnings      []string\n",
    )
    assert _diff(root) == [
        Difference(
            "missing in the contract",
            "types[1] DMLResult",
            "catalog/table.go:33",
            "DMLResult.Warnings is not in the contract",
        ),
        Difference(
            "changed field or tag",
            "types[1] DMLResult.affected_rows",
            "catalog/table.go:32",
            "contract type int64; Go type int32",
        ),
    ]


def test_changed_enum_value(tmp_path: Path) -> None:
    root = _fixture(tmp_path, "catalog/table.go", '= "aborted"', '= "rolled_back"')
    assert _diff(root) == [
        Difference(
            "changed field or tag",
            "types[4] TransactionState.ABORTED",
            "catalog/table.go:54",
            "contract TransactionAborted = 'aborted'; Go 'rolled_back'",
        )
    ]


def test_changed_error_code(tmp_path: Path) -> None:
    root = _fixture(
        tmp_path, "flight/doexchange_dml.go", "codes.FailedPrecondition", "codes.InvalidArgument"
    )
    assert _diff(root) == [
        Difference(
            "changed error code or message",
            "errors[0] insert_not_supported",
            "flight/doexchange_dml.go:15",
            "contract FAILED_PRECONDITION \"table '%s' does not support INSERT operations\"; Go codes.InvalidArgument",
        )
    ]


def test_changed_error_message(tmp_path: Path) -> None:
    root = _fixture(
        tmp_path, "flight/doexchange_dml.go", "INSERT failed: %v", "insert did not work: %v"
    )
    assert _diff(root) == [
        Difference(
            "changed error code or message",
            "errors[1] operation_failed",
            "flight/doexchange_dml.go",
            "format '%s failed: %v' is not in flight/doexchange_dml.go",
        )
    ]


def test_struct_missing_in_go_and_unrecorded_identifiers(tmp_path: Path) -> None:
    root = _fixture(
        tmp_path,
        "catalog/table.go",
        "type TimePoint struct {",
        "type DeleteFilter struct{}\n\ntype TimePointX struct {",
    )
    unrecorded = [
        ("catalog/table.go:44", "type catalog.DeleteFilter (struct)"),
        ("catalog/table.go:46", "type catalog.TimePointX (struct)"),
        ("catalog/table.go:47", "field catalog.TimePointX.Unit (string)"),
        ("catalog/table.go:48", "field catalog.TimePointX.Value (string)"),
    ]
    assert _diff(root) == [
        Difference(
            "missing in Go",
            "types[3] TimePoint",
            "catalog/types.go",
            "no struct TimePoint in package catalog",
        ),
        *(
            Difference(
                "missing in the contract",
                "package catalog",
                where,
                f"exported {what} is neither bound nor recorded in upstream_api",
            )
            for where, what in unrecorded
        ),
    ]


def _with_unbound(items: dict[str, str]) -> Contract:
    """The trimmed contract recording items of the fixture's flight package as unbound."""

    def record(data: dict) -> None:
        data["upstream_api"]["unbound"] = [
            {"package": "flight", "why": "a test's record", "items": items}
        ]

    return _contract(record)


def test_recorded_unbound_identifier_changed_and_removed(tmp_path: Path) -> None:
    root = _fixture(
        tmp_path,
        "flight/doexchange_dml.go",
        "type AirportChangedFinalMetadata struct {",
        'type Progress struct {\n\tDone int64 `msgpack:"done"`\n}\n\ntype AirportChangedFinalMetadata struct {',
    )
    agreeing = _with_unbound({"Progress": "struct", "Progress.Done": 'int64 `msgpack:"done"`'})
    assert _diff(root, agreeing) == []
    changed = _with_unbound(
        {"Progress": "struct", "Progress.Done": 'int32 `msgpack:"done"`', "Gone": "func() error"}
    )
    assert _diff(root, changed) == [
        Difference(
            "missing in Go",
            "upstream_api.unbound[0] flight.Gone",
            "flight",
            "Go no longer exports flight.Gone",
        ),
        Difference(
            "changed field or tag",
            "upstream_api.unbound[0] flight.Progress.Done",
            "flight/doexchange_dml.go:10",
            'recorded int32 `msgpack:"done"`; Go int64 `msgpack:"done"`',
        ),
    ]


def test_an_identifier_bound_and_recorded_is_refused() -> None:
    from airport_codegen.load import ContractError

    with pytest.raises(ContractError, match=r"items\.FindRowIDColumn: bound by helpers\[0\]"):
        _contract(
            lambda data: data["upstream_api"].update(
                unbound=[
                    {
                        "package": "catalog",
                        "why": "twice",
                        "items": {"FindRowIDColumn": "func(*arrow.Schema) int"},
                    }
                ]
            )
        )


def test_parse_failure_is_reported(tmp_path: Path) -> None:
    from airport_codegen.goextract import UpstreamError

    root = _fixture(
        tmp_path, "catalog/table.go", "type Table interface {", "type Table interface {{"
    )
    with pytest.raises(
        UpstreamError, match=r"^cannot parse the Go source in .*catalog/table.go:\d+:\d+: "
    ):
        extract(root, ["catalog", "flight"])


# --- the command ----------------------------------------------------------------------------


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyairport", "diff-upstream", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env=env,
    )


def test_cli_json_report_and_exit_code(tmp_path: Path) -> None:
    contract = tmp_path / "contracts.yaml"
    contract.write_text(yaml.safe_dump(_trimmed_contract_data()))
    agree = _cli("--path", str(_fixture(tmp_path)), "--contract", str(contract), "--format", "json")
    assert agree.returncode == 0, agree.stderr
    assert json.loads(agree.stdout)["drift"] is False
    drifted = _fixture(
        tmp_path / "b", "flight/doexchange_dml.go", "codes.FailedPrecondition", "codes.Internal"
    )
    done = _cli("--path", str(drifted), "--contract", str(contract), "--format", "json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert (
        report["counts"]["changed error code or message"] == 1 and len(report["differences"]) == 1
    )


def test_cli_unknown_version_is_exit_2_in_one_line() -> None:
    done = _cli("--ref", "v0.0.0-does-not-exist")
    assert done.returncode == 2
    assert done.stderr.startswith(
        "pyairport diff-upstream: error: cannot download github.com/hugr-lab/airport-go@v0.0.0-does-not-exist"
    )
    assert done.stderr.count("\n") == 1


def test_cli_without_go_is_exit_2_in_one_line(tmp_path: Path) -> None:
    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path)}
    done = _cli("--path", str(FIXTURE), env=env)
    assert done.returncode == 2
    assert (
        done.stderr
        == "pyairport diff-upstream: error: the Go toolchain (go) is not installed: it is needed to read the upstream Go source\n"
    )


def test_pinned_upstream_through_the_module_proxy() -> None:
    """The contract as it is against the version it pins: no drift, only what it records."""
    done = _cli("--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["upstream"].startswith("github.com/hugr-lab/airport-go@v")
    assert set(report["counts"]) == {
        "missing in Go",
        "missing in the contract",
        "changed signature",
        "changed field or tag",
        "changed error code or message",
    }
    for item in report["differences"]:
        assert set(item) == {"kind", "contract", "go", "detail"} and item["detail"]


def test_a_ddl_field_dropped_from_the_contract_is_drift(tmp_path: Path) -> None:
    """The real contract with one field cut from a DDL payload, against the pinned Go source:
    the diff names the field Go still has, and exits 1."""
    data = yaml.safe_load((ROOT / "contracts.yaml").read_text())
    params = next(p for p in data["payloads"] if p["name"] == "CreateTableParams")
    params["fields"] = [f for f in params["fields"] if f["name"] != "check_constraints"]
    client = next(a for a in data["ddl_actions"] if a["name"] == "create_table")["client"]
    client["params"] = [p for p in client["params"] if p["field"] != "check_constraints"]
    contract = tmp_path / "contracts.yaml"
    contract.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    done = _cli("--contract", str(contract))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "CreateTableParams.CheckConstraints is not in the contract" in done.stdout


# --- the whole public API of the pinned airport-go --------------------------------------------


def _pinned_copy(tmp_path: Path) -> Path:
    """A writable copy of the pinned airport-go source, from the Go module cache."""
    from airport_codegen.goextract import module_dir
    from airport_codegen.load import load_contract

    contract = load_contract(ROOT / "contracts.yaml")
    source = module_dir(contract.upstream_module, contract.upstream_ref)
    copy = tmp_path / "airport-go"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("*_test.go", "docs", "specs"))
    for path in copy.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return copy


def _edit(root: Path, file: str, old: str, new: str) -> None:
    path = root / file
    text = path.read_text()
    assert old in text, f"{file}: the edit does not apply to the pinned source: {old!r}"
    path.write_text(text.replace(old, new, 1))


def _drop_function(root: Path, file: str, name: str) -> None:
    import re

    path = root / file
    text, count = re.subn(
        rf"\n(//[^\n]*\n)*func {name}\(.*?\n}}\n", "\n", path.read_text(), count=1, flags=re.S
    )
    assert count == 1, f"{file}: no func {name}"
    path.write_text(text)


def test_an_identifier_added_removed_and_changed_in_each_package_is_drift(
    tmp_path: Path,
) -> None:
    """One exported identifier added, one removed and one changed in each of the root package,
    auth, catalog and flight: each is named with its place, and the command exits 1."""
    root = _pinned_copy(tmp_path)
    # the root package
    _edit(
        root,
        "config.go",
        "	MaxMessageSize int\n",
        "	MaxMessageSize int64\n	ReadOnly bool\n",
    )
    _drop_function(root, "auth.go", "NoAuth")
    # auth
    _edit(
        root,
        "auth/auth.go",
        "func NoAuth() Authenticator {",
        'func Anonymous() string { return "" }\n\nfunc NoAuth() Authenticator {',
    )
    _drop_function(root, "auth/bearer.go", "BearerAuth")
    _edit(
        root,
        "auth/auth.go",
        "identity string) context.Context {",
        "identity []byte) context.Context {\n\t_ = string(identity)",
    )
    # catalog: a bound struct field's type, a bound helper, a new interface; a sentinel's text
    _edit(root, "catalog/types.go", "	Returning bool", "	Returning int")
    _drop_function(root, "catalog/helpers.go", "FindRowIDColumn")
    _edit(
        root,
        "catalog/table.go",
        "type StatisticsTable interface {",
        "type Truncatable interface {\n	Truncate(ctx context.Context) error\n}\n\ntype StatisticsTable interface {",
    )
    _edit(root, "catalog/dynamic.go", 'errors.New("not found")', 'errors.New("no such object")')
    # flight: a payload's tag, an unbound function, a new constant
    _edit(
        root,
        "flight/doaction_ddl.go",
        'msgpack:"comment,omitempty"`',
        'msgpack:"description,omitempty"`',
    )
    _drop_function(root, "flight/projection.go", "ProjectSchema")
    (root / "flight" / "useragent.go").write_text(
        'package flight\n\nconst HeaderUserAgent = "airport-user-agent"\n'
    )
    done = _cli("--path", str(root), "--format", "json")
    assert done.returncode == 1, done.stdout + done.stderr
    found = {(d["kind"], d["go"], d["detail"]) for d in json.loads(done.stdout)["differences"]}
    expected = {
        ("changed field or tag", "config.go", "recorded int; Go int64"),
        ("missing in the contract", "config.go", "airport.ServerConfig.ReadOnly (bool)"),
        ("missing in Go", ".", "Go no longer exports airport.NoAuth"),
        ("missing in the contract", "auth/auth.go", "func auth.Anonymous (func() string)"),
        ("missing in Go", "auth", "Go no longer exports auth.BearerAuth"),
        # WithIdentity is bound (helpers): compared with its parameter names
        (
            "changed signature",
            "auth/auth.go",
            "Go WithIdentity(ctx context.Context, identity []byte)",
        ),
        ("changed field or tag", "catalog/types.go", "contract type bool; Go type int"),
        ("missing in Go", "catalog/helpers.go", "no function FindRowIDColumn in package catalog"),
        ("missing in the contract", "catalog/table.go", "type catalog.Truncatable (interface{})"),
        (
            "changed field or tag",
            "catalog/dynamic.go",
            "contract message 'not found'; Go 'no such object'",
        ),
        (
            "changed field or tag",
            "flight/doaction_ddl.go",
            'Go tag `msgpack:"description,omitempty"`',
        ),
        ("missing in Go", "flight", "Go no longer exports flight.ProjectSchema"),
        ("missing in the contract", "flight/useragent.go", "const flight.HeaderUserAgent"),
    }
    for kind, where, detail in expected:
        assert any(k == kind and g.split(":")[0] == where and detail in d for k, g, d in found), (
            f"not reported: {kind} at {where}: {detail}\n{sorted(found)}"
        )
    added = [d for d in found if d[0] == "missing in the contract"]
    assert all(":" in where for _, where, _ in added), "an added identifier is named with its line"


def test_all_maps_each_package_bound_and_recorded() -> None:
    """--all: per watched package, how many identifiers Go exports, how many are bound and how
    many recorded, and each recorded group's why."""
    done = _cli("--all", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    packages = {p["package"]: p for p in json.loads(done.stdout)["packages"]}
    assert set(packages) == {"airport", "auth", "catalog", "filter", "flight"}
    for p in packages.values():
        assert p["exported"] > 0 and p["bound"] + p["recorded"] == p["exported"], p["package"]
        assert all(group["why"] and group["names"] for group in p["unbound"])
    assert packages["catalog"]["bound"] > 100 and packages["flight"]["bound"] > 100
    text = _cli("--all")
    assert text.returncode == 0
    assert "package catalog (catalog): " in text.stdout and "    why: " in text.stdout
