"""contracts.yaml against the upstream Go source: where they disagree, item by item.

Every difference has a kind, the contract path and the Go file:line:
- "missing in Go": the contract maps an item to a Go home that has no such declaration, or
  records an unbound identifier (upstream_api) that Go no longer exports;
- "missing in the contract": Go exports it and the contract neither binds it nor records it
  in upstream_api (every exported identifier of upstream_api.packages is watched);
- "changed signature": an interface method or helper function differs in parameters,
  parameter types or results, or an unbound type, method or function differs from the
  signature upstream_api recorded;
- "changed field or tag": a struct field differs in name, type or json/msgpack tag, or an
  enum constant in value; or an unbound field, constant or variable from its record;
- "changed error code or message": an error row's Go format string is not in its Go file,
  or is there with another gRPC code.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Any

from airport_support.errors import StatusCode

from .model import (
    Contract,
    Field,
    Method,
    RecordedDifference,
    TypeRef,
)

KINDS = (
    "missing in Go",
    "missing in the contract",
    "changed signature",
    "changed field or tag",
    "changed error code or message",
)


@dataclass(frozen=True)
class Difference:
    kind: str
    contract: str  # path in contracts.yaml
    go: str  # file:line (or file) upstream
    detail: str


def _norm(go_type: str) -> str:
    """Go types compared without pointer stars or spacing (*DMLOptions ~ DMLOptions)."""
    return go_type.replace("*", "").replace(" ", "")


def _go_type(t: TypeRef, override: str = "") -> str:
    return override or t.go()


def _results(method: Any) -> list[str]:
    returns = method.returns
    if returns.go_type:
        inner = returns.go_type.strip()
        types = (
            [p.strip() for p in inner.strip("()").split(",")] if inner.startswith("(") else [inner]
        )
    elif returns.type.name == "none":
        types = []
    else:
        types = [_go_type(returns.type)]
    if getattr(method, "raises", False):
        types.append("error")
    return types


def _signature(name: str, params: list[tuple[str, str]], results: list[str]) -> str:
    args = ", ".join(f"{n} {t}".strip() for n, t in params)
    out = ", ".join(results)
    return f"{name}({args})" + (f" ({out})" if len(results) > 1 else f" {out}" if out else "")


def _compare_callable(
    path: str, where: str, ours: Method | Any, go_item: dict[str, Any]
) -> list[Difference]:
    params = [(p.go or p.name, _go_type(p.type)) for p in ours.params]
    results = _results(ours)
    go_params = [(p["name"], p["type"]) for p in go_item["params"]]
    go_results = [p["type"] for p in go_item["results"]]
    same = [(n, _norm(t)) for n, t in params] == [(n, _norm(t)) for n, t in go_params] and [
        _norm(t) for t in results
    ] == [_norm(t) for t in go_results]
    if same:
        return []
    name = go_item["name"]
    detail = f"contract {_signature(name, params, results)}; Go {_signature(name, go_params, go_results)}"
    return [Difference("changed signature", path, where, detail)]


def _expected_tag(field: Field, encoding: str) -> str:
    return f'{encoding}:"{field.wire}{",omitempty" if field.omitempty else ""}"'


def diff(contract: Contract, extracted: dict[str, dict[str, Any]]) -> list[Difference]:
    """Every difference between the contract and the Go source goextract read (by folder)."""
    upstream = {contract.upstream_api.package(folder): pkg for folder, pkg in extracted.items()}
    out: list[Difference] = []
    mentioned: set[str] = set()

    def package(name: str) -> dict[str, Any]:
        return upstream.get(
            name,
            {
                "interfaces": {},
                "structs": {},
                "consts": [],
                "funcs": {},
                "exported": [],
                "literals": {},
            },
        )

    for i, iface in enumerate(contract.interfaces):
        path = f"interfaces[{i}] {iface.name}"
        mentioned.add(iface.go.ident)
        go_iface = package(iface.go.package)["interfaces"].get(iface.go.ident)
        if go_iface is None:
            out.append(
                Difference(
                    "missing in Go",
                    path,
                    iface.go.file,
                    f"no interface {iface.go.ident} in package {iface.go.package}",
                )
            )
            continue
        where = f"{go_iface['file']}:{go_iface['line']}"
        if sorted(go_iface["embeds"]) != sorted(iface.extends):
            detail = (
                f"contract extends {sorted(iface.extends)}; Go embeds {sorted(go_iface['embeds'])}"
            )
            out.append(Difference("changed signature", path, where, detail))
        go_methods = {m["name"]: m for m in go_iface["methods"]}
        for method in iface.methods:
            go_method = go_methods.pop(method.name, None)
            method_path = f"{path}.{method.name}"
            if go_method is None:
                out.append(
                    Difference(
                        "missing in Go",
                        method_path,
                        where,
                        f"{iface.go.ident} has no method {method.name}",
                    )
                )
                continue
            out += _compare_callable(
                method_path, f"{go_iface['file']}:{go_method['line']}", method, go_method
            )
        for name, go_method in sorted(go_methods.items()):
            detail = f"{iface.go.ident}.{name} is not in the contract"
            out.append(
                Difference(
                    "missing in the contract",
                    path,
                    f"{go_iface['file']}:{go_method['line']}",
                    detail,
                )
            )

    structs: list[tuple[str, Any, str]] = []
    for i, t in enumerate(contract.types):
        if t.kind in ("struct", "error_type"):
            structs.append((f"types[{i}] {t.name}", t, ""))
    for i, p in enumerate(contract.payloads):
        structs.append((f"payloads[{i}] {p.name}", p, p.encoding))
    for path, item, encoding in structs:
        mentioned.add(item.go.ident)
        if not item.go.ident:  # Go builds it as a map literal: its keys must be in the file
            out += _compare_map_keys(path, item, upstream)
            continue
        go_struct = package(item.go.package)["structs"].get(item.go.ident)
        if go_struct is None:
            out.append(
                Difference(
                    "missing in Go",
                    path,
                    item.go.file,
                    f"no struct {item.go.ident} in package {item.go.package}",
                )
            )
            continue
        go_fields = {f["name"]: f for f in go_struct["fields"]}
        for field in item.fields:
            go_field = go_fields.pop(field.go or field.name, None)
            field_path = f"{path}.{field.name}"
            if go_field is None:
                out.append(
                    Difference(
                        "changed field or tag",
                        field_path,
                        f"{go_struct['file']}:{go_struct['line']}",
                        f"{item.go.ident} has no field {field.go}",
                    )
                )
                continue
            where = f"{go_struct['file']}:{go_field['line']}"
            ours = field.go_type or field.type.go()
            if _norm(ours) != _norm(go_field["type"]):
                out.append(
                    Difference(
                        "changed field or tag",
                        field_path,
                        where,
                        f"contract type {ours}; Go type {go_field['type']}",
                    )
                )
            if encoding and _expected_tag(field, encoding) not in go_field["tag"]:
                detail = (
                    f"contract tag {_expected_tag(field, encoding)}; Go tag `{go_field['tag']}`"
                )
                out.append(Difference("changed field or tag", field_path, where, detail))
        for name, go_field in sorted(go_fields.items()):
            detail = f"{item.go.ident}.{name} is not in the contract"
            out.append(
                Difference(
                    "missing in the contract",
                    path,
                    f"{go_struct['file']}:{go_field['line']}",
                    detail,
                )
            )

    for i, t in enumerate(contract.types):
        if t.kind != "enum":
            continue
        mentioned.add(t.go.ident)
        path = f"types[{i}] {t.name}"
        go_consts = {
            c["name"]: c for c in package(t.go.package)["consts"] if c["type"] == t.go.ident
        }
        for value in t.values:
            mentioned.add(value.go)
            go_const = go_consts.pop(value.go, None)
            if go_const is None:
                out.append(
                    Difference(
                        "missing in Go",
                        f"{path}.{value.name}",
                        t.go.file,
                        f"no constant {value.go} of type {t.go.ident}",
                    )
                )
            elif go_const["value"] != value.value:
                where = f"{go_const['file']}:{go_const['line']}"
                detail = f"contract {value.go} = {value.value!r}; Go {go_const['value']!r}"
                out.append(
                    Difference("changed field or tag", f"{path}.{value.name}", where, detail)
                )
        for name, go_const in sorted(go_consts.items()):
            where = f"{go_const['file']}:{go_const['line']}"
            out.append(
                Difference(
                    "missing in the contract",
                    path,
                    where,
                    f"{name} = {go_const['value']!r} is not in the contract",
                )
            )

    for i, t in enumerate(contract.types):
        if t.kind != "sentinel":
            continue
        mentioned.add(t.go.ident)
        exported = {e["name"]: e for e in package(t.go.package)["exported"]}
        if t.go.ident not in exported:
            out.append(
                Difference(
                    "missing in Go",
                    f"types[{i}] {t.name}",
                    t.go.file,
                    f"no error {t.go.ident} in package {t.go.package}",
                )
            )
            continue
        api = {a["name"]: a for a in package(t.go.package).get("api", [])}
        message = _sentinel_message(api.get(t.go.ident, {}).get("sig", ""))
        if message is not None and message != t.message:
            go_item = api[t.go.ident]
            detail = f"contract message {t.message!r}; Go {message!r}"
            where = f"{go_item['file']}:{go_item['line']}"
            out.append(Difference("changed field or tag", f"types[{i}] {t.name}", where, detail))

    for i, helper in enumerate(contract.helpers):
        mentioned.add(helper.go.ident)
        path = f"helpers[{i}] {helper.name}"
        go_func = package(helper.go.package)["funcs"].get(helper.go.ident)
        if go_func is None:
            out.append(
                Difference(
                    "missing in Go",
                    path,
                    helper.go.file,
                    f"no function {helper.go.ident} in package {helper.go.package}",
                )
            )
            continue
        out += _compare_callable(path, f"{go_func['file']}:{go_func['line']}", helper, go_func)

    out += _compare_errors(contract, upstream)
    reported = {d.go for d in out if d.kind == "missing in the contract"}
    out += [d for d in _api_differences(contract, upstream) if d.go not in reported]
    return sorted(out, key=lambda d: (KINDS.index(d.kind), d.contract, d.go))


def _sentinel_message(signature: str) -> str | None:
    """The text of a sentinel declared as errors.New("…"), or None for another form."""
    found = re.fullmatch(r'= errors\.New\(("(?:[^"\\]|\\.)*")\)', signature)
    return json.loads(found.group(1)) if found else None


_VALUE_KINDS = ("field", "const", "var")
"""API items whose change is a "changed field or tag" (the rest change a signature)."""


def _compared_with_owner(
    item: dict[str, Any], bound: dict[tuple[str, str], str], package: str
) -> bool:
    """A field or interface method of a type the contract binds: the struct and interface
    comparisons above name it, so the API pass does not report it again."""
    owner, dot, _ = item["name"].partition(".")
    receiver_method = item["sig"].startswith("(")
    return bool(dot) and (package, owner) in bound and not receiver_method


def _api_differences(contract: Contract, upstream: dict[str, dict[str, Any]]) -> list[Difference]:
    """Every exported identifier of the watched packages is bound, or recorded with the
    signature it had: one that is neither, one that changed, one that is gone, is drift."""
    out: list[Difference] = []
    bound = contract.bound_go_names()
    recorded = {
        (group.package, name): (signature, f"upstream_api.unbound[{i}]")
        for i, group in enumerate(contract.upstream_api.unbound)
        for name, signature in group.items
    }
    for package, folder in contract.upstream_api.packages:
        for item in upstream.get(package, {}).get("api", []):
            key = (package, item["name"])
            where = f"{item['file']}:{item['line']}"
            if key in bound or _compared_with_owner(item, bound, package):
                continue
            if key not in recorded:
                detail = (
                    f"exported {item['kind']} {package}.{item['name']} ({item['sig']}) is"
                    " neither bound nor recorded in upstream_api"
                )
                out.append(
                    Difference("missing in the contract", f"package {package}", where, detail)
                )
                continue
            signature, path = recorded.pop(key)
            if signature != item["sig"]:
                kind = (
                    "changed field or tag" if item["kind"] in _VALUE_KINDS else "changed signature"
                )
                detail = f"recorded {signature}; Go {item['sig']}"
                out.append(Difference(kind, f"{path} {package}.{item['name']}", where, detail))
        for (gone_package, name), (_, path) in sorted(recorded.items()):
            if gone_package == package:
                detail = f"Go no longer exports {package}.{name}"
                out.append(Difference("missing in Go", f"{path} {package}.{name}", folder, detail))
    return out


def _compare_map_keys(
    path: str, payload: Any, upstream: dict[str, dict[str, Any]]
) -> list[Difference]:
    literals = {
        lit["value"]
        for pkg in upstream.values()
        for lit in pkg.get("literals", {}).get(payload.go.file, [])
    }
    return [
        Difference(
            "changed field or tag",
            f"{path}.{f.name}",
            payload.go.file,
            f"key {f.wire!r} is not in {payload.go.file}",
        )
        for f in payload.fields
        if f.wire not in literals
    ]


_CODES = {code.name: "".join(w.capitalize() for w in code.name.split("_")) for code in StatusCode}
"""gRPC's code names as Go's codes package spells them (INVALID_ARGUMENT → InvalidArgument)."""


def _format_pattern(go_format: str) -> re.Pattern[str]:
    """A contract format whose leading %s stands for a word Go writes literally
    (e.g. "%s failed: %v" for "INSERT failed: %v")."""
    escaped = re.escape(go_format)
    return re.compile("^" + escaped.replace(re.escape("%s"), "(?:%s|[A-Za-z_]+)", 1) + "$")


def _compare_errors(contract: Contract, upstream: dict[str, dict[str, Any]]) -> list[Difference]:
    out = []
    literals: dict[str, list[dict[str, Any]]] = {}
    for package in upstream.values():
        for file, items in package.get("literals", {}).items():
            literals.setdefault(file, []).extend(items)
    for i, error in enumerate(contract.errors):
        if not error.go.format:
            continue
        path = f"errors[{i}] {error.id}"
        candidates = literals.get(error.go.file, [])
        pattern = _format_pattern(error.go.format)
        found = [c for c in candidates if c["value"] == error.go.format] or [
            c for c in candidates if pattern.match(c["value"])
        ]
        if not found:
            detail = f"format {error.go.format!r} is not in {error.go.file}"
            out.append(Difference("changed error code or message", path, error.go.file, detail))
            continue
        coded = [c for c in found if c.get("code")]
        expected = _CODES.get(error.code, error.code)
        if coded and all(c["code"] != expected for c in coded):
            where = f"{error.go.file}:{coded[0]['line']}"
            detail = f"contract {error.code} {error.go.format!r}; Go codes.{coded[0]['code']}"
            out.append(Difference("changed error code or message", path, where, detail))
    return out


def _packages(contract: Contract) -> set[str]:
    homes = (
        [i.go for i in contract.interfaces]
        + [t.go for t in contract.types]
        + [p.go for p in contract.payloads]
    )
    homes += [h.go for h in contract.helpers]
    return {h.package for h in homes if h.package}


def packages_to_read(contract: Contract) -> list[str]:
    """Package folders to extract: the watched packages', the mapped items' and the folders
    of the error rows' files."""
    api = contract.upstream_api
    folders = {api.folder(p) for p in _packages(contract)} | {f for _, f in api.packages}
    folders |= {e.go.file.split("/")[0] for e in contract.errors if e.go.file}
    return sorted(folders)


