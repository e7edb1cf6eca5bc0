"""The Dispatcher: the entry point of every RPC a transport hands it, routing each name a
protocol serves by the generated ROUTES to the Handlers method serving it. Each protocol's
runner is a module of its own (do_exchange, do_put, do_action_dml, transactions,
catalog_actions, ddl_actions, functions, do_get); the dispatcher gives each the table access
(tables.Tables) and the TransactionManager it needs, and no runner calls back into it."""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterator, Mapping
from typing import Any

from airport_contracts import (
    Catalog,
    Context,
    InvalidPayload,
    InvalidPutOperation,
    StatementCanceled,
    TicketData,
    TransactionManager,
    flight_pb2,
)
from airport_contracts.dispatch import DDL_ACTIONS, PROTOCOLS, ROUTES, RULE_PHASES, Handlers
from airport_contracts.vocabulary import Protocol
from airport_support.rows import (
    ActionRow,
    DdlActionRow,
    FunctionKindRow,
    OperationRow,
    Route,
)
from airport_support.vocabulary import RulePhase

from ..access.audit import audit
from ..access.grants import Right, needing
from ..wire.ipc_body import MAX_MESSAGE_BYTES
from . import validation
from .catalog_actions import CatalogActions
from .ddl_actions import DdlActions, binder
from .do_action_dml import run_action_dml
from .do_exchange import run_exchange
from .do_get import Scans
from .do_put import json_command, run_put
from .events import (
    ActionCall,
    ExchangeCall,
    ExchangeEvent,
    ExchangeInput,
    ExchangeRequest,
    OutputFinal,
    PutCall,
)
from .flight_infos import FlightInfos
from .functions import Functions
from .served_scan import ServedScan
from .tables import Tables
from .transactions import abort_transaction, create_transaction, transaction_status
from .validation import ContractNotImplemented

log = logging.getLogger("pyairport.dispatch")


def require_implemented(
    routes: Mapping[tuple[str, str], Route],
    rules: Mapping[str, RulePhase],
    ddl_actions: Mapping[str, DdlActionRow] | None = None,
) -> None:
    """Every rule, route and DDL action of a contract has its code here; else
    ContractNotImplemented, one line naming what is missing."""
    validation.require_implemented(rules, "contracts.yaml")
    missing = sorted(
        {
            route.handler
            for route in routes.values()
            if route.handler in getattr(Dispatcher, "__abstractmethods__", ())
            or not callable(getattr(Dispatcher, route.handler, None))
        }
    )
    if missing:
        raise ContractNotImplemented(
            f"contracts.yaml routes to handler {', '.join(map(repr, missing))}, which"
            " pyairport.dispatch.Dispatcher does not implement"
        )
    unbound = [name for name, row in (ddl_actions or {}).items() if binder(row) is None]
    if unbound:
        raise ContractNotImplemented(
            f"contracts.yaml names action {', '.join(map(repr, unbound))}, which"
            " pyairport.dispatch does not implement"
        )


