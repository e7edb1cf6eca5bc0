"""The shapes of the contract's tables: the generated package fills them with the contract's
rows (dispatch.py: protocols, operations, actions; contract.py: errors, deviations, the
compatibility matrix). The vocabularies of their fields are vocabulary.py's."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import AirportError
from .vocabulary import (
    CapabilityCheck,
    HeaderRole,
    OutputSchema,
    RowidSource,
    RulePhase,
    TableErrors,
    TotalChanged,
)

ErrorFactory = Callable[..., AirportError]
"""A contract error class: called with the row's parameters."""


@dataclass(frozen=True)
class Header:
    """A header a protocol reads, and the errors of its absence or malformed value."""

    name: str
    role: HeaderRole
    missing: ErrorFactory | None = None
    invalid: ErrorFactory | None = None
    true_value: str = ""


@dataclass(frozen=True)
class ProtocolRow:
    id: str
    transport: str
    headers: tuple[Header, ...]
    table_errors: TableErrors | None
    no_manager: ErrorFactory | None
    no_metadata: ErrorFactory | None
    unknown_operation: ErrorFactory | None
    unknown_action: ErrorFactory | None
    databases_path: str = ""  # the one-part PATH that lists the server's catalogs

    def header(self, role: HeaderRole) -> tuple[str, ...]:
        """The names of this protocol's headers of a role, in the order they are read."""
        return tuple(h.name for h in self.headers if h.role == role)


@dataclass(frozen=True)
class FunctionKindRow:
    """One function interface as the wire serves it (protocol §6): how the catalog lists it,
    which DoExchange operations call it and the errors of a call."""

    kind: str
    doc: str
    interface: str
    listed_by: str  # the Schema method (Python name) listing them
    catalog_type: str
    action_name: str  # "" means the function's own name
    exchange_operations: tuple[str, ...]
    no_return_chunks: ErrorFactory | None
    not_found: ErrorFactory
    list_failed: ErrorFactory
    flight_info_list_failed: ErrorFactory | None
    failed: ErrorFactory


@dataclass(frozen=True)
class FunctionWire:
    """The names functions use on the wire (protocol §6)."""

    parameter_name: str  # format with {index}, 1-based
    result_field: str
    table_input_metadata: str
    any_type_metadata: str
    named_parameter_metadata: str
    chunk_continues: bytes
    chunk_finished: bytes
    call_uri_prefix: str  # the data: URI of an endpoint DuckDB runs as a function call
    call_argument_name: str  # format with {index}, 0-based: a call's positional arguments


@dataclass(frozen=True)
class CapabilityMethod:
    """The DML method of a capability interface, as an operation calls it."""

    interface: str
    method: str
    takes_row_ids: bool  # the legacy interfaces: rowids apart from the rows
    takes_rows: bool


@dataclass(frozen=True)
class OperationRow:
    id: str
    protocol: str
    name: str
    statement: str
    doc: str
    interfaces: tuple[CapabilityMethod, ...]  # in order of preference
    not_supported: ErrorFactory | None
    capability_check: CapabilityCheck
    rowid: RowidSource
    validation: tuple[str, ...]  # validation rule ids, in the order they apply
    rule_errors: Mapping[str, Mapping[str, ErrorFactory]]
    """The error of each of its rules, by what the rule checks (the operation, or a part)."""
    output_schema: OutputSchema
    total_changed: TotalChanged
    request: type[Any] | None  # a payload class (airport_support.codecs.Payload)
    response: type[Any] | None  # None: the DoExchange stream
    rule_phases: Mapping[str, RulePhase] = field(default_factory=dict)
    """Where in the statement each of its rules is checked."""

    def rule_error(self, rule: str, key: str | None = None) -> ErrorFactory:
        """The error a rule of this operation raises (key: a part of the rule)."""
        return self.rule_errors[rule][key or self.name]

    def rules_in(self, phase: RulePhase) -> tuple[str, ...]:
        """Its rules checked in phase, in the order they apply."""
        return tuple(rule for rule in self.validation if self.rule_phases[rule] is phase)


@dataclass(frozen=True)
class ActionRow:
    """A DoAction of the read side (what DuckDB asks before and while it scans): its body and
    answer payloads and the error of a body that does not decode."""

    name: str
    doc: str
    request: type[Any] | None
    response: type[Any] | None
    bad_request: ErrorFactory | None = None


@dataclass(frozen=True)
class DdlBinding:
    """A DDL request whose fields are its method's arguments as they are: the request fields
    passed after ctx, the options struct filled from the request's fields of its fields'
    names, the names the errors quote (by error parameter; per sentinel where one names
    another field), the names held to the name rule (kind, field) and the field naming the
    table a rename's answer describes."""

    args: tuple[str, ...]
    options: type[Any]
    options_fields: tuple[str, ...]
    names: tuple[tuple[str, str], ...] = ()
    by_sentinel: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    checked: tuple[tuple[str, str], ...] = ()
    renamed_to: str = ""


@dataclass(frozen=True)
class DdlActionRow:
    """A DDL DoAction (protocol §5), run from its row by the dispatch library: the body
    (request, bad_payload), the catalog name field, the required fields in the order checked
    and their errors, what is looked up (target: catalog, schema or table, named by
    schema_field and table_field), whether ignore_not_found makes a missing one a success,
    the capability (interface, unsupported) and its method, the error of each sentinel a
    backend raises, the error of any other failure, the answer, how the request becomes
    the method's arguments where the contract says it (bind; else the runtime binds it), and
    the fields naming other objects the action finds (existing: (kind, field) pairs)."""

    name: str
    doc: str
    request: type[Any]
    bad_payload: ErrorFactory
    catalog_field: str
    required: tuple[tuple[str, ErrorFactory], ...]
    target: str
    schema_field: str
    table_field: str
    ignore_not_found: bool
    interface: str
    unsupported: ErrorFactory
    method: str
    sentinels: Mapping[type[Exception], ErrorFactory]
    failed: ErrorFactory
    answer: str
    bind: DdlBinding | None = None
    existing: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Route:
    """One name a protocol serves (a DoExchange or DoPut operation, a DoAction type), the
    method of the runtime's Handlers that serves it and the row it serves it by: an
    OperationRow, a FunctionKindRow, an ActionRow or a DdlActionRow."""

    protocol: str
    name: str
    handler: str
    row: OperationRow | FunctionKindRow | ActionRow | DdlActionRow


@dataclass(frozen=True)
class ErrorRow:
    id: str
    cls: str
    code: str
    message: str
    params: tuple[str, ...]
    protocols: tuple[str, ...]
    condition: str
    deviation: str
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class Deviation:
    id: str
    doc: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class MatrixRow:
    implements: tuple[str, ...]
    update: str | None
    delete: str | None


@dataclass(frozen=True)
class Recorded:
    """A difference from the Go source the contract records on purpose (diff-upstream lists it
    apart from drift): a deviation, an addition of pyairport's, or what it does not serve."""

    kind: str
    item: str
    why: str
    deviation: str = ""
    extra: tuple[str, ...] = field(default=())
