"""Functions on the wire (protocol §6): their catalog entries, scalar and in-out calls over
DoExchange, and table function calls through table_function_flight_info, endpoints and
DoGet. What each kind is called, listed and answers with is the contract's (FUNCTION_KINDS,
FUNCTION_WIRE); the functions are the catalog's schemas' (Schema.scalar_functions, …)."""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterator
from typing import Any

import pyarrow as pa

from airport_contracts import (
    AirportError,
    Context,
    EndpointsInvalidDescriptor,
    FunctionAppMetadata,
    FunctionArgumentTypes,
    FunctionExtraData,
    FunctionInputInvalid,
    FunctionOutputSchemaFailed,
    FunctionParametersInvalid,
    FunctionSchemaFailed,
    FunctionSchemaLookupFailed,
    FunctionSchemaMismatch,
    FunctionSchemaNotFound,
    InOutParameters,
    InvalidPayload,
    ScalarResultLength,
    ScalarResultType,
    ScanOptions,
    TableFunctionPathInvalid,
    TableInputSchemaInvalid,
    TicketData,
    flight_pb2,
)
from airport_contracts.dispatch import FUNCTION_KINDS, FUNCTION_WIRE
from airport_support.arrow_ipc import serialize_schema
from airport_support.rows import FunctionKindRow

from ..observers import observer_from_context
from ..wire.column_ids import names_for_ids
from ..wire.ipc_body import check_decompressed
from .events import ExchangeEvent, ExchangeInput, ExchangeRequest, OutputBatch, OutputSchema
from .flight_infos import REUSE_CONNECTION
from .function_rows import in_out_answers
from .tables import Tables
from .validation import invalid_column

log = logging.getLogger("pyairport.functions")

SCALAR, TABLE, IN_OUT = FUNCTION_KINDS["scalar"], FUNCTION_KINDS["table"], FUNCTION_KINDS["in_out"]