class Dispatcher(Handlers[ExchangeCall, PutCall, ActionCall]):
    """Serves every operation and action of the contract against a catalog.

    transactions is the optional TransactionManager; without it, DML runs without
    transactions and the transaction actions answer as protocol §2.2-2.3 describe.
    max_row_ids: the longest row_ids a spec-002 call may send (None: no limit).
    max_batch_bytes: the most a client's compressed batch (a table function's arguments) may
    decompress to.
    routes: the dispatch table (the generated one unless a test gives another).
    string_dictionaries: tables' string columns declared and streamed as Arrow dictionaries
    (wire/dictionaries.py).
    """

    def __init__(
        self,
        catalog: Catalog,
        transactions: TransactionManager | None = None,
        max_row_ids: int | None = None,
        max_batch_bytes: int = MAX_MESSAGE_BYTES,
        routes: Mapping[tuple[str, str], Route] = ROUTES,
        string_dictionaries: bool = False,
    ) -> None:
        self.catalog = catalog
        self.name = catalog_name(catalog)
        self.transactions = transactions
        self.tables = Tables(catalog, max_row_ids, max_batch_bytes)
        infos = FlightInfos(catalog, string_dictionaries)  # type: ignore[arg-type]
        self.functions = Functions(self.tables)
        self.read_actions = CatalogActions(self.tables, infos, self.functions)
        self.ddl_actions = DdlActions(self.tables, infos, self.name)
        self.scans = Scans(self.tables, infos, self.functions)
        self.routes = routes

    @property
    def location(self) -> str:
        """The address scan endpoints name (protocol §2.7); "" lets clients reuse theirs."""
        return self.read_actions.location

    @location.setter
    def location(self, value: str) -> None:
        self.functions.location = value

    # --- entry points, one per RPC ---------------------------------------------------------

    def exchange(
        self, ctx: Context, request: ExchangeRequest, stream: ExchangeInput
    ) -> Generator[ExchangeEvent, None, None]:
        """Serve one DoExchange request (DML or a function call); iterate the result to drive
        it."""
        route = self.routes.get((Protocol.DOEXCHANGE, request.operation))
        if route is None:
            unknown = PROTOCOLS[Protocol.DOEXCHANGE].unknown_operation
            assert unknown is not None
            raise unknown(operation=request.operation)
        events: Generator[ExchangeEvent, None, None] = getattr(self, route.handler)(
            route.row, ctx, ExchangeCall(request, stream)
        )
        return events

    def put(
        self, ctx: Context, command: bytes, transaction_id: str, stream: ExchangeInput
    ) -> bytes:
        """Serve one DoPut DML request; returns the PutResult's app_metadata."""
        ctx = needing(ctx, Right.WRITE)
        operation = "put"  # until the descriptor says more
        where: tuple[str, ...] = (self.name,)
        try:
            descriptor = json_command(command)
            named = descriptor.get("operation")
            if named is None:
                raise InvalidPayload(payload="descriptor", problem="missing field 'operation'")
            if not isinstance(named, str):
                raise InvalidPayload(
                    payload="descriptor", problem="field 'operation' must be a string"
                )
            operation = named
            route = self.routes.get((Protocol.DOPUT, operation))
            row = route.row if route is not None else None
            if route is None or not isinstance(row, OperationRow) or row.request is None:
                raise InvalidPutOperation(operation=operation)
            request = row.request.from_mapping(descriptor)
            where = (self.name, str(request.schema_name), str(request.table_name))
            call = PutCall(request, transaction_id, stream)
            answer: bytes = getattr(self, route.handler)(row, ctx, call)
        except Exception as exc:
            audit(ctx, operation, where, None, exc)
            self._abort_transaction(ctx, transaction_id)
            raise
        audit(ctx, operation, where, _affected_rows(row, answer), nbytes=_sent(stream))
        return answer

    def action(
        self,
        ctx: Context,
        action_type: str,
        body: bytes,
        transaction_id: str = "",
        decoded: Any = None,
    ) -> list[bytes]:
        """Serve one DoAction of the contract; returns the Result bodies. decoded: the body
        as the action's request payload, where the transport decoded it to route the call
        (the action does not decode it again)."""
        route = self.routes.get((Protocol.DOACTION, action_type))
        if route is None:
            unknown = PROTOCOLS[Protocol.DOACTION].unknown_action
            assert unknown is not None
            raise unknown(type=action_type)
        answer: list[bytes] = getattr(self, route.handler)(
            route.row, ctx, ActionCall(body, transaction_id, decoded)
        )
        return answer

    def get(self, ctx: Context, ticket: bytes, decoded: TicketData | None = None) -> ServedScan:
        """Serve one DoGet: the ticket's rows (decoded: the ticket, where the transport
        decoded it to route the call)."""
        return self.scans.scan(needing(ctx, Right.READ), ticket, decoded)

    def get_flight_info(
        self, ctx: Context, descriptor: flight_pb2.FlightDescriptor
    ) -> flight_pb2.FlightInfo:
        """Serve one GetFlightInfo."""
        return self.scans.flight_info(needing(ctx, Right.READ), descriptor)

    def list_flights(self, ctx: Context) -> Iterator[flight_pb2.FlightInfo]:
        """Serve one ListFlights: the FlightInfo of every table the call may read."""
        return self.scans.list_flights(needing(ctx, Right.READ))

    def knows_transaction(self, ctx: Context, transaction_id: str) -> bool:
        """Whether the transaction began in this catalog (a call that names no catalog but
        carries its transaction is this catalog's)."""
        if self.transactions is None:
            return False
        # A manager shared by every catalog (server.CatalogTransactions) knows each one's
        # transactions and says whose a transaction is; a catalog's own knows only its own.
        owns = getattr(self.transactions, "owns", None)
        try:
            if callable(owns):
                return bool(owns(ctx, transaction_id))
            _state, exists = self.transactions.get_transaction_status(ctx, transaction_id)
        except Exception:
            return False
        return bool(exists)

    @staticmethod
    def action_descriptions() -> dict[str, str]:
        """Every DoAction type served, with its description (ListActions)."""
        return {
            name: route.row.doc
            for (protocol, name), route in ROUTES.items()
            if protocol == Protocol.DOACTION
        }

    # --- the handlers ROUTES names --------------------------------------------------------------

    def doexchange_dml(
        self, row: OperationRow, ctx: Context, call: ExchangeCall
    ) -> Generator[ExchangeEvent, None, None]:
        """A DML statement's events, with its audit line; a failed one aborts the
        transaction it named."""
        ctx = needing(ctx, Right.WRITE)
        request = call.request
        where = (self.name, request.schema_name, request.table_name)
        try:
            events = run_exchange(self.tables, self.transactions, row, ctx, call)
        except Exception as exc:
            audit(ctx, request.operation, where, None, exc)
            raise
        return self._audited(
            ctx,
            request.operation,
            where,
            self._aborting_on_failure(ctx, request.transaction_id, events),
            call.stream,
        )

    def doexchange_function(
        self, row: FunctionKindRow, ctx: Context, call: ExchangeCall
    ) -> Generator[ExchangeEvent, None, None]:
        return self.functions.exchange(needing(ctx, Right.READ), row, call.request, call.stream)

    def doput_dml(self, row: OperationRow, ctx: Context, call: PutCall) -> bytes:
        """The PutResult's app_metadata (put() audits it)."""
        answer: bytes = run_put(self.tables, self.transactions, row, ctx, call)
        return answer

    def doaction_dml(self, row: OperationRow, ctx: Context, call: ActionCall) -> list[bytes]:
        """A DML action's answer, with its audit line; a failed one aborts the transaction
        it named. The body is decoded once, for the audit line and the action."""
        ctx = needing(ctx, Right.WRITE)
        if call.request is None:
            call = ActionCall(call.body, call.transaction_id, _decoded(row, call.body))
        where = (self.name, *_named_table(call.request))
        try:
            answer: bytes = run_action_dml(self.tables, self.transactions, row, ctx, call)
        except Exception as exc:
            audit(ctx, row.name, where, None, exc)
            self._abort_transaction(ctx, call.transaction_id)
            raise
        audit(ctx, row.name, where, _affected_rows(row, answer))
        return [answer]

    def create_transaction(self, row: OperationRow, ctx: Context, call: ActionCall) -> list[bytes]:
        return [create_transaction(self.transactions, row, needing(ctx, None), call)]

    def get_transaction_status(
        self, row: OperationRow, ctx: Context, call: ActionCall
    ) -> list[bytes]:
        return [transaction_status(self.transactions, row, needing(ctx, None), call)]

    def ddl(self, row: DdlActionRow, ctx: Context, call: ActionCall) -> list[bytes]:
        return self.ddl_actions.serve(needing(ctx, Right.DDL), row, call.body, call.request)

    # the read side's actions (catalog_actions.py): one Result body each

    def list_schemas(self, row: ActionRow, ctx: Context, call: ActionCall) -> list[bytes]:
        return [self.read_actions.list_schemas(needing(ctx, Right.READ), call.body, call.request)]

    def catalog_version(self, row: ActionRow, ctx: Context, call: ActionCall) -> list[bytes]:
        return [
            self.read_actions.catalog_version(needing(ctx, Right.READ), call.body, call.request)
        ]

    def endpoints(self, row: ActionRow, ctx: Context, call: ActionCall) -> list[bytes]:
        return [self.read_actions.endpoints(needing(ctx, Right.READ), call.body, call.request)]

    def flight_info(self, row: ActionRow, ctx: Context, call: ActionCall) -> list[bytes]:
        return [self.read_actions.flight_info(needing(ctx, Right.READ), call.body, call.request)]

    def table_function_flight_info(
        self, row: ActionRow, ctx: Context, call: ActionCall
    ) -> list[bytes]:
        return [
            self.read_actions.table_function_flight_info(
                needing(ctx, Right.READ), call.body, call.request
            )
        ]

    def column_statistics(self, row: ActionRow, ctx: Context, call: ActionCall) -> list[bytes]:
        return [
            self.read_actions.column_statistics(needing(ctx, Right.READ), call.body, call.request)
        ]

    # --- the audit line of a DoExchange statement --------------------------------------------

    @staticmethod
    def _audited(
        ctx: Context,
        operation: str,
        where: tuple[str, ...],
        events: Generator[ExchangeEvent, None, None],
        stream: ExchangeInput,
    ) -> Generator[ExchangeEvent, None, None]:
        """events, with the statement's audit line when it ends: ok with its row count once
        its final metadata went out, else failed."""
        changed: int | None = None
        try:
            for event in events:
                if isinstance(event, OutputFinal):
                    changed = event.total_changed
                yield event
        except GeneratorExit:
            events.close()  # the client went away: roll back now, not at garbage collection
            audit(
                ctx,
                operation,
                where,
                changed,
                None if changed is not None else StatementCanceled(operation=operation),
            )
            raise
        except Exception as exc:
            audit(ctx, operation, where, None, exc)
            raise
        audit(ctx, operation, where, changed, nbytes=_sent(stream))

    # --- a failed statement's transaction ----------------------------------------------------

    def _aborting_on_failure(
        self, ctx: Context, transaction_id: str, events: Iterator[ExchangeEvent]
    ) -> Generator[ExchangeEvent, None, None]:
        """events, aborting the statement's transaction if the statement fails before its
        statement scope opened (a lookup or a validation error); StatementRun aborts it
        afterwards. A client that goes away (GeneratorExit) is StatementRun's to handle:
        after the final metadata that is no failure."""
        try:
            yield from events
        except Exception:
            self._abort_transaction(ctx, transaction_id)
            raise

    def _abort_transaction(self, ctx: Context, transaction_id: str) -> None:
        if transaction_id and self.transactions is not None:
            abort_transaction(self.transactions, ctx, transaction_id)


