"""Python functions served as airport-go's functions (protocol §6): the decorators a user
registers a function with, and the objects they make, which implement the contract's
ScalarFunction, TableFunction and TableFunctionInOut.

    @scalar_function(params=[pa.string()], returns=pa.string())
    def shout(text: pa.Array) -> pa.Array:
        return pc.utf8_upper(text)

    schema.add_function(shout)

A scalar function gets one pyarrow array per parameter and returns an array (or anything
pa.array takes) of the same length. A table function gets its arguments as Python values and
returns or yields record batches (or tables); an in-out function gets the client's rows as an
iterator of record batches after its arguments. A table function's schema is fixed or a
callable of the arguments (an in-out function's also of the rows' schema).

A function, or a schema callable, with a keyword parameter named `ctx` also gets the call's
Context: the caller's identity (`identity_from_context`), and what a function needs to refuse a
read the caller may not make. A function that reads a table it is given by name authorizes it
first, as the lake's history and table_changes do:

    @table_function(params=[pa.string()], schema=ROWS)
    def sample(name, *, ctx):
        path = table_path(name)                    # 'sales.orders', '"eu.sales".orders'
        if path is None:
            raise ValueError(f"name the table as schema.table, not {name!r}")
        authorize_table_read(ctx, *path)           # PERMISSION_DENIED as a scan of it would be
        ...
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import pyarrow as pa

from airport_contracts import Context, FunctionSignature, ScanOptions
from airport_contracts.dispatch import FUNCTION_WIRE

from .access.grants import authorize_table_read
from .names import table_path

__all__ = [
    "ANY",
    "Parameter",
    "PythonScalarFunction",
    "PythonTableFunction",
    "PythonTableFunctionInOut",
    "as_reader",
    "authorize_table_read",
    "scalar_function",
    "table_function",
    "table_function_in_out",
    "table_path",
]

STABILITIES = ("consistent", "volatile", "consistent_within_query")
"""DuckDB's function stabilities (deviation function_stability)."""


@dataclass(frozen=True)
class Parameter:
    """A parameter as DuckDB binds it: its type, and optionally its name (the catalog's
    default is param1, param2, …), whether it takes a value of any type (DuckDB sends the
    argument's own type) and whether SQL passes it by name (`fn(1, city := 'x')`)."""

    type: pa.DataType = field(default_factory=pa.string)
    name: str = ""
    any_type: bool = False
    named: bool = False


ANY = Parameter(any_type=True)
"""A parameter of any type."""

ParameterSpec: TypeAlias = pa.DataType | Parameter


def _parameter(spec: ParameterSpec) -> Parameter:
    if isinstance(spec, Parameter):
        return spec
    if isinstance(spec, pa.DataType):
        return Parameter(spec)
    raise TypeError(f"a parameter is a pyarrow DataType or a Parameter, not {spec!r}")


def _with_ctx(fn: Callable[..., Any], ctx: Context, *args: Any, **kwargs: Any) -> Any:
    """fn(*args, **kwargs), given ctx too when it has a parameter of that name."""
    if _takes(fn, "ctx"):
        kwargs["ctx"] = ctx
    return fn(*args, **kwargs)


@functools.cache
def _takes(fn: Callable[..., Any], name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


def _field(parameter: Parameter, index: int, table_input: bool = False) -> pa.Field:
    metadata = {}
    if table_input:
        metadata[FUNCTION_WIRE.table_input_metadata] = "1"
    if parameter.any_type:
        metadata[FUNCTION_WIRE.any_type_metadata] = "1"
    if parameter.named:
        metadata[FUNCTION_WIRE.named_parameter_metadata] = "1"
    name = parameter.name or FUNCTION_WIRE.parameter_name.format(index=index + 1)
    return pa.field(name, parameter.type, metadata=metadata or None)


class _Function:
    """What every kind shares: name, comment, parameters, stability."""

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str | None,
        params: Iterable[ParameterSpec],
        comment: str | None,
        stability: str | None = None,
    ) -> None:
        if stability is not None and stability not in STABILITIES:
            raise ValueError(f"stability must be one of {', '.join(STABILITIES)}")
        self.fn = fn
        self._name = name or fn.__name__
        self._comment = comment if comment is not None else inspect.getdoc(fn) or ""
        self.parameters = [_parameter(p) for p in params]
        self.stability = stability

    def name(self) -> str:
        return self._name

    def comment(self) -> str:
        return self._comment

    def parameter_schema(self) -> pa.Schema:
        """The parameters as the catalog lists them (names and DuckDB's field metadata)."""
        return pa.schema([_field(p, i) for i, p in enumerate(self.parameters)])

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._name}>"


class PythonScalarFunction(_Function):
    """A vectorised Python function: arrays in, an array out (ScalarFunction)."""

    def __init__(self, fn: Callable[..., Any], returns: pa.DataType, **kwargs: Any) -> None:
        super().__init__(fn, **kwargs)
        if not self.parameters:
            raise ValueError(f"scalar function {self.name()} needs at least one parameter")
        self.returns = returns

    def signature(self) -> FunctionSignature:
        return FunctionSignature(
            parameters=[p.type for p in self.parameters], return_type=self.returns
        )

    def execute(self, ctx: Context, input: pa.RecordBatch) -> pa.Array:
        result = _with_ctx(self.fn, ctx, *input.columns)
        if isinstance(result, pa.ChunkedArray):
            result = result.combine_chunks()
        if not isinstance(result, pa.Array):
            result = pa.array(result, type=self.returns)
        return result


