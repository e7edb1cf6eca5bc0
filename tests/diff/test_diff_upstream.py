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


def _trimmed_contract_data() -> dict:
    """contracts.yaml cut down to what the fixture declares (and nothing that refers elsewhere)."""
    data = yaml.safe_load((ROOT / "contracts.yaml").read_text())
    data["interfaces"] = [i for i in data["interfaces"] if i["name"] in KEEP_INTERFACES]
    data["types"] = [t for t in data["types"] if t["name"] in KEEP_TYPES]
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


def test_struct_missing_in_go_and_unmentioned_dml_identifier(tmp_path: Path) -> None:
    root = _fixture(
        tmp_path,
        "catalog/table.go",
        "type TimePoint struct {",
        "type DeleteFilter struct{}\n\ntype TimePointX struct {",
    )
    assert _diff(root) == [
        Difference(
            "missing in Go",
            "types[3] TimePoint",
            "catalog/types.go",
            "no struct TimePoint in package catalog",
        ),
        Difference(
            "missing in the contract",
            "package catalog",
            "catalog/table.go:44",
            "exported type catalog.DeleteFilter concerns DML, transactions or DDL and is not in the contract",
        ),
    ]


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
    contract = tmp_path / "contracts.yaml"
    contract.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    done = _cli("--contract", str(contract))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "CreateTableParams.CheckConstraints is not in the contract" in done.stdout