def describe(exc: BaseException) -> str:
    """An exception as one line for the client (Go's %v of an error): its text, or its
    class when it has none."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def parameter_schema(function: Any, kind: FunctionKindRow) -> pa.Schema:
    """A function's parameters as the catalog lists them: the function's own
    parameter_schema (names, DuckDB's field metadata), else Go's param1, param2, … of its
    signature, an in-out function's last marked as the table argument."""
    own = getattr(function, "parameter_schema", None)
    if own is not None:
        schema: pa.Schema = own()
        return schema
    types = function.signature().parameters
    fields = []
    for index, data_type in enumerate(types):
        table_input = kind is IN_OUT and index == len(types) - 1
        metadata = {FUNCTION_WIRE.table_input_metadata: "1"} if table_input else None
        name = FUNCTION_WIRE.parameter_name.format(index=index + 1)
        fields.append(pa.field(name, data_type, metadata=metadata))
    return pa.schema(fields)


def _marked(schema_field: pa.Field, key: str) -> bool:
    return bool(schema_field.metadata and schema_field.metadata.get(key.encode()))


def scalar_parameters(schema: pa.Schema) -> list[pa.Field]:
    """The parameters a call's arguments stand for: all but the table argument."""
    return [f for f in schema if not _marked(f, FUNCTION_WIRE.table_input_metadata)]


def check_arguments(schema_name: str, function: Any, kind: FunctionKindRow, got: pa.Schema) -> None:
    """The arguments' types against the parameters' (deviation function_arguments_checked):
    a parameter of any type takes any."""
    expected = scalar_parameters(parameter_schema(function, kind))
    matches = len(got) == len(expected) and all(
        _marked(want, FUNCTION_WIRE.any_type_metadata) or want.type.equals(have.type)
        for want, have in zip(expected, got, strict=True)
    )
    if not matches:
        raise FunctionArgumentTypes(
            schema=schema_name,
            function=function.name(),
            expected=", ".join(
                "any" if _marked(f, FUNCTION_WIRE.any_type_metadata) else str(f.type)
                for f in expected
            ),
            got=", ".join(str(f.type) for f in got),
        )


def decode_parameters(raw: bytes, max_batch_bytes: int) -> pa.RecordBatch:
    """A call's arguments: an Arrow IPC stream of one row, a column per parameter (its
    messages' decompressed sizes checked before it is read)."""
    try:
        for message in pa.ipc.MessageReader.open_stream(pa.py_buffer(raw)):
            check_decompressed(message.metadata, message.body, max_batch_bytes)
        batches = list(pa.ipc.open_stream(pa.py_buffer(raw)))
    except (pa.ArrowInvalid, OSError) as exc:
        raise FunctionParametersInvalid(error=f"not an Arrow IPC stream: {exc}") from None
    if not batches:
        raise FunctionParametersInvalid(error="no parameter record found")
    problem = invalid_column(batches[0])
    if problem is not None:
        raise FunctionParametersInvalid(error=problem)
    return batches[0]


def valid_input(
    schema: str, function: str, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """A function's input batches, each refused before the function reads it when its data
    is not valid Arrow (deviation function_arguments_checked)."""
    for batch in batches:
        problem = invalid_column(batch)
        if problem is not None:
            raise FunctionInputInvalid(schema=schema, function=function, details=problem)
        yield batch


def parameter_values(arguments: pa.RecordBatch) -> list[Any]:
    """The arguments as Python values (Go: extractScalarValue of row 0; None without rows)."""
    return [column[0].as_py() if len(column) else None for column in arguments.columns]


class Functions:
    """The function calls of one catalog; location: the address function endpoints name
    ("" lets clients reuse their connection)."""

    def __init__(self, tables: Tables, location: str = "") -> None:
        self.tables = tables
        self.catalog = tables.catalog
        self.location = location

    # --- lookup -----------------------------------------------------------------------------

    def lookup(
        self, ctx: Context, kind: FunctionKindRow, schema_name: str, function_name: str
    ) -> Any:
        """The function of kind named function_name in schema_name, or the kind's errors."""
        schema = self._schema(ctx, schema_name)
        found = self._find(ctx, schema, kind, function_name, kind.list_failed)
        if found is None:
            raise kind.not_found(schema=schema_name, function=function_name)
        return found

    def _called(self, ctx: Context, schema_name: str, function: Any) -> None:
        """Tell the call's observer (the server's metrics) a served function was called."""
        observer = observer_from_context(ctx)
        if observer is not None:
            catalog = self.catalog.name()  # type: ignore[attr-defined]
            observer.function_call(catalog, schema_name, function.name())

    def _schema(self, ctx: Context, schema_name: str) -> Any:
        schema = self.tables.schema(
            ctx, schema_name, lambda error: FunctionSchemaLookupFailed(error=describe(error))
        )
        if schema is None:
            raise FunctionSchemaNotFound(schema=schema_name)
        return schema

    @staticmethod
    def _find(ctx: Context, schema: Any, kind: FunctionKindRow, name: str, failed: Any) -> Any:
        try:
            functions = _listed(ctx, schema, kind)
        except AirportError:
            raise
        except Exception as exc:
            raise failed(error=describe(exc)) from exc
        return next((f for f in functions if f.name() == name), None)

    # --- the catalog (list_schemas) ---------------------------------------------------------

    def catalog_infos(self, ctx: Context, schema: Any) -> list[flight_pb2.FlightInfo]:
        """Every function of schema as a catalog entry, in Go's order: table functions,
        scalar functions, in-out functions."""
        infos = []
        for kind in (TABLE, SCALAR, IN_OUT):
            for function in _listed(ctx, schema, kind):
                infos.append(self.catalog_info(schema.name(), function, kind))
        return infos

    def catalog_info(
        self, schema_name: str, function: Any, kind: FunctionKindRow
    ) -> flight_pb2.FlightInfo:
        if kind is SCALAR:
            return_type = function.signature().return_type
            output = pa.schema([pa.field(FUNCTION_WIRE.result_field, return_type)])
        else:
            output = pa.schema([])  # a table function's rows: known at call time
        stability = getattr(function, "stability", None)
        app_metadata = FunctionAppMetadata(
            type=kind.catalog_type,
            schema=schema_name,
            catalog=self.catalog.name(),  # type: ignore[attr-defined]
            name=function.name(),
            comment=function.comment(),
            input_schema=serialize_schema(parameter_schema(function, kind)),
            action_name=kind.action_name or function.name(),
            description=function.comment(),
            extra_data=FunctionExtraData(stability=stability).encode() if stability else None,
        )
        return flight_pb2.FlightInfo(
            schema=serialize_schema(output),
            flight_descriptor=_path(schema_name, function.name()),
            endpoint=[flight_pb2.FlightEndpoint(ticket=flight_pb2.Ticket(ticket=b"{}"))],
            total_records=-1,
            total_bytes=-1,
            ordered=False,
            app_metadata=app_metadata.encode(),
        )

    # --- DoExchange -------------------------------------------------------------------------

    def exchange(
        self, ctx: Context, kind: FunctionKindRow, request: ExchangeRequest, stream: ExchangeInput
    ) -> Generator[ExchangeEvent, None, None]:
        """A scalar or in-out function call (the exchange operation's kind)."""
        function = self.lookup(ctx, kind, request.schema_name, request.table_name)
        self._called(ctx, request.schema_name, function)
        if kind is SCALAR:
            return self._scalar(ctx, function, request, stream)
        return self._in_out(ctx, function, request, stream)

    def _scalar(
        self, ctx: Context, function: Any, request: ExchangeRequest, stream: ExchangeInput
    ) -> Generator[ExchangeEvent, None, None]:
        """DuckDB's lock-step: one answer batch per input batch (protocol §6.3)."""
        schema_name, name = request.schema_name, request.table_name
        return_type = function.signature().return_type
        output = pa.schema([pa.field(FUNCTION_WIRE.result_field, return_type)])
        input_schema = stream.read_schema()
        if input_schema is None:
            return
        check_arguments(schema_name, function, SCALAR, input_schema)
        yield OutputSchema(output)
        for batch in valid_input(schema_name, name, stream.batches()):
            try:
                result = function.execute(ctx, batch)
            except AirportError:
                raise
            except Exception as exc:
                log.warning("scalar function %s.%s raised", schema_name, name, exc_info=exc)
                raise SCALAR.failed(schema=schema_name, function=name, error=describe(exc)) from exc
            problem: AirportError | str | None = None
            if result is None:
                problem = "function returned nil array"
            elif len(result) != batch.num_rows:
                problem = ScalarResultLength(expected=batch.num_rows, got=len(result))
            elif not result.type.equals(return_type):
                problem = ScalarResultType(expected=return_type, got=result.type)
            if problem is not None:
                raise SCALAR.failed(schema=schema_name, function=name, error=problem)
            yield OutputBatch(pa.record_batch([result], schema=output))

    def _in_out(
        self, ctx: Context, function: Any, request: ExchangeRequest, stream: ExchangeInput
    ) -> Generator[ExchangeEvent, None, None]:
        """The arguments in the message before the rows, the rows' schema, then the answer
        to each input batch ended by chunk_finished (protocol §6.5)."""
        schema_name, name = request.schema_name, request.table_name
        input_schema = stream.read_schema()
        if input_schema is None:
            return
        message = self._in_out_message(stream)
        params = self._in_out_arguments(schema_name, function, message)
        try:
            output = function.schema_for_parameters(ctx, params, input_schema)
        except AirportError:
            raise
        except Exception as exc:
            raise FunctionOutputSchemaFailed(error=describe(exc)) from exc
        yield OutputSchema(output, FUNCTION_WIRE.chunk_continues)
        options = ScanOptions(
            columns=names_for_ids(output, list(message.column_ids)),
            filter=message.json_filters.encode() or None,
        )

        def failed(exc: BaseException) -> AirportError:
            if isinstance(exc, AirportError):
                return exc
            log.warning("table function %s.%s raised", schema_name, name, exc_info=exc)
            return IN_OUT.failed(schema=schema_name, function=name, error=describe(exc))

        answers = in_out_answers(
            lambda rows: function.execute(ctx, params, rows, options),
            input_schema,
            valid_input(schema_name, name, stream.batches()),
            output,
        )
        try:
            for batch, marker in answers:
                yield OutputBatch(batch, marker)
        except Exception as exc:
            raise failed(exc) from exc

    @staticmethod
    def _in_out_message(stream: ExchangeInput) -> InOutParameters:
        """The message DuckDB sends before the rows: the arguments, its column ids and
        filters (none from a client that sends no such message)."""
        leading: list[bytes] = getattr(stream, "leading_metadata", [])
        if not leading:
            return InOutParameters()
        try:
            return InOutParameters.decode(leading[-1])
        except InvalidPayload as exc:
            raise FunctionParametersInvalid(error=exc.problem) from None

    def _in_out_arguments(
        self, schema_name: str, function: Any, message: InOutParameters
    ) -> list[Any]:
        if not message.parameters:
            return []
        arguments = decode_parameters(message.parameters, self.tables.max_batch_bytes)
        check_arguments(schema_name, function, IN_OUT, arguments.schema)
        return parameter_values(arguments)

    # --- table_function_flight_info, endpoints, DoGet ----------------------------------------

    def flight_info(self, ctx: Context, request: Any) -> bytes:
        """A table function call's FlightInfo (request: the action's, decoded): its rows'
        schema for these arguments, and a ticket that calls it (protocol §6.4)."""
        descriptor = flight_pb2.FlightDescriptor()
        try:
            descriptor.ParseFromString(request.descriptor)
        except Exception as exc:
            raise EndpointsInvalidDescriptor(error=exc) from None
        path = list(descriptor.path)
        if len(path) != 2:
            raise TableFunctionPathInvalid(path="[" + " ".join(path) + "]")
        schema_name, name = path
        function, kind = self._table_function(ctx, schema_name, name, for_flight_info=True)
        arguments = (
            decode_parameters(request.parameters, self.tables.max_batch_bytes)
            if request.parameters
            else None
        )
        if arguments is not None:
            check_arguments(schema_name, function, kind, arguments.schema)
        params = parameter_values(arguments) if arguments is not None else []
        input_schema = None
        if kind is IN_OUT and request.table_input_schema:
            try:
                input_schema = pa.ipc.read_schema(pa.py_buffer(request.table_input_schema))
            except (pa.ArrowInvalid, OSError) as exc:
                raise TableInputSchemaInvalid(error=exc) from None
        schema = self._schema_for(ctx, function, kind, params, input_schema)
        # The catalog named, as an endpoints ticket names it: a named catalog's DoGet checks
        # it (the default catalog's is omitted, as Go's).
        ticket = TicketData(
            catalog=self.catalog.name(),  # type: ignore[attr-defined]
            schema=schema_name,
            table_function=name,
            function_params=request.parameters,
        )
        info = flight_pb2.FlightInfo(
            schema=serialize_schema(schema),
            flight_descriptor=_path(schema_name, name),
            endpoint=[
                flight_pb2.FlightEndpoint(
                    ticket=flight_pb2.Ticket(ticket=ticket.to_json()),
                    location=[flight_pb2.Location(uri=self.location or REUSE_CONNECTION)],
                )
            ],
            total_records=-1,
            total_bytes=-1,
            ordered=False,
        )
        return info.SerializeToString()

    def _table_function(
        self, ctx: Context, schema_name: str, name: str, for_flight_info: bool = False
    ) -> tuple[Any, FunctionKindRow]:
        """A table function or, for table_function_flight_info, an in-out one (Go looks in
        both there, table functions first)."""
        kinds = (TABLE, IN_OUT) if for_flight_info else (TABLE,)
        schema = self._schema(ctx, schema_name)
        for kind in kinds:
            failed = kind.flight_info_list_failed if for_flight_info else kind.list_failed
            found = self._find(ctx, schema, kind, name, failed)
            if found is not None:
                return found, kind
        raise TABLE.not_found(schema=schema_name, function=name)

    @staticmethod
    def _schema_for(
        ctx: Context,
        function: Any,
        kind: FunctionKindRow,
        params: list[Any],
        input_schema: pa.Schema | None,
    ) -> pa.Schema:
        try:
            if kind is IN_OUT:
                schema: pa.Schema = function.schema_for_parameters(ctx, params, input_schema)
            else:
                schema = function.schema_for_parameters(ctx, params)
        except AirportError:
            raise
        except Exception as exc:
            raise FunctionSchemaFailed(error=describe(exc)) from exc
        return schema

    def ticket(
        self,
        ctx: Context,
        schema_name: str,
        name: str,
        raw_parameters: bytes,
        column_ids: list[int],
        filters: bytes,
        point: Any,
    ) -> TicketData:
        """The endpoints action's ticket for a table function call (Go's
        createTableFunctionTicket): its arguments, and its columns by name."""
        function, kind = self._table_function(ctx, schema_name, name)
        arguments = decode_parameters(raw_parameters, self.tables.max_batch_bytes)
        check_arguments(schema_name, function, kind, arguments.schema)
        schema = self._schema_for(ctx, function, kind, parameter_values(arguments), None)
        return TicketData(
            catalog=self.catalog.name(),  # type: ignore[attr-defined]
            schema=schema_name,
            table_function=name,
            function_params=raw_parameters,
            columns=names_for_ids(schema, column_ids),
            filters=filters,
            time_point_unit=point.unit if point else "",
            time_point_value=point.value if point else "",
        )

    def scan(self, ctx: Context, ticket: TicketData, options: ScanOptions) -> pa.RecordBatchReader:
        """DoGet of a table function ticket: its rows, in the schema it declared."""
        function, kind = self._table_function(ctx, ticket.schema, ticket.table_function)
        self._called(ctx, ticket.schema, function)
        arguments = decode_parameters(ticket.function_params, self.tables.max_batch_bytes)
        check_arguments(ticket.schema, function, kind, arguments.schema)  # a forged ticket's too
        params = parameter_values(arguments)
        declared = self._schema_for(ctx, function, kind, params, None)
        try:
            reader: pa.RecordBatchReader = function.execute(ctx, params, options)
        except AirportError:
            raise
        except Exception as exc:
            log.warning(
                "table function %s.%s raised", ticket.schema, ticket.table_function, exc_info=exc
            )
            raise TABLE.failed(error=describe(exc)) from exc
        if not reader.schema.equals(declared):
            raise FunctionSchemaMismatch(declared=len(declared), reader_fields=len(reader.schema))
        return _failing_as(reader, lambda exc: TABLE.failed(error=describe(exc)))


def _listed(ctx: Context, schema: Any, kind: FunctionKindRow) -> list[Any]:
    """The schema's functions of kind; a schema written before functions were in the contract
    (without the listing method) has none."""
    listing = getattr(schema, kind.listed_by, None)
    return list(listing(ctx)) if listing is not None else []


def _path(schema_name: str, name: str) -> flight_pb2.FlightDescriptor:
    return flight_pb2.FlightDescriptor(
        type=flight_pb2.FlightDescriptor.PATH, path=[schema_name, name]
    )


def _failing_as(reader: pa.RecordBatchReader, error: Any) -> pa.RecordBatchReader:
    """reader, whose failure while streaming is error(exc) (a contract error passes)."""

    def batches() -> Generator[pa.RecordBatch, None, None]:
        try:
            yield from reader
        except AirportError:
            raise
        except Exception as exc:
            log.warning("table function raised while streaming", exc_info=exc)
            raise error(exc) from exc

    return pa.RecordBatchReader.from_batches(reader.schema, batches())