def catalog_name(catalog: Catalog) -> str:
    """A catalog's name: name() where it has one (Go's NamedCatalog), else the default ""."""
    name = getattr(catalog, "name", None)
    return str(name()) if callable(name) else ""


def _sent(stream: ExchangeInput) -> int | None:
    """The Arrow bytes the client sent, where its input counts them (the transport's does)."""
    sent = getattr(stream, "body_bytes", None)
    return sent if isinstance(sent, int) else None


def _affected_rows(row: OperationRow, answer: bytes) -> int | None:
    """The affected_rows of a DML answer, decoded by the operation's response payload, for the
    audit line."""
    if row.response is None:
        return None
    rows = getattr(row.response.decode(answer), "affected_rows", None)
    return rows if isinstance(rows, int) else None


def _decoded(row: OperationRow, body: bytes) -> Any:
    """A DML action's body as the operation's request payload, decoded once for the audit line
    and the action; None when it does not decode (the action's own decoding reports why)."""
    if row.request is None:
        return None
    try:
        return row.request.decode(body)
    except InvalidPayload:
        return None


def _named_table(request: Any) -> tuple[str, ...]:
    """The schema and table a DML action's request names, for the audit line."""
    if request is None:
        return ()
    return (str(request.schema_name), str(request.table_name))


require_implemented(ROUTES, RULE_PHASES, DDL_ACTIONS)
