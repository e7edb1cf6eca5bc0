"""The intermediate model: what contracts.yaml says, typed and cross-referenced.

The loader builds it, the templates read it, and the upstream extractor (goextract) builds the
same shapes from Go so the two can be diffed. Nothing here knows YAML or Jinja.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from airport_support.errors import StatusCode

# gRPC status codes by name (google.rpc.Code); the contract may use any of them.
STATUS_CODES: dict[str, int] = {code.name: code.value for code in StatusCode}

# Type vocabulary: contract name -> (Python annotation, Go type).
PRIMITIVES: dict[str, tuple[str, str]] = {
    "bool": ("bool", "bool"),
    "int64": ("int", "int64"),
    "uint64": ("int", "uint64"),
    "float64": ("float", "float64"),
    "str": ("str", "string"),
    "bytes": ("bytes", "[]byte"),
    "none": ("None", ""),
    "error": ("BaseException", "error"),
    "any": ("Any", "any"),  # a value of any type (Go: any, e.g. msgpack-decoded parameters)
}
ARROW_TYPES: dict[str, tuple[str, str]] = {
    "RecordBatchReader": ("pa.RecordBatchReader", "array.RecordReader"),
    "RecordBatch": ("pa.RecordBatch", "arrow.RecordBatch"),
    "Array": ("pa.Array", "arrow.Array"),
    "DataType": ("pa.DataType", "arrow.DataType"),
    "ArrowSchema": ("pa.Schema", "*arrow.Schema"),
    "Int64Array": ("pa.Int64Array", "[]int64"),
    "Context": ("Context", "context.Context"),
}
GENERICS = ("list", "optional", "tuple", "map")


@dataclass(frozen=True)
class TypeRef:
    """A parsed type expression such as optional[list[str]]."""

    name: str
    args: tuple[TypeRef, ...] = ()

    def __str__(self) -> str:
        if not self.args:
            return self.name
        return f"{self.name}[{', '.join(str(a) for a in self.args)}]"

    @property
    def is_optional(self) -> bool:
        return self.name == "optional"

    def names(self) -> set[str]:
        """Every type name in it, its arguments' included."""
        return {self.name}.union(*(a.names() for a in self.args))

    def python(self) -> str:
        """The Python annotation (modules import pyarrow as pa)."""
        if self.name == "optional":
            return f"{self.args[0].python()} | None"
        if self.name in ("list", "tuple"):
            return f"{self.name}[{', '.join(a.python() for a in self.args)}]"
        if self.name == "map":
            return f"dict[{self.args[0].python()}, {self.args[1].python()}]"
        if self.name in PRIMITIVES:
            return PRIMITIVES[self.name][0]
        if self.name in ARROW_TYPES:
            return ARROW_TYPES[self.name][0]
        return self.name

    def go(self) -> str:
        """The Go type the contract expects upstream, for the drift report."""
        if self.name == "optional":
            inner = self.args[0]
            if inner.name in PRIMITIVES or inner.name in ARROW_TYPES or inner.name == "list":
                return inner.go()
            return "*" + inner.go().lstrip("*")
        if self.name == "list":
            return "[]" + self.args[0].go()
        if self.name == "map":
            return f"map[{self.args[0].go()}]{self.args[1].go()}"
        if self.name == "tuple":
            return "(" + ", ".join(a.go() for a in self.args) + ")"
        if self.name in PRIMITIVES:
            return PRIMITIVES[self.name][1]
        if self.name in ARROW_TYPES:
            return ARROW_TYPES[self.name][1]
        return self.name


@dataclass(frozen=True)
class GoHome:
    """Where an item lives upstream."""

    package: str = ""
    file: str = ""
    ident: str = ""
    format: str = ""


