"""contracts.yaml → Contract, strictly.

Every unknown key, missing key, wrong type, duplicate name and dangling reference is a
ContractError whose one-line message names the path in the YAML (e.g.
``errors[3].code: unknown gRPC status code 'NOPE'``). Nothing is generated from a broken
contract, so the generated package can trust every reference it follows.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from airport_support import vocabulary
from airport_support.codecs import KINDS as WIRE_KINDS

from .model import (
    ARROW_TYPES,
    CLIENT_FORMS,
    CLIENT_INPUTS,
    CLIENT_REQUEST_PARAMS,
    GENERICS,
    PRIMITIVES,
    STATUS_CODES,
    Contract,
    DdlAction,
    DdlBinding,
    DdlClient,
    DdlClientParam,
    Deviation,
    EnumValue,
    ErrorRow,
    Field,
    FunctionKind,
    Functions,
    GoHome,
    Header,
    Helper,
    Interface,
    MatrixRow,
    Method,
    Operation,
    OperationClient,
    Param,
    Payload,
    ProtocolDef,
    ReadAction,
    RecordedDifference,
    Returns,
    Rowid,
    Spec,
    Transition,
    TypeDef,
    TypeRef,
    UnboundGroup,
    UpstreamApi,
    ValidationRule,
)


class ContractError(ValueError):
    """A contract that cannot be loaded; str() is one line naming the YAML path."""


# Closed vocabularies of the operation model; the dispatch template has a branch for each.
CAPABILITY_CHECKS = {v.value for v in vocabulary.CapabilityCheck}
RULE_PHASES = {v.value for v in vocabulary.RulePhase}
ROWID_SOURCES = {v.value for v in vocabulary.RowidSource}
OUTPUT_SCHEMAS = {v.value for v in vocabulary.OutputSchema}
TOTALS = {v.value for v in vocabulary.TotalChanged}
HEADER_ROLES = {v.value for v in vocabulary.HeaderRole}
TABLE_ERRORS = {v.value for v in vocabulary.TableErrors}
TYPE_KINDS = {"struct", "enum", "error_type", "sentinel"}
DDL_TARGETS = {"catalog", "schema", "table"}
DDL_ANSWERS = {"schema_contents", "flight_info", "none"}
# How a DDL request field names an object that exists: a schema's or table's name, a column's,
# a path of names into struct fields, or an Arrow schema whose one field is named by a column.
EXISTING_KINDS = {"schema", "table", "column", "column_path", "column_schema"}
NAME_KINDS = {"schema", "table", "column"}  # what the runtime's name rule checks
ENCODINGS = {"json", "msgpack"}
KEY_ORDERS = {"declared", "any"}
STREAM_RESPONSE = "exchange_stream"


class _Node:
    """A YAML mapping with its path; reads keys and remembers which were read."""

    def __init__(self, value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise ContractError(f"{path}: expected a mapping, got {_kind(value)}")
        for key in value:
            if not isinstance(key, str):
                raise ContractError(f"{path}: keys must be strings, got {key!r}")
        self.value = value
        self.path = path
        self.seen: set[str] = set()

    def _get(self, key: str, required: bool) -> Any:
        self.seen.add(key)
        if key not in self.value:
            if required:
                raise ContractError(f"{self.path}: missing key '{key}'")
            return None
        return self.value[key]

    def string(self, key: str, default: str | None = None) -> str:
        value = self._get(key, default is None)
        if value is None:
            assert default is not None
            return default
        if not isinstance(value, str):
            raise ContractError(f"{self.sub(key)}: expected a string, got {_kind(value)}")
        return value

    def integer(self, key: str) -> int:
        value = self._get(key, True)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ContractError(f"{self.sub(key)}: expected an integer, got {_kind(value)}")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self._get(key, False)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ContractError(f"{self.sub(key)}: expected true or false, got {_kind(value)}")
        return value

    def optional_str(self, key: str) -> str | None:
        """A string that may be absent or null (e.g. a matrix cell with no interface)."""
        value = self._get(key, False)
        if value is not None and not isinstance(value, str):
            raise ContractError(f"{self.sub(key)}: expected a string or null, got {_kind(value)}")
        return value

    def strs(self, key: str, required: bool = False) -> tuple[str, ...]:
        value = self._get(key, required)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ContractError(f"{self.sub(key)}: expected a list of strings")
        return tuple(value)

    def nodes(self, key: str, required: bool = False) -> list[_Node]:
        value = self._get(key, required)
        if value is None:
            return []
        if not isinstance(value, list):
            raise ContractError(f"{self.sub(key)}: expected a list, got {_kind(value)}")
        return [_Node(item, f"{self.sub(key)}[{i}]") for i, item in enumerate(value)]

    def node(self, key: str, required: bool = True) -> _Node | None:
        value = self._get(key, required)
        return None if value is None else _Node(value, self.sub(key))

    def str_map(self, key: str) -> dict[str, str]:
        value = self._get(key, False)
        if value is None:
            return {}
        node = _Node(value, self.sub(key))
        result = {}
        for k in value:
            result[k] = node.string(k)
        return result

    def sub(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def done(self) -> None:
        unknown = sorted(set(self.value) - self.seen)
        if unknown:
            raise ContractError(f"{self.sub(unknown[0])}: unknown key")


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def load_contract(path: Path) -> Contract:
    """Load and check a contract file; raises ContractError on the first problem."""
    raw = path.read_bytes()
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "cannot parse YAML"
        raise ContractError(f"{path.name}{where}: {problem}") from None
    contract = build_contract(data)
    return _with_hash(contract, hashlib.sha256(raw).hexdigest())


def _with_hash(contract: Contract, digest: str) -> Contract:
    from dataclasses import replace

    return replace(contract, content_hash=digest)


def build_contract(data: Any) -> Contract:
    root = _Node(data, "")
    meta = root.node("contract")
    assert meta is not None
    upstream = meta.node("upstream")
    assert upstream is not None
    specs = tuple(_spec(n) for n in meta.nodes("specs", required=True))
    contract = Contract(
        name=meta.string("name"),
        version=meta.integer("version"),
        doc=meta.string("doc"),
        upstream_module=upstream.string("module"),
        upstream_ref=upstream.string("ref"),
        specs=specs,
        rowid=_rowid(root.node("rowid")),
        types=tuple(_typedef(n) for n in root.nodes("types", required=True)),
        interfaces=tuple(_interface(n) for n in root.nodes("interfaces", required=True)),
        requirements=root.str_map("requirements"),
        helpers=tuple(_helper(n) for n in root.nodes("helpers", required=True)),
        payloads=tuple(_payload(n) for n in root.nodes("payloads", required=True)),
        errors=tuple(_error(n) for n in root.nodes("errors", required=True)),
        validation_rules=tuple(_rule(n) for n in root.nodes("validation_rules", required=True)),
        matrix=(),
        matrix_sources=(),
        protocols=tuple(_protocol(n) for n in root.nodes("protocols", required=True)),
        operations=tuple(_operation(n) for n in root.nodes("operations", required=True)),
        deviations=tuple(_deviation(n) for n in root.nodes("deviations", required=True)),
        actions=tuple(_action(n) for n in root.nodes("actions", required=True)),
        ddl_actions=tuple(_ddl_action(n) for n in root.nodes("ddl_actions", required=True)),
        functions=_functions(root.node("functions")),
        recorded=tuple(_recorded(n) for n in root.nodes("recorded_differences", required=True)),
        upstream_api=_upstream_api(root.node("upstream_api")),
    )
    matrix = root.node("compatibility_matrix")
    assert matrix is not None
    from dataclasses import replace

    contract = replace(
        contract,
        matrix=tuple(_matrix_row(n) for n in matrix.nodes("rows", required=True)),
        matrix_sources=matrix.strs("sources", required=True),
    )
    matrix.done()
    for node in (meta, upstream, root):
        node.done()
    _check_references(contract)
    return contract


# --- sections -----------------------------------------------------------------------------


def _functions(n: _Node | None) -> Functions:
    assert n is not None
    kinds = []
    for k in n.nodes("kinds", required=True):
        kinds.append(
            FunctionKind(
                kind=k.string("kind"),
                doc=k.string("doc"),
                interface=k.string("interface"),
                listed_by=k.string("listed_by"),
                catalog_type=k.string("catalog_type"),
                action_name=k.string("action_name", ""),
                exchange_operations=k.strs("exchange_operations"),
                no_return_chunks=k.string("no_return_chunks", ""),
                not_found=k.string("not_found"),
                list_failed=k.string("list_failed"),
                flight_info_list_failed=k.string("flight_info_list_failed", ""),
                failed=k.string("failed"),
            )
        )
        k.done()
    functions = Functions(
        parameter_name=n.string("parameter_name"),
        result_field=n.string("result_field"),
        table_input_metadata=n.string("table_input_metadata"),
        any_type_metadata=n.string("any_type_metadata"),
        named_parameter_metadata=n.string("named_parameter_metadata"),
        chunk_continues=n.string("chunk_continues"),
        chunk_finished=n.string("chunk_finished"),
        call_uri_prefix=n.string("call_uri_prefix"),
        call_argument_name=n.string("call_argument_name"),
        doc=n.string("doc"),
        sources=n.strs("sources", required=True),
        kinds=tuple(kinds),
    )
    n.done()
    return functions


def _spec(n: _Node) -> Spec:
    spec = Spec(id=n.string("id"), file=n.string("file"), title=n.string("title"))
    n.done()
    return spec


def _go(n: _Node, key: str = "go") -> GoHome:
    node = n.node(key, required=False)
    if node is None:
        return GoHome()
    home = GoHome(
        package=node.string("package", ""),
        file=node.string("file", ""),
        ident=node.string("ident", ""),
        format=node.string("format", ""),
    )
    node.done()
    return home


def _rowid(n: _Node | None) -> Rowid:
    assert n is not None
    rowid = Rowid(
        name=n.string("name"),
        metadata_key=n.string("metadata_key"),
        accepted_types=n.strs("accepted_types", required=True),
        returning_excludes_metadata_value=n.string("returning_excludes_metadata_value"),
        doc=n.string("doc"),
        sources=n.strs("sources", required=True),
    )
    n.done()
    return rowid


def _field(n: _Node, payload: bool = False) -> Field:
    f = Field(
        name=n.string("name"),
        type=parse_type(n.string("type"), n.sub("type")),
        doc=n.string("doc"),
        go=n.string("go", ""),
        go_type=n.string("go_type", ""),
        default=n.optional_str("default"),
        wire=n.string("wire", "") if payload else "",
        required=n.boolean("required", False) if payload else False,
        omitempty=n.boolean("omitempty", False) if payload else False,
        const=n.optional_str("const") if payload else None,
        nullable=n.boolean("nullable", False) if payload else False,
        json_bytes=n.string("json_bytes", "") if payload else "",
    )
    n.done()
    return f


def _typedef(n: _Node) -> TypeDef:
    kind = n.string("kind")
    if kind not in TYPE_KINDS:
        raise ContractError(
            f"{n.sub('kind')}: unknown kind '{kind}' (expected {_one_of(TYPE_KINDS)})"
        )
    values = []
    for v in n.nodes("values"):
        values.append(
            EnumValue(
                name=v.string("name"),
                go=v.string("go"),
                value=v.string("value"),
                doc=v.string("doc"),
            )
        )
        v.done()
    transitions = []
    for t in n.nodes("transitions"):
        transitions.append(
            Transition(
                source=t.string("from"),
                target=t.string("to"),
                by=t.string("by"),
                deviation=t.string("deviation", ""),
            )
        )
        t.done()
    td = TypeDef(
        name=n.string("name"),
        kind=kind,
        doc=n.string("doc"),
        go=_go(n),
        sources=n.strs("sources", required=True),
        fields=tuple(_field(f) for f in n.nodes("fields")),
        values=tuple(values),
        transitions=tuple(transitions),
        message=n.string("message", ""),
    )
    if kind == "enum" and not td.values:
        raise ContractError(f"{n.path}: an enum needs values")
    if kind == "error_type" and not td.message:
        raise ContractError(f"{n.path}: an error_type needs a message")
    n.done()
    return td


def _param(n: _Node) -> Param:
    p = Param(
        name=n.string("name"),
        type=parse_type(n.string("type"), n.sub("type")),
        doc=n.string("doc", ""),
        go=n.string("go", ""),
        default=n.optional_str("default"),
    )
    n.done()
    return p


def _returns(n: _Node | None) -> Returns:
    assert n is not None
    r = Returns(
        type=parse_type(n.string("type"), n.sub("type")),
        doc=n.string("doc", ""),
        go_name=n.string("go_name", ""),
        go_type=n.string("go_type", ""),
    )
    n.done()
    return r


def _method(n: _Node) -> Method:
    m = Method(
        name=n.string("name"),
        python=n.string("python"),
        doc=n.string("doc"),
        params=tuple(_param(p) for p in n.nodes("params", required=True)),
        returns=_returns(n.node("returns")),
        raises=n.boolean("raises", False),
        go_params=tuple(sorted(n.str_map("go_params").items())),
    )
    n.done()
    return m


def _interface(n: _Node) -> Interface:
    i = Interface(
        name=n.string("name"),
        doc=n.string("doc"),
        go=_go(n),
        sources=n.strs("sources", required=True),
        methods=tuple(_method(m) for m in n.nodes("methods", required=True)),
        extends=n.strs("extends"),
        requirements=n.strs("requirements"),
    )
    n.done()
    return i


def _helper(n: _Node) -> Helper:
    h = Helper(
        name=n.string("name"),
        python=n.string("python"),
        doc=n.string("doc"),
        go=_go(n),
        sources=n.strs("sources", required=True),
        params=tuple(_param(p) for p in n.nodes("params", required=True)),
        returns=_returns(n.node("returns")),
        raises=n.boolean("raises", False),
    )
    n.done()
    return h


def _payload(n: _Node) -> Payload:
    encoding = n.string("encoding")
    if encoding not in ENCODINGS:
        raise ContractError(
            f"{n.sub('encoding')}: unknown encoding '{encoding}' (expected {_one_of(ENCODINGS)})"
        )
    key_order = n.string("key_order", "declared")
    if key_order not in KEY_ORDERS:
        raise ContractError(f"{n.sub('key_order')}: unknown key order '{key_order}'")
    p = Payload(
        name=n.string("name"),
        encoding=encoding,
        doc=n.string("doc"),
        go=_go(n),
        sources=n.strs("sources", required=True),
        fields=tuple(_field(f, payload=True) for f in n.nodes("fields", required=True)),
        key_order=key_order,
    )
    for i, f in enumerate(p.fields):
        where = f"{n.sub('fields')}[{i}]"
        if not f.wire:
            raise ContractError(f"{where}: missing key 'wire'")
        if not f.required and f.default is None:
            raise ContractError(f"{where}: an optional field needs a default")
    n.done()
    return p


_PLACEHOLDER = re.compile(r"{([a-z_]+)}")


def _error(n: _Node) -> ErrorRow:
    code = n.string("code")
    if code not in STATUS_CODES:
        raise ContractError(f"{n.sub('code')}: unknown gRPC status code '{code}'")
    e = ErrorRow(
        id=n.string("id"),
        cls=n.string("class"),
        protocols=n.strs("protocols", required=True),
        code=code,
        message=n.string("message"),
        params=n.strs("params", required=True),
        condition=n.string("condition"),
        sources=n.strs("sources", required=True),
        go=_go(n),
        note=n.string("note", ""),
        deviation=n.string("deviation", ""),
        from_tables=n.boolean("from_tables", False),
    )
    placeholders = _PLACEHOLDER.findall(e.message)
    if sorted(set(placeholders)) != sorted(e.params):
        raise ContractError(
            f"{n.sub('params')}: {list(e.params)} do not match the message placeholders {placeholders}"
        )
    if not re.fullmatch(r"[A-Z][A-Za-z0-9]+", e.cls):
        raise ContractError(f"{n.sub('class')}: '{e.cls}' is not a CamelCase class name")
    n.done()
    return e


def _rule(n: _Node) -> ValidationRule:
    r = ValidationRule(
        id=n.string("id"),
        doc=n.string("doc"),
        sources=n.strs("sources", required=True),
        errors=tuple(n.str_map("errors").items()),
        phase=n.string("phase"),
    )
    if r.phase not in RULE_PHASES:
        raise ContractError(
            f"{n.sub('phase')}: unknown value '{r.phase}' (expected {_one_of(RULE_PHASES)})"
        )
    n.done()
    return r


def _matrix_row(n: _Node) -> MatrixRow:
    row = MatrixRow(
        implements=n.strs("implements", required=True),
        update=n.optional_str("update"),
        delete=n.optional_str("delete"),
    )
    n.done()
    return row


def _protocol(n: _Node) -> ProtocolDef:
    headers = []
    for h in n.nodes("headers"):
        header = Header(
            name=h.string("name"),
            role=h.string("role"),
            missing=h.string("missing", ""),
            invalid=h.string("invalid", ""),
            true_value=h.string("true_value", ""),
            note=h.string("note", ""),
        )
        if header.role not in HEADER_ROLES:
            raise ContractError(f"{h.sub('role')}: unknown header role '{header.role}'")
        h.done()
        headers.append(header)
    table_errors = n.string("table_errors", "wrap")
    if table_errors not in TABLE_ERRORS:
        raise ContractError(f"{n.sub('table_errors')}: expected {_one_of(TABLE_ERRORS)}")
    p = ProtocolDef(
        id=n.string("id"),
        transport=n.string("transport"),
        doc=n.string("doc"),
        sources=n.strs("sources", required=True),
        headers=tuple(headers),
        go=_go(n),
        no_metadata=n.string("no_metadata", ""),
        databases_path=n.string("databases_path", ""),
        unknown_operation=n.string("unknown_operation", ""),
        unknown_action=n.string("unknown_action", ""),
        table_errors=table_errors,
        no_manager=n.string("no_manager", ""),
    )
    n.done()
    return p


def _operation(n: _Node) -> Operation:
    op = Operation(
        id=n.string("id"),
        protocol=n.string("protocol"),
        name=n.string("name"),
        doc=n.string("doc"),
        sources=n.strs("sources", required=True),
        statement=n.string("statement", ""),
        request=n.string("request", ""),
        response=n.string("response", ""),
        interfaces=n.strs("interfaces"),
        not_supported=n.string("not_supported", ""),
        capability_check=n.string("capability_check", ""),
        rowid=n.string("rowid", ""),
        validation=n.strs("validation"),
        output_schema=n.string("output_schema", ""),
        total_changed=n.string("total_changed", ""),
        client=_operation_client(n.node("client", required=False)),
    )
    for key, value, allowed in (
        ("capability_check", op.capability_check, CAPABILITY_CHECKS),
        ("rowid", op.rowid, ROWID_SOURCES),
        ("output_schema", op.output_schema, OUTPUT_SCHEMAS),
        ("total_changed", op.total_changed, TOTALS),
    ):
        if value not in allowed:
            raise ContractError(
                f"{n.sub(key)}: unknown value '{value}' (expected {_one_of(allowed - {''})})"
            )
    n.done()
    return op


def _operation_client(n: _Node | None) -> OperationClient | None:
    if n is None:
        return None
    client = OperationClient(
        method=n.string("method"), doc=n.string("doc"), input=n.string("input")
    )
    if client.input not in CLIENT_INPUTS:
        raise ContractError(
            f"{n.sub('input')}: unknown value '{client.input}' (expected {_one_of(set(CLIENT_INPUTS))})"
        )
    n.done()
    return client


def _action(n: _Node) -> ReadAction:
    action = ReadAction(
        name=n.string("name"),
        doc=n.string("doc"),
        sources=n.strs("sources", required=True),
        go=_go(n),
        request=n.string("request", ""),
        response=n.string("response", ""),
        bad_request=n.string("bad_request", ""),
    )
    n.done()
    return action


def _ddl_action(n: _Node) -> DdlAction:
    required = []
    for r in n.nodes("required"):
        required.append((r.string("field"), r.string("error")))
        r.done()
    existing = []
    for e in n.nodes("existing"):
        existing.append((e.string("kind"), e.string("field")))
        e.done()
    action = DdlAction(
        name=n.string("name"),
        doc=n.string("doc"),
        sources=n.strs("sources", required=True),
        go=_go(n),
        request=n.string("request"),
        bad_payload=n.string("bad_payload"),
        catalog_field=n.string("catalog_field"),
        required=tuple(required),
        target=n.string("target"),
        schema_field=n.string("schema_field", ""),
        table_field=n.string("table_field", ""),
        ignore_not_found=n.boolean("ignore_not_found", False),
        interface=n.string("interface"),
        unsupported=n.string("unsupported"),
        method=n.string("method"),
        sentinels=tuple(sorted(n.str_map("sentinels").items())),
        failed=n.string("failed"),
        answer=n.string("answer"),
        client=_ddl_client(n.node("client")),
        bind=_ddl_binding(n.node("bind", required=False)),
        existing=tuple(existing),
    )
    for key, value, allowed in (
        ("target", action.target, DDL_TARGETS),
        ("answer", action.answer, DDL_ANSWERS),
    ):
        if value not in allowed:
            raise ContractError(
                f"{n.sub(key)}: unknown value '{value}' (expected {_one_of(allowed)})"
            )
    n.done()
    return action


def _ddl_client(n: _Node | None) -> DdlClient:
    assert n is not None
    params = []
    for p in n.nodes("params", required=True):
        params.append(
            DdlClientParam(
                field=p.string("field"),
                name=p.string("name", ""),
                encode=p.string("encode", ""),
                default=p.optional_str("default"),
                source=p.string("from", ""),
                required=p.boolean("required", False),
            )
        )
        p.done()
    client = DdlClient(
        doc=n.string("doc"), params=tuple(params), fixed=tuple(n.str_map("fixed").items())
    )
    n.done()
    return client


def _check_ddl_client(c: Contract, d: DdlAction, path: str, ref: Any) -> None:
    """The client's parameters fill fields of the request, each at most once (the catalog's
    is the method's last parameter, always), in a form the client knows; those without a
    default come first."""
    assert d.client is not None
    fields = {f.name: f for f in c.payload(d.request).fields}
    filled = {d.catalog_field}
    names: set[str] = set()
    defaulted = ""
    for j, p in enumerate(d.client.params):
        where = f"{path}.client.params[{j}]"
        ref("field of the request", p.field, set(fields), f"{where}.field")
        if p.field in filled:
            raise ContractError(f"{where}.field: '{p.field}' is filled twice")
        filled.add(p.field)
        if p.source:
            if p.name or p.source not in names:
                raise ContractError(f"{where}.from: name an earlier parameter, and no name")
            continue
        if not p.name or p.name in names or p.name == "catalog":
            raise ContractError(f"{where}.name: a new parameter name, not 'catalog'")
        names.add(p.name)
        form = p.encode or str(fields[p.field].type)
        if form not in CLIENT_FORMS or (p.encode and str(fields[p.field].type) != "bytes"):
            raise ContractError(f"{where}: the client has no form for {form} into '{p.field}'")
        has_default = not p.required and (
            p.default is not None or CLIENT_FORMS[form][1] is not None
        )
        if defaulted and not has_default:
            raise ContractError(f"{where}: without a default after '{defaulted}', which has one")
        defaulted = defaulted or (p.name if has_default else "")
    for field_name, _ in d.client.fixed:
        ref("field of the request", field_name, set(fields), f"{path}.client.fixed")


def _ddl_binding(n: _Node | None) -> DdlBinding | None:
    if n is None:
        return None
    by_sentinel = n.node("by_sentinel", required=False) or _Node({}, n.sub("by_sentinel"))
    checked = []
    for c in n.nodes("checked"):
        checked.append((c.string("kind"), c.string("field")))
        c.done()
    binding = DdlBinding(
        args=n.strs("args", required=True),
        names=tuple(n.str_map("names").items()),
        by_sentinel=tuple(
            (sentinel, tuple(by_sentinel.str_map(sentinel).items()))
            for sentinel in by_sentinel.value
        ),
        checked=tuple(checked),
        renamed_to=n.string("renamed_to", ""),
    )
    by_sentinel.done()
    n.done()
    return binding


def _check_ddl_binding(c: Contract, d: DdlAction, path: str, ref: Any) -> None:
    """A bind map names only the request's fields, as many arguments as the method takes
    between ctx and its options, and an options struct the request carries every field of."""
    if d.bind is None:
        return
    b = d.bind
    fields = {f.name for f in c.payload(d.request).fields}
    method = c.ddl_method(d)
    expected = len(method.params) - 2  # ctx first, the options last
    if len(b.args) != expected:
        raise ContractError(
            f"{path}.bind.args: {method.python} takes {expected} argument(s) between ctx and"
            f" its options, the map names {len(b.args)}"
        )
    for field_name in b.args:
        ref("field of the request", field_name, fields, f"{path}.bind.args")
    for option in c.ddl_options(d).fields:
        ref("field of the request", option.name, fields, f"{path}.bind (options {option.name})")
    for param, field_name in b.names:
        ref("field of the request", field_name, fields, f"{path}.bind.names.{param}")
    sentinels = {s for s, _ in d.sentinels}
    for sentinel, names in b.by_sentinel:
        ref("sentinel of the row", sentinel, sentinels, f"{path}.bind.by_sentinel")
        for param, field_name in names:
            ref("field of the request", field_name, fields, f"{path}.bind.by_sentinel.{param}")
    for kind, field_name in b.checked:
        ref("kind of name", kind, NAME_KINDS, f"{path}.bind.checked")
        ref("field of the request", field_name, fields, f"{path}.bind.checked")
    if b.renamed_to:
        ref("field of the request", b.renamed_to, fields, f"{path}.bind.renamed_to")


def _upstream_api(n: _Node | None) -> UpstreamApi:
    assert n is not None
    packages = n.str_map("packages")
    if not packages:
        raise ContractError(f"{n.sub('packages')}: name at least one package")
    groups = []
    for g in n.nodes("unbound", required=True):
        package = g.string("package")
        if package not in packages:
            raise ContractError(
                f"{g.sub('package')}: '{package}' is not one of upstream_api.packages"
            )
        items = tuple(g.str_map("items").items())
        if not items:
            raise ContractError(f"{g.sub('items')}: name at least one identifier")
        groups.append(
            UnboundGroup(
                package=package,
                why=g.string("why"),
                items=items,
                deviation=g.string("deviation", ""),
            )
        )
        g.done()
    n.done()
    return UpstreamApi(packages=tuple(packages.items()), unbound=tuple(groups))


def _check_unbound(
    c: Contract, deviation_ids: set[str], ref: Callable[[str, str, set[str], str], None]
) -> None:
    """An unbound identifier is recorded once, and never one the contract binds."""
    bound = c.bound_go_names()
    seen: dict[tuple[str, str], str] = {}
    for i, group in enumerate(c.upstream_api.unbound):
        path = f"upstream_api.unbound[{i}]"
        ref("deviation", group.deviation, deviation_ids, f"{path}.deviation")
        for name, _ in group.items:
            key = (group.package, name)
            if key in bound:
                raise ContractError(f"{path}.items.{name}: bound by {bound[key]}; record it once")
            if key in seen:
                raise ContractError(f"{path}.items.{name}: recorded in {seen[key]} too")
            seen[key] = path


def _recorded(n: _Node) -> RecordedDifference:
    from .diff import KINDS  # the diff's kinds are the vocabulary of a recorded difference

    kind = n.string("kind")
    if kind not in KINDS:
        raise ContractError(
            f"{n.sub('kind')}: unknown kind '{kind}' (expected {_one_of(set(KINDS))})"
        )
    recorded = RecordedDifference(
        kind=kind, item=n.string("item"), why=n.string("why"), deviation=n.string("deviation", "")
    )
    n.done()
    return recorded


def _deviation(n: _Node) -> Deviation:
    d = Deviation(id=n.string("id"), doc=n.string("doc"), sources=n.strs("sources", required=True))
    n.done()
    return d


# --- types --------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|\[|\]|,)")


def parse_type(text: str, path: str) -> TypeRef:
    """Parse 'optional[list[str]]' into a TypeRef; names are checked later."""
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ContractError(f"{path}: cannot parse type '{text}'")
        tokens.append(m.group(1))
        pos = m.end()

    def parse(i: int) -> tuple[TypeRef, int]:
        if i >= len(tokens) or not re.match(r"[A-Za-z_]", tokens[i]):
            raise ContractError(f"{path}: cannot parse type '{text}'")
        name = tokens[i]
        i += 1
        if i < len(tokens) and tokens[i] == "[":
            args = []
            i += 1
            while True:
                arg, i = parse(i)
                args.append(arg)
                if i < len(tokens) and tokens[i] == ",":
                    i += 1
                    continue
                if i < len(tokens) and tokens[i] == "]":
                    return TypeRef(name, tuple(args)), i + 1
                raise ContractError(f"{path}: cannot parse type '{text}'")
        return TypeRef(name), i

    ref, end = parse(0)
    if end != len(tokens):
        raise ContractError(f"{path}: cannot parse type '{text}'")
    return ref


# --- references ---------------------------------------------------------------------------


def _unique(items: Iterable[tuple[str, str]], what: str) -> None:
    seen: dict[str, str] = {}
    for name, path in items:
        if name in seen:
            raise ContractError(f"{path}: duplicate {what} '{name}' (first at {seen[name]})")
        seen[name] = path


def _check_references(c: Contract) -> None:
    _unique(((s.id, f"contract.specs[{i}].id") for i, s in enumerate(c.specs)), "spec id")
    declared = [(t.name, f"types[{i}].name") for i, t in enumerate(c.types)]
    declared += [(t.name, f"interfaces[{i}].name") for i, t in enumerate(c.interfaces)]
    declared += [(t.name, f"payloads[{i}].name") for i, t in enumerate(c.payloads)]
    _unique(declared, "type name")
    _unique(((h.python, f"helpers[{i}].python") for i, h in enumerate(c.helpers)), "helper")
    _unique(((e.id, f"errors[{i}].id") for i, e in enumerate(c.errors)), "error id")
    _unique(((e.cls, f"errors[{i}].class") for i, e in enumerate(c.errors)), "error class")
    _unique(
        ((r.id, f"validation_rules[{i}].id") for i, r in enumerate(c.validation_rules)), "rule id"
    )
    _unique(((p.id, f"protocols[{i}].id") for i, p in enumerate(c.protocols)), "protocol id")
    _unique(((o.id, f"operations[{i}].id") for i, o in enumerate(c.operations)), "operation id")
    _unique(((d.id, f"deviations[{i}].id") for i, d in enumerate(c.deviations)), "deviation id")

    names = {n for n, _ in declared}
    spec_ids = {s.id for s in c.specs}
    error_ids = {e.id for e in c.errors}
    interfaces = {i.name for i in c.interfaces}
    protocol_ids = {p.id for p in c.protocols}
    deviation_ids = {d.id for d in c.deviations}
    payloads = {p.name for p in c.payloads}
    rules = {r.id for r in c.validation_rules}

    def check_type(t: TypeRef, path: str) -> None:
        known = (
            t.name in PRIMITIVES or t.name in ARROW_TYPES or t.name in GENERICS or t.name in names
        )
        if not known:
            raise ContractError(f"{path}: unknown type '{t.name}'")
        arity = {"list": 1, "optional": 1, "map": 2}.get(t.name)
        if arity is not None and len(t.args) != arity:
            raise ContractError(f"{path}: {t.name} takes {arity} type argument(s)")
        if t.name not in GENERICS and t.args:
            raise ContractError(f"{path}: '{t.name}' takes no type arguments")
        for a in t.args:
            check_type(a, path)

    def check_sources(sources: tuple[str, ...], path: str) -> None:
        for s in sources:
            if s.split(" ")[0] not in spec_ids:
                raise ContractError(f"{path}: source '{s}' names no spec in contract.specs")

    def ref(kind: str, value: str, known: set[str], path: str) -> None:
        if value and value not in known:
            raise ContractError(f"{path}: unknown {kind} '{value}'")

    check_sources(c.rowid.sources, "rowid.sources")
    if c.functions is not None:
        check_sources(c.functions.sources, "functions.sources")
        schema_methods = {m.name for i in c.interfaces if i.name == "Schema" for m in i.methods}
        for index, function_kind in enumerate(c.functions.kinds):
            path = f"functions.kinds[{index}]"
            ref("interface", function_kind.interface, interfaces, f"{path}.interface")
            ref("Schema method", function_kind.listed_by, schema_methods, f"{path}.listed_by")
            for key in (
                "no_return_chunks",
                "not_found",
                "list_failed",
                "flight_info_list_failed",
                "failed",
            ):
                ref("error", getattr(function_kind, key), error_ids, f"{path}.{key}")
    for i, t in enumerate(c.types):
        check_sources(t.sources, f"types[{i}].sources")
        _unique(((f.name, f"types[{i}].fields[{j}].name") for j, f in enumerate(t.fields)), "field")
        for j, f in enumerate(t.fields):
            check_type(f.type, f"types[{i}].fields[{j}].type")
        values = {v.name for v in t.values}
        for j, tr in enumerate(t.transitions):
            ref("enum value", tr.source, values, f"types[{i}].transitions[{j}].from")
            ref("enum value", tr.target, values, f"types[{i}].transitions[{j}].to")
            ref("deviation", tr.deviation, deviation_ids, f"types[{i}].transitions[{j}].deviation")
    python_methods: list[tuple[str, str]] = []
    for i, it in enumerate(c.interfaces):
        check_sources(it.sources, f"interfaces[{i}].sources")
        for e in it.extends:
            ref("interface", e, interfaces, f"interfaces[{i}].extends")
        for r in it.requirements:
            ref("requirement", r, set(c.requirements), f"interfaces[{i}].requirements")
        _unique(
            ((m.python, f"interfaces[{i}].methods[{j}].python") for j, m in enumerate(it.methods)),
            "method",
        )
        for j, m in enumerate(it.methods):
            if "Table" in it.extends:
                python_methods.append((m.python, f"interfaces[{i}].methods[{j}].python"))
            for k, p in enumerate(m.params):
                check_type(p.type, f"interfaces[{i}].methods[{j}].params[{k}].type")
            check_type(m.returns.type, f"interfaces[{i}].methods[{j}].returns.type")
    # One class may implement every capability interface: their Python names must differ.
    _unique(python_methods, "capability method name")
    for i, h in enumerate(c.helpers):
        check_sources(h.sources, f"helpers[{i}].sources")
        for k, p in enumerate(h.params):
            check_type(p.type, f"helpers[{i}].params[{k}].type")
        check_type(h.returns.type, f"helpers[{i}].returns.type")
    for i, payload in enumerate(c.payloads):
        check_sources(payload.sources, f"payloads[{i}].sources")
        _unique(
            ((f.wire, f"payloads[{i}].fields[{j}].wire") for j, f in enumerate(payload.fields)),
            "wire key",
        )
        for j, f in enumerate(payload.fields):
            check_type(f.type, f"payloads[{i}].fields[{j}].type")
            kind = f.wire_kind
            if kind not in WIRE_KINDS and kind.removeprefix("payload:") not in payloads:
                raise ContractError(
                    f"payloads[{i}].fields[{j}].type: no wire form for '{f.type}' (the codec"
                    f" carries {_one_of(set(WIRE_KINDS))} and payloads)"
                )
    _unique(((a.name, f"actions[{i}].name") for i, a in enumerate(c.actions)), "action")
    for i, action in enumerate(c.actions):
        check_sources(action.sources, f"actions[{i}].sources")
        ref("payload", action.request, payloads, f"actions[{i}].request")
        ref("payload", action.response, payloads, f"actions[{i}].response")
        ref("error", action.bad_request, error_ids, f"actions[{i}].bad_request")
    sentinels = {t.name for t in c.types if t.kind == "sentinel"}
    _unique(
        [(a.name, f"actions[{i}].name") for i, a in enumerate(c.actions)]
        + [(d.name, f"ddl_actions[{i}].name") for i, d in enumerate(c.ddl_actions)],
        "action",
    )
    for i, d in enumerate(c.ddl_actions):
        path = f"ddl_actions[{i}]"
        check_sources(d.sources, f"{path}.sources")
        ref("payload", d.request, payloads, f"{path}.request")
        fields = {f.name for f in c.payload(d.request).fields}
        for key, field_name in (
            ("catalog_field", d.catalog_field),
            ("schema_field", d.schema_field),
            ("table_field", d.table_field),
        ):
            ref("field of the request", field_name, fields, f"{path}.{key}")
        for j, (field_name, error_id) in enumerate(d.required):
            ref("field of the request", field_name, fields, f"{path}.required[{j}].field")
            ref("error", error_id, error_ids, f"{path}.required[{j}].error")
        for key in ("bad_payload", "unsupported", "failed"):
            ref("error", getattr(d, key), error_ids, f"{path}.{key}")
        ref("interface", d.interface, interfaces, f"{path}.interface")
        ref(
            "method",
            d.method,
            {m.python for m in c.interface(d.interface).methods},
            f"{path}.method",
        )
        for sentinel, error_id in d.sentinels:
            ref("sentinel", sentinel, sentinels, f"{path}.sentinels")
            ref("error", error_id, error_ids, f"{path}.sentinels.{sentinel}")
        for j, (kind, field_name) in enumerate(d.existing):
            ref("kind of existing name", kind, EXISTING_KINDS, f"{path}.existing[{j}].kind")
            ref("field of the request", field_name, fields, f"{path}.existing[{j}].field")
        _check_ddl_binding(c, d, path, ref)
        _check_ddl_client(c, d, path, ref)
    for i, recorded in enumerate(c.recorded):
        ref("deviation", recorded.deviation, deviation_ids, f"recorded_differences[{i}].deviation")
    _check_unbound(c, deviation_ids, ref)
    for i, error in enumerate(c.errors):
        check_sources(error.sources, f"errors[{i}].sources")
        for protocol_id in error.protocols:
            ref("protocol", protocol_id, protocol_ids | {"any"}, f"errors[{i}].protocols")
        ref("deviation", error.deviation, deviation_ids, f"errors[{i}].deviation")
    for i, rule in enumerate(c.validation_rules):
        check_sources(rule.sources, f"validation_rules[{i}].sources")
        for key, err in rule.errors:
            ref("error", err, error_ids, f"validation_rules[{i}].errors.{key}")
    for i, row in enumerate(c.matrix):
        for name in row.implements:
            ref("interface", name, interfaces, f"compatibility_matrix.rows[{i}].implements")
        for key, value in (("update", row.update), ("delete", row.delete)):
            if value is not None:
                ref(
                    "interface", value, set(row.implements), f"compatibility_matrix.rows[{i}].{key}"
                )
    check_sources(c.matrix_sources, "compatibility_matrix.sources")
    for i, protocol in enumerate(c.protocols):
        check_sources(protocol.sources, f"protocols[{i}].sources")
        for key, value in (
            ("no_metadata", protocol.no_metadata),
            ("unknown_operation", protocol.unknown_operation),
            ("unknown_action", protocol.unknown_action),
            ("no_manager", protocol.no_manager),
        ):
            ref("error", value, error_ids, f"protocols[{i}].{key}")
        for j, header in enumerate(protocol.headers):
            ref("error", header.missing, error_ids, f"protocols[{i}].headers[{j}].missing")
            ref("error", header.invalid, error_ids, f"protocols[{i}].headers[{j}].invalid")
    for i, o in enumerate(c.operations):
        path = f"operations[{i}]"
        check_sources(o.sources, f"{path}.sources")
        ref("protocol", o.protocol, protocol_ids, f"{path}.protocol")
        for name in o.interfaces:
            ref("interface", name, interfaces, f"{path}.interfaces")
        ref("error", o.not_supported, error_ids, f"{path}.not_supported")
        ref("payload", o.request, payloads, f"{path}.request")
        ref("payload", o.response, payloads | {STREAM_RESPONSE}, f"{path}.response")
        for rule_id in o.validation:
            ref("validation rule", rule_id, rules, f"{path}.validation")
        if o.interfaces and not o.not_supported:
            raise ContractError(f"{path}: an operation with interfaces needs 'not_supported'")
        if o.client is not None:
            _check_operation_client(c, o, path)
    _check_served(c)
    _unique(
        [
            (o.client.method, f"operations[{i}].client.method")
            for i, o in enumerate(c.operations)
            if o.client
        ]
        + [(d.name, f"ddl_actions[{i}].name") for i, d in enumerate(c.ddl_actions)],
        "client method",
    )
    _check_names(c)


def _check_operation_client(c: Contract, o: Operation, path: str) -> None:
    """A DoExchange method sends rows or rowids (no request); a DoPut one rows, a DoAction one
    none, each with a request whose fields the client knows how to fill."""
    assert o.client is not None
    inputs = {"doexchange": {"rows", "rowids"}, "doput": {"rows"}, "doaction": {"none"}}
    allowed = inputs.get(o.protocol, set())
    if o.client.input not in allowed:
        raise ContractError(
            f"{path}.client.input: a {o.protocol} operation's client sends"
            f" {_one_of(allowed) if allowed else 'nothing'}, not '{o.client.input}'"
        )
    if o.protocol == "doexchange":
        return
    fields = [f.name for f in c.payload(o.request).fields if f.const is None]
    unknown = [f for f in fields if f not in CLIENT_REQUEST_PARAMS]
    if unknown:
        raise ContractError(
            f"{path}.client: the client fills no request field {unknown[0]!r}"
            f" (it knows {_one_of(set(CLIENT_REQUEST_PARAMS))})"
        )


def _check_served(c: Contract) -> None:
    """No protocol serves a name twice (the dispatch table routes each to one handler)."""
    served = [
        (f"{o.protocol} {o.name}", f"operations[{i}].name") for i, o in enumerate(c.operations)
    ]
    for i, k in enumerate(c.functions.kinds if c.functions else ()):
        path = f"functions.kinds[{i}].exchange_operations"
        served += [(f"doexchange {name}", path) for name in k.exchange_operations]
    served += [(f"doaction {a.name}", f"actions[{i}].name") for i, a in enumerate(c.actions)]
    served += [
        (f"doaction {d.name}", f"ddl_actions[{i}].name") for i, d in enumerate(c.ddl_actions)
    ]
    _unique(served, "name a protocol serves")


_IDENT = re.compile(r"[a-z_][a-z0-9_]*")


def _check_names(c: Contract) -> None:
    checks: list[tuple[str, str, Callable[[str], bool]]] = []
    for i, h in enumerate(c.helpers):
        checks.append((h.python, f"helpers[{i}].python", lambda s: bool(_IDENT.fullmatch(s))))
    for i, it in enumerate(c.interfaces):
        for j, m in enumerate(it.methods):
            checks.append(
                (
                    m.python,
                    f"interfaces[{i}].methods[{j}].python",
                    lambda s: bool(_IDENT.fullmatch(s)),
                )
            )
    for value, path, ok in checks:
        if not ok(value):
            raise ContractError(f"{path}: '{value}' is not a snake_case Python name")


def _one_of(values: set[str]) -> str:
    return ", ".join(sorted(values))