class _RowsFunction(_Function):
    """A function that returns rows: of a fixed schema, or of one its arguments decide."""

    def __init__(
        self,
        fn: Callable[..., Any],
        schema: pa.Schema | Callable[..., pa.Schema],
        **kwargs: Any,
    ) -> None:
        super().__init__(fn, **kwargs)
        self.schema = schema

    def _schema(self, ctx: Context, *arguments: Any) -> pa.Schema:
        if isinstance(self.schema, pa.Schema):
            return self.schema
        schema: pa.Schema = _with_ctx(self.schema, ctx, *arguments)
        return schema


class PythonTableFunction(_RowsFunction):
    """A Python function of scalar arguments that returns rows (TableFunction)."""

    def signature(self) -> FunctionSignature:
        return FunctionSignature(parameters=[p.type for p in self.parameters])

    def schema_for_parameters(self, ctx: Context, params: list[Any]) -> pa.Schema:
        return self._schema(ctx, *params)

    def execute(
        self, ctx: Context, params: list[Any], opts: ScanOptions | None = None
    ) -> pa.RecordBatchReader:
        schema = self.schema_for_parameters(ctx, params)
        extra = {"options": opts or ScanOptions()} if _takes(self.fn, "options") else {}
        return as_reader(schema, _with_ctx(self.fn, ctx, *params, **extra))


class PythonTableFunctionInOut(_RowsFunction):
    """A Python function of scalar arguments and the client's rows (TableFunctionInOut).
    The rows parameter, last, is not in params: its type comes from the client."""

    def parameter_schema(self) -> pa.Schema:
        fields = list(super().parameter_schema())
        return pa.schema([*fields, _field(Parameter(), len(fields), table_input=True)])

    def signature(self) -> FunctionSignature:
        return FunctionSignature(parameters=[*(p.type for p in self.parameters), pa.string()])

    def schema_for_parameters(
        self, ctx: Context, params: list[Any], input_schema: pa.Schema | None
    ) -> pa.Schema:
        return self._schema(ctx, *params, input_schema)

    def execute(
        self,
        ctx: Context,
        params: list[Any],
        input: pa.RecordBatchReader,
        opts: ScanOptions | None = None,
    ) -> pa.RecordBatchReader:
        schema = self.schema_for_parameters(ctx, params, input.schema)
        return as_reader(schema, _with_ctx(self.fn, ctx, *params, iter(input)))


def as_reader(schema: pa.Schema, result: Any) -> pa.RecordBatchReader:
    """What a table function returned, as a reader of schema: a reader, a batch, a table, or
    an iterable of batches and tables. A generator runs to its first batch here, so that what
    it raises before any row fails the call before it answers."""
    if isinstance(result, pa.RecordBatchReader):
        return result
    if isinstance(result, (pa.RecordBatch, pa.Table)):
        result = [result]
    batches = _batches(result)
    first = next(batches, None)
    rest = batches if first is None else itertools.chain([first], batches)
    return pa.RecordBatchReader.from_batches(schema, rest)


def _batches(items: Iterable[Any]) -> Iterator[pa.RecordBatch]:
    for item in items:
        if isinstance(item, pa.Table):
            yield from item.to_batches()
        elif isinstance(item, pa.RecordBatch):
            yield item
        else:
            raise TypeError(f"a table function yields record batches or tables, not {item!r}")


def scalar_function(
    *,
    params: Iterable[ParameterSpec],
    returns: pa.DataType,
    name: str | None = None,
    comment: str | None = None,
    stability: str | None = None,
) -> Callable[[Callable[..., Any]], PythonScalarFunction]:
    """Make fn a scalar function: fn(*arrays) -> array, one value per row."""
    return functools.partial(
        PythonScalarFunction,
        returns=returns,
        name=name,
        params=params,
        comment=comment,
        stability=stability,
    )


def table_function(
    *,
    params: Iterable[ParameterSpec],
    schema: pa.Schema | Callable[..., pa.Schema],
    name: str | None = None,
    comment: str | None = None,
) -> Callable[[Callable[..., Any]], PythonTableFunction]:
    """Make fn a table function: fn(*values) returns or yields record batches of schema (or
    of schema(*values)). With a parameter named options, fn also gets the call's
    ScanOptions (columns and filters as hints)."""
    return functools.partial(
        PythonTableFunction, schema=schema, name=name, params=params, comment=comment
    )


def table_function_in_out(
    *,
    params: Iterable[ParameterSpec],
    schema: pa.Schema | Callable[..., pa.Schema],
    name: str | None = None,
    comment: str | None = None,
) -> Callable[[Callable[..., Any]], PythonTableFunctionInOut]:
    """Make fn an in-out table function: fn(*values, rows) gets the client's rows as an
    iterator of record batches and returns or yields record batches of schema (or of
    schema(*values, rows_schema)). Rows yielded after the input ends are sent too."""
    return functools.partial(
        PythonTableFunctionInOut, schema=schema, name=name, params=params, comment=comment
    )