@dataclass(frozen=True)
class Field:
    name: str
    type: TypeRef
    doc: str
    go: str = ""
    go_type: str = ""
    default: str | None = None
    # payload-only attributes
    wire: str = ""
    required: bool = False
    omitempty: bool = False
    const: str | None = None
    nullable: bool = False
    json_bytes: str = ""

    @property
    def wire_kind(self) -> str:
        """How the payload codec (airport_support.codecs) carries the field: the contract's
        type mapped to a wire kind, or payload:<Name> for a nested payload."""
        base = self.type.args[0] if self.type.is_optional else self.type
        if self.json_bytes == "base64":
            return "base64"
        if base.name == "list":
            return f"list[{base.args[0]}]"
        if base.name == "map":
            return f"map[{base.args[0]}, {base.args[1]}]"
        if base.name in PRIMITIVES:
            return base.name
        return f"payload:{base.name}"


@dataclass(frozen=True)
class EnumValue:
    name: str
    go: str
    value: str
    doc: str


@dataclass(frozen=True)
class Transition:
    source: str
    target: str
    by: str
    deviation: str = ""  # a `deviations` id when pyairport allows what the spec does not


@dataclass(frozen=True)
class TypeDef:
    name: str
    kind: str  # struct | enum | error_type
    doc: str
    go: GoHome
    sources: tuple[str, ...]
    fields: tuple[Field, ...] = ()
    values: tuple[EnumValue, ...] = ()
    transitions: tuple[Transition, ...] = ()
    message: str = ""


@dataclass(frozen=True)
class Param:
    name: str
    type: TypeRef
    doc: str
    go: str = ""
    default: str | None = None


@dataclass(frozen=True)
class Returns:
    type: TypeRef
    doc: str = ""
    go_name: str = ""
    go_type: str = ""


@dataclass(frozen=True)
class Method:
    name: str  # Go name
    python: str
    doc: str
    params: tuple[Param, ...]
    returns: Returns
    raises: bool = False
    go_params: tuple[tuple[str, str], ...] = ()  # Go type where upstream differs from the spec


@dataclass(frozen=True)
class Interface:
    name: str
    doc: str
    go: GoHome
    sources: tuple[str, ...]
    methods: tuple[Method, ...]
    extends: tuple[str, ...] = ()
    requirements: tuple[str, ...] = ()


@dataclass(frozen=True)
class Helper:
    name: str
    python: str
    doc: str
    go: GoHome
    sources: tuple[str, ...]
    params: tuple[Param, ...]
    returns: Returns
    raises: bool = False  # Go returns an error beside the result


@dataclass(frozen=True)
class Payload:
    name: str
    encoding: str  # json | msgpack
    doc: str
    go: GoHome
    sources: tuple[str, ...]
    fields: tuple[Field, ...]
    key_order: str = "declared"


@dataclass(frozen=True)
class ErrorRow:
    id: str
    cls: str
    protocols: tuple[str, ...]
    code: str
    message: str
    params: tuple[str, ...]
    condition: str
    sources: tuple[str, ...]
    go: GoHome = GoHome()
    note: str = ""
    deviation: str = ""
    from_tables: bool = False  # a table may raise it and every protocol sends it as it is

    @property
    def code_value(self) -> int:
        return STATUS_CODES[self.code]


@dataclass(frozen=True)
class Header:
    name: str
    role: str
    missing: str = ""
    invalid: str = ""
    true_value: str = ""
    note: str = ""


@dataclass(frozen=True)
class ProtocolDef:
    id: str
    transport: str
    doc: str
    sources: tuple[str, ...]
    headers: tuple[Header, ...]
    go: GoHome = GoHome()
    no_metadata: str = ""
    unknown_operation: str = ""
    unknown_action: str = ""
    table_errors: str = "wrap"  # wrap | pass_contract_errors
    no_manager: str = ""
    databases_path: str = ""  # the one-part PATH that lists the server's catalogs


@dataclass(frozen=True)
class OperationClient:
    """The client's method for a DML operation: its name, docstring and input (CLIENT_INPUTS)."""

    method: str
    doc: str
    input: str


CLIENT_INPUTS = frozenset({"rows", "rowids", "none"})