def api_map(contract: Contract, upstream: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per watched package: how many exported identifiers Go has, how many the contract binds
    and how many it records unbound, with each group's why."""
    bound = contract.bound_go_names()
    packages = []
    for package, folder in contract.upstream_api.packages:
        api = upstream.get(folder, {}).get("api", [])
        groups = [g for g in contract.upstream_api.unbound if g.package == package]
        packages.append(
            {
                "package": package,
                "folder": folder,
                "exported": len(api),
                "bound": sum((package, item["name"]) in bound for item in api),
                "recorded": sum(len(g.items) for g in groups),
                "unbound": [
                    {"why": g.why, "deviation": g.deviation, "names": [n for n, _ in g.items]}
                    for g in groups
                ],
            }
        )
    return packages


def _names(difference: Difference, item: str) -> bool:
    """Whether a difference is about item (a contract item, Type.Member or package.Name)."""
    named = re.compile(r"(?<![\w.])" + re.escape(item) + r"(?![\w])")
    return bool(named.search(difference.contract) or named.search(difference.detail))


def split_recorded(
    differences: list[Difference], recorded: tuple[RecordedDifference, ...]
) -> tuple[list[Difference], list[tuple[Difference, RecordedDifference]], list[RecordedDifference]]:
    """(drift, the differences the contract records on purpose with their record, records
    that no longer match anything)."""
    drift: list[Difference] = []
    kept: list[tuple[Difference, RecordedDifference]] = []
    used: set[int] = set()
    for difference in differences:
        match = next(
            (
                (i, r)
                for i, r in enumerate(recorded)
                if r.kind == difference.kind and _names(difference, r.item)
            ),
            None,
        )
        if match is None:
            drift.append(difference)
        else:
            used.add(match[0])
            kept.append((difference, match[1]))
    stale = [r for i, r in enumerate(recorded) if i not in used]
    return drift, kept, stale


def report(
    differences: list[Difference],
    source: str,
    recorded: tuple[RecordedDifference, ...] = (),
    packages: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    drift, kept, stale = split_recorded(differences, recorded)
    counts = {kind: sum(d.kind == kind for d in drift) for kind in KINDS}
    return {
        "upstream": source,
        "drift": bool(drift),
        "counts": counts,
        "differences": [asdict(d) for d in drift],
        "recorded": [{**asdict(d), "why": r.why, "deviation": r.deviation} for d, r in kept],
        "stale_records": [asdict(r) for r in stale],
        "packages": packages or [],
    }


def render_text(rep: dict[str, Any], show_recorded: bool = False) -> str:
    lines = [f"upstream: {rep['upstream']}"]
    if show_recorded:
        for p in rep["packages"]:
            lines.append(
                f"package {p['package']} ({p['folder']}): {p['exported']} exported,"
                f" {p['bound']} bound, {p['recorded']} recorded unbound"
            )
            for group in p["unbound"]:
                because = f" (deviation {group['deviation']})" if group["deviation"] else ""
                lines.append(f"  unbound: {', '.join(group['names'])}")
                lines.append(f"    why: {group['why']}{because}")
        for d in rep["recorded"]:
            because = f" (deviation {d['deviation']})" if d["deviation"] else ""
            lines.append(
                f"recorded: {d['kind']:<20} {d['contract']}  ({d['go']})\n"
                f"    {d['detail']}\n    why: {d['why']}{because}"
            )
    for r in rep["stale_records"]:
        lines.append(f"recorded but no longer different: {r['kind']} {r['item']}")
    for d in rep["differences"]:
        lines.append(f"{d['kind']:<30} {d['contract']}  ({d['go']})\n    {d['detail']}")
    recorded = len(rep["recorded"])
    hint = "" if show_recorded or not recorded else "; --all lists them"
    if not rep["differences"]:
        lines.append(f"no drift ({recorded} recorded differences{hint})")
        return "\n".join(lines) + "\n"
    summary = ", ".join(f"{n} {kind}" for kind, n in rep["counts"].items() if n)
    lines.append(
        f"drift: {len(rep['differences'])} differences ({summary});"
        f" {recorded} recorded differences{hint}"
    )
    return "\n".join(lines) + "\n"