CLIENT_REQUEST_PARAMS: dict[str, tuple[str, str, str]] = {
    "schema_name": ("schema", "str", "schema"),
    "table_name": ("table", "str", "table"),
    "row_ids": ("row_ids", "Sequence[int]", "list(row_ids)"),
    "returning": ("returning", "bool = False", "returning"),
}
"""A DoPut or DoAction DML request field → the client method's parameter: its name, its
annotation (and default) and the field's value from it. returning is keyword-only."""


@dataclass(frozen=True)
class Operation:
    id: str
    protocol: str
    name: str
    doc: str
    sources: tuple[str, ...]
    statement: str = ""
    request: str = ""
    response: str = ""
    interfaces: tuple[str, ...] = ()
    not_supported: str = ""
    capability_check: str = ""
    rowid: str = ""
    validation: tuple[str, ...] = ()
    output_schema: str = ""
    total_changed: str = ""
    client: OperationClient | None = None


@dataclass(frozen=True)
class ValidationRule:
    id: str
    doc: str
    sources: tuple[str, ...]
    errors: tuple[tuple[str, str], ...]  # (operation name, error id)
    phase: str = ""  # airport_support.vocabulary.RulePhase


@dataclass(frozen=True)
class MatrixRow:
    implements: tuple[str, ...]
    update: str | None
    delete: str | None


@dataclass(frozen=True)
class Deviation:
    id: str
    doc: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class ReadAction:
    """A DoAction of the read side: what DuckDB asks before and while it scans."""

    name: str
    doc: str
    sources: tuple[str, ...]
    go: GoHome
    request: str = ""
    response: str = ""
    bad_request: str = ""  # the error of a body that does not decode ("": Go carries on)


@dataclass(frozen=True)
class DdlBinding:
    """How a DDL request whose fields are copied as they are becomes its method's arguments:
    the request fields passed after ctx (in the method's order; the options struct, the
    method's last parameter, is filled from the request's fields of the same names), and the
    names its errors and the name rule see, each a request field."""

    args: tuple[str, ...]
    names: tuple[tuple[str, str], ...] = ()  # (error parameter, request field)
    by_sentinel: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    checked: tuple[tuple[str, str], ...] = ()  # (kind of name, request field)
    renamed_to: str = ""  # the request field naming the table the answer describes


# A DDL request field's wire type (or an Arrow encoding) → the client parameter's annotation,
# default, and the field's value from the parameter ({} is the parameter's name).
CLIENT_FORMS: dict[str, tuple[str, str | None, str]] = {
    "str": ("str", None, "{}"),
    "bool": ("bool", "False", "{}"),
    "optional[str]": ("str | None", "None", "{}"),
    "map[str, str]": ("dict[str, str] | None", "None", "{} or {{}}"),
    "list[str]": ("Sequence[str]", "()", "list({})"),
    "list[uint64]": ("Sequence[int]", "()", "list({})"),
    "schema": ("pa.Schema", None, "serialize_schema({})"),
    "field": ("pa.Field", None, "serialize_schema(pa.schema([{}]))"),
}


@dataclass(frozen=True)
class DdlClientParam:
    """A parameter of the client's method for a DDL action and the request field it fills
    (encode: how an Arrow value becomes the field's bytes — schema, field — or, for a field
    filled from another parameter (source), what of it: path, the field's name as a path)."""

    field: str
    name: str = ""  # "" for a field filled from source
    encode: str = ""
    default: str | None = None
    source: str = ""
    required: bool = False  # no default, whatever the field's type would give


@dataclass(frozen=True)
class DdlClient:
    """The client's method for a DDL action: its docstring, parameters (catalog comes last,
    always) and the request fields it fixes."""

    doc: str
    params: tuple[DdlClientParam, ...]
    fixed: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ClientArgument:
    """A client method's parameter as Python spells it, and the request field's value."""

    name: str
    annotation: str
    default: str | None
    field: str
    value: str


@dataclass(frozen=True)
class DdlAction:
    """A DDL DoAction (protocol §5): what the dispatch library needs to run it from its row."""

    name: str
    doc: str
    sources: tuple[str, ...]
    go: GoHome
    request: str
    bad_payload: str
    catalog_field: str
    required: tuple[tuple[str, str], ...]  # (request field, error id), in the order checked
    target: str  # catalog | schema | table
    schema_field: str
    table_field: str
    ignore_not_found: bool
    interface: str
    unsupported: str
    method: str
    sentinels: tuple[tuple[str, str], ...]  # (sentinel type, error id)
    failed: str
    answer: str  # schema_contents | flight_info | none
    client: DdlClient | None = None
    bind: DdlBinding | None = None  # None: the request needs the runtime's own binder
    # The request fields that name an object the action finds (beyond its target's schema
    # and table fields), by kind of name (EXISTING_KINDS): deviation names_any_case.
    existing: tuple[tuple[str, str], ...] = ()  # (kind, request field)


@dataclass(frozen=True)
class RecordedDifference:
    """A difference from the Go source the contract keeps on purpose: diff-upstream reports it
    apart from drift. item names what the diff names (an item, Type.Member or package.Name)."""

    kind: str
    item: str
    why: str
    deviation: str = ""


@dataclass(frozen=True)
class UnboundGroup:
    """Exported Go identifiers of one package the contract does not bind, with why, each
    with the signature it had when recorded (so that a change to it upstream is drift)."""

    package: str
    why: str
    items: tuple[tuple[str, str], ...]  # (Go name: T, T.Member, Func or Const; signature)
    deviation: str = ""


@dataclass(frozen=True)
class UpstreamApi:
    """The packages whose whole public API diff-upstream watches, and what it leaves unbound."""

    packages: tuple[tuple[str, str], ...]  # (package name, folder in the module)
    unbound: tuple[UnboundGroup, ...]

    def folder(self, package: str) -> str:
        return dict(self.packages).get(package, package)

    def package(self, folder: str) -> str:
        return {f: p for p, f in self.packages}.get(folder, folder)


@dataclass(frozen=True)
class Rowid:
    name: str
    metadata_key: str
    accepted_types: tuple[str, ...]
    returning_excludes_metadata_value: str
    doc: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class FunctionKind:
    """One of airport-go's three function interfaces as the wire serves it (protocol §6)."""

    kind: str
    doc: str
    interface: str
    listed_by: str  # the Schema method listing them (Go name)
    catalog_type: str  # app_metadata "type" of its catalog entry
    action_name: str  # app_metadata "action_name"; "" means the function's own name
    exchange_operations: tuple[str, ...]  # airport-operation values that call it
    no_return_chunks: str
    not_found: str
    list_failed: str
    flight_info_list_failed: str
    failed: str


@dataclass(frozen=True)
class Functions:
    """How functions appear on the wire: catalog entries, markers, the kinds."""

    parameter_name: str  # a format with {index} (1-based): the catalog's parameter fields
    result_field: str
    table_input_metadata: str
    any_type_metadata: str
    named_parameter_metadata: str
    chunk_continues: str
    chunk_finished: str
    call_uri_prefix: str  # a scan endpoint DuckDB runs as a function call of its own
    call_argument_name: str  # a format with {index} (0-based): the call's positional arguments
    doc: str
    sources: tuple[str, ...]
    kinds: tuple[FunctionKind, ...]


@dataclass(frozen=True)
class Spec:
    id: str
    file: str
    title: str


@dataclass(frozen=True)
class RouteSpec:
    """One name a protocol serves, the handler serving it and its row (as generated code
    names it: OPERATIONS["…"], ACTIONS["…"], …)."""

    protocol: str
    name: str
    handler: str
    row: str


@dataclass(frozen=True)
class HandlerSpec:
    """A method the runtime's Handlers implement: the protocol whose calls it takes, the
    type of the rows it serves, and the names it serves."""

    name: str
    protocol: str
    row_type: str
    serves: tuple[str, ...]


DOACTION = "doaction"
DOEXCHANGE = "doexchange"


@dataclass(frozen=True)
class Contract:
    name: str
    version: int
    doc: str
    upstream_module: str
    upstream_ref: str
    specs: tuple[Spec, ...]
    rowid: Rowid
    types: tuple[TypeDef, ...]
    interfaces: tuple[Interface, ...]
    requirements: dict[str, str]
    helpers: tuple[Helper, ...]
    payloads: tuple[Payload, ...]
    errors: tuple[ErrorRow, ...]
    validation_rules: tuple[ValidationRule, ...]
    matrix: tuple[MatrixRow, ...]
    matrix_sources: tuple[str, ...]
    protocols: tuple[ProtocolDef, ...]
    operations: tuple[Operation, ...]
    deviations: tuple[Deviation, ...]
    actions: tuple[ReadAction, ...] = ()
    ddl_actions: tuple[DdlAction, ...] = ()
    functions: Functions | None = None
    recorded: tuple[RecordedDifference, ...] = ()
    upstream_api: UpstreamApi = UpstreamApi((), ())
    content_hash: str = field(default="", compare=False)

    # Look-ups the templates use; each raises KeyError on a name the loader let through,
    # which cannot happen because the loader checks every reference.
    def error(self, error_id: str) -> ErrorRow:
        return next(e for e in self.errors if e.id == error_id)

    def interface(self, name: str) -> Interface:
        return next(i for i in self.interfaces if i.name == name)

    def dispatch_error_classes(self) -> list[str]:
        """The error classes the protocol and operation rows and the rules name, sorted."""
        ids = {e for r in self.validation_rules for _, e in r.errors}
        ids |= {o.not_supported for o in self.operations}
        ids |= {a.bad_request for a in self.actions}
        for d in self.ddl_actions:
            ids |= {d.bad_payload, d.unsupported, d.failed} | {e for _, e in d.required}
            ids |= {e for _, e in d.sentinels}
        for p in self.protocols:
            ids |= {p.no_manager, p.no_metadata, p.unknown_operation, p.unknown_action}
            ids |= {h.missing for h in p.headers} | {h.invalid for h in p.headers}
        for k in self.functions.kinds if self.functions else ():
            ids |= {k.no_return_chunks, k.not_found, k.list_failed, k.flight_info_list_failed}
            ids |= {k.failed}
        return sorted(self.error(i).cls for i in ids if i)

    def bound_go_names(self) -> dict[tuple[str, str], str]:
        """Each upstream identifier the contract binds, (package, Go name as diff-upstream's
        API listing spells it: T, T.Member, Func, Const), with the contract item binding it."""
        bound: dict[tuple[str, str], str] = {}

        def bind(home: GoHome, member: str, path: str) -> None:
            if home.package and home.ident:
                name = f"{home.ident}.{member}" if member else home.ident
                bound.setdefault((home.package, name), path)

        for i, iface in enumerate(self.interfaces):
            path = f"interfaces[{i}] {iface.name}"
            bind(iface.go, "", path)
            for method in iface.methods:
                bind(iface.go, method.name, f"{path}.{method.name}")
        structs: list[tuple[str, TypeDef | Payload]]
        structs = [(f"types[{i}] {t.name}", t) for i, t in enumerate(self.types)]
        structs += [(f"payloads[{i}] {p.name}", p) for i, p in enumerate(self.payloads)]
        for path, item in structs:
            bind(item.go, "", path)
            for f in item.fields:
                bind(item.go, f.go or f.name, f"{path}.{f.name}")
        for i, t in enumerate(self.types):
            for value in t.values:
                bind(GoHome(t.go.package, ident=value.go), "", f"types[{i}] {t.name}.{value.name}")
        for i, h in enumerate(self.helpers):
            bind(h.go, "", f"helpers[{i}] {h.name}")
        for i, e in enumerate(self.errors):
            bind(e.go, "", f"errors[{i}] {e.id}")
        return bound

    def struct_field_types(self) -> set[str]:
        """Every type name the contract's structs' fields use."""
        return set().union(*(f.type.names() for t in self.types for f in t.fields))

    def capability_interfaces(self) -> list[str]:
        """The interfaces an operation runs through (the DML capabilities), in contract order."""
        used = {name for o in self.operations for name in o.interfaces}
        return [i.name for i in self.interfaces if i.name in used]

    def interface_types(self) -> list[str]:
        """The contract's own types the interfaces' methods take or return, sorted."""
        used: set[str] = set()
        for interface in self.interfaces:
            for method in interface.methods:
                used |= method.returns.type.names().union(*(p.type.names() for p in method.params))
        return sorted(t.name for t in self.types if t.name in used)

    def operation_payloads(self) -> list[str]:
        """The request and response payloads of the operations and actions, sorted."""
        names = {o.request for o in self.operations} | {o.response for o in self.operations}
        names |= {a.request for a in self.actions} | {a.response for a in self.actions}
        names |= {d.request for d in self.ddl_actions}
        return sorted(n for n in names if n and any(p.name == n for p in self.payloads))

    def method_names(self, interface_name: str) -> tuple[str, ...]:
        """The Python names of every method of an interface, inherited ones first."""
        interface = self.interface(interface_name)
        names: list[str] = []
        for parent in interface.extends:
            names += [n for n in self.method_names(parent) if n not in names]
        return tuple(names + [m.python for m in interface.methods if m.python not in names])

    def method_of(self, interface_name: str) -> Method:
        """The single DML method of a capability interface."""
        (method,) = self.interface(interface_name).methods
        return method

    def schema_method_python(self, go_name: str) -> str:
        """The Python name of a method of the Schema interface."""
        return next(m.python for m in self.interface("Schema").methods if m.name == go_name)

    def ddl_method(self, action: DdlAction) -> Method:
        return next(
            m for m in self.interface(action.interface).methods if m.python == action.method
        )

    def ddl_options(self, action: DdlAction) -> TypeDef:
        """The options struct a DDL action's method takes last."""
        name = self.ddl_method(action).params[-1].type.name
        return next(t for t in self.types if t.name == name)

    def client_arguments(self, action: DdlAction) -> list[ClientArgument]:
        """The client method's parameters in order and every request field they fill: the
        annotation and default follow the field's wire type, an Arrow value is serialized."""
        assert action.client is not None
        types = {f.name: f.type for f in self.payload(action.request).fields}
        arguments = []
        for p in action.client.params:
            if p.source:  # path: the one-element path of the field passed as source
                arguments.append(ClientArgument("", "", None, p.field, f"[{p.source}.name]"))
                continue
            annotation, default, value = CLIENT_FORMS[p.encode or str(types[p.field])]
            default = None if p.required else p.default if p.default is not None else default
            arguments.append(
                ClientArgument(p.name, annotation, default, p.field, value.format(p.name))
            )
        return arguments

    def ddl_unbound(self) -> list[DdlAction]:
        """The DDL actions without a bind map: the runtime binds their requests (DdlBinders)."""
        return [d for d in self.ddl_actions if d.bind is None]

    def ddl_bound_options(self) -> list[str]:
        """The options structs of the DDL actions the contract binds, sorted."""
        return sorted({self.ddl_options(d).name for d in self.ddl_actions if d.bind})

    def protocol(self, protocol_id: str) -> ProtocolDef:
        return next(p for p in self.protocols if p.id == protocol_id)

    def payload(self, name: str) -> Payload:
        return next(p for p in self.payloads if p.name == name)

    def rule(self, rule_id: str) -> ValidationRule:
        return next(r for r in self.validation_rules if r.id == rule_id)

    def rule_error(self, rule_id: str, operation: str) -> ErrorRow | None:
        errors = dict(self.rule(rule_id).errors)
        return self.error(errors[operation]) if operation in errors else None

    def action_names(self) -> list[str]:
        """Every DoAction type: the operations served over DoAction, the read side's, then the
        DDL actions."""
        names = [
            o.name for o in self.operations if self.protocol(o.protocol).transport == "DoAction"
        ]
        return names + [a.name for a in self.actions] + [d.name for d in self.ddl_actions]

    def header_names(self) -> list[str]:
        """Every header name a protocol reads, first appearance first."""
        return list(dict.fromkeys(h.name for p in self.protocols for h in p.headers))

    def routes(self) -> list[RouteSpec]:
        """Every name a protocol serves, with its handler: the DML operations of a protocol
        share one (`<protocol>_dml`: the operation's row says the rest), as do the function
        operations (`doexchange_function`) and the DDL actions (`ddl`: the row and its binding
        say the rest); every other operation and read-side action has its own, by its name."""
        found = [
            RouteSpec(
                o.protocol,
                o.name,
                f"{o.protocol}_dml" if o.interfaces else o.name,
                f"OPERATIONS[{o.id!r}]",
            )
            for o in self.operations
        ]
        for kind in self.functions.kinds if self.functions else ():
            found += [
                RouteSpec(DOEXCHANGE, name, "doexchange_function", f"FUNCTION_KINDS[{kind.kind!r}]")
                for name in kind.exchange_operations
            ]
        found += [RouteSpec(DOACTION, a.name, a.name, f"ACTIONS[{a.name!r}]") for a in self.actions]
        found += [
            RouteSpec(DOACTION, d.name, "ddl", f"DDL_ACTIONS[{d.name!r}]") for d in self.ddl_actions
        ]
        return found

    def handlers(self) -> list[HandlerSpec]:
        """The handlers the routes name, first named first."""
        row_types = {
            "OPERATIONS": "OperationRow",
            "FUNCTION_KINDS": "FunctionKindRow",
            "ACTIONS": "ActionRow",
            "DDL_ACTIONS": "DdlActionRow",
        }
        handlers: dict[str, HandlerSpec] = {}
        for route in self.routes():
            row_type = row_types[route.row.partition("[")[0]]
            known = handlers.get(route.handler)
            serves = (*known.serves, route.name) if known else (route.name,)
            handlers[route.handler] = HandlerSpec(route.handler, route.protocol, row_type, serves)
        return list(handlers.values())

    def dml_clients(self) -> list[Operation]:
        """The operations the client has a method for, in contract order."""
        return [o for o in self.operations if o.client is not None]

    def client_request_params(self, operation: Operation) -> list[tuple[str, str, str, str]]:
        """A DoPut or DoAction DML method's parameters from its request's fields: (field,
        name, annotation, value), the positional ones first (returning is keyword-only)."""
        fields = [f.name for f in self.payload(operation.request).fields if f.const is None]
        params = [(f, *CLIENT_REQUEST_PARAMS[f]) for f in fields]
        return sorted(params, key=lambda p: p[0] == "returning")

    def dml_client_payloads(self) -> tuple[list[str], list[str]]:
        """The request and response payloads the DML client methods use, each once."""
        used = [o for o in self.dml_clients() if o.protocol != "doexchange"]
        requests = list(dict.fromkeys(o.request for o in used))
        responses = list(dict.fromkeys(o.response for o in used))
        return requests, responses

    def transaction_header(self, protocol_id: str) -> str:
        """The header a protocol's call names its transaction in (its first of that role)."""
        return next(
            h.name for h in self.protocol(protocol_id).headers if h.role == "transaction_id"
        )

    def call_protocols(self) -> list[str]:
        """The protocols that have operations, in contract order (each gets a call type)."""
        used = {o.protocol for o in self.operations}
        return [p.id for p in self.protocols if p.id in used]

    def operations_of(self, protocol_id: str) -> tuple[Operation, ...]:
        return tuple(o for o in self.operations if o.protocol == protocol_id)

    def operation(self, operation_id: str) -> Operation:
        return next(o for o in self.operations if o.id == operation_id)
