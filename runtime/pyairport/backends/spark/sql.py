"""Spark SQL text built from values (never from what a client wrote) and Spark's answers read
back: identifiers, exact typed literals, the row counts Delta's commands report, and the one
line a client may see of a Spark failure."""

from __future__ import annotations

import math
import re
from typing import Any

import pyarrow as pa


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def path_ident(path: str) -> str:
    """A Delta table addressed by its folder, as Spark SQL names it."""
    return f"delta.{quote(path)}"


def plain_type(data_type: pa.DataType) -> pa.DataType:
    """Spark hands strings/binaries back as large types; the table declares the plain ones."""
    if pa.types.is_large_string(data_type):
        return pa.string()
    if pa.types.is_large_binary(data_type):
        return pa.binary()
    if pa.types.is_large_list(data_type):
        return pa.list_(plain_type(data_type.value_type))
    return data_type


def affected(result: Any) -> int:
    """The rows a Delta UPDATE, DELETE or MERGE changed, from the row the command answers
    (its own metrics: no further query)."""
    return int(result.first()["num_affected_rows"])


# The types a Spark table's columns come back as, with their SQL names.
SPARK_TYPES = {
    pa.bool_(): "BOOLEAN",
    pa.int8(): "TINYINT",
    pa.int16(): "SMALLINT",
    pa.int32(): "INT",
    pa.int64(): "BIGINT",
    pa.float32(): "FLOAT",
    pa.float64(): "DOUBLE",
    pa.string(): "STRING",
    pa.binary(): "BINARY",
    pa.date32(): "DATE",
}


def string_token(text: str) -> str:
    """text as a Spark SQL string literal token, exactly: for the places the grammar takes only
    a token (COMMENT, TBLPROPERTIES), not an expression such as sql_literal's hex. Spark reads
    a backslash as an escape in a literal, so both it and the quote are escaped."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_literal(value: Any, data_type: pa.DataType) -> str | None:
    """value as a Spark SQL literal of exactly that value and type, or None for a type that
    has none here. Nothing a client sent reaches the SQL text as written: numbers are
    re-rendered from Python numbers, strings and binaries go in as hex."""
    spark_type = SPARK_TYPES.get(data_type)
    if spark_type is None and pa.types.is_decimal(data_type):
        spark_type = f"DECIMAL({data_type.precision},{data_type.scale})"
    if spark_type is None:
        return None
    if value is None:
        return f"CAST(NULL AS {spark_type})"
    if pa.types.is_boolean(data_type):
        return "TRUE" if value else "FALSE"
    if pa.types.is_integer(data_type):
        return f"CAST({int(value)} AS {spark_type})"
    if pa.types.is_floating(data_type):
        text = "NaN" if math.isnan(value) else repr(float(value)).replace("inf", "Infinity")
        return f"CAST('{text}' AS {spark_type})"  # repr round-trips; Spark reads these names
    if pa.types.is_decimal(data_type):
        return f"CAST('{format(value, 'f')}' AS {spark_type})"
    if pa.types.is_date(data_type):
        return f"DATE'{value.isoformat()}'"
    if pa.types.is_binary(data_type):
        return f"X'{bytes(value).hex()}'"
    return f"CAST(X'{str(value).encode().hex()}' AS STRING)"


# Spark's error classes whose cause is the client's, not the server's: the rows a statement
# sends (a constraint, a value) and the time point a scan asks for.
_REFUSED_ROWS = (
    "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES",
    "DELTA_NOT_NULL_CONSTRAINT_VIOLATED",
    "DELTA_NOT_NULL_NESTED_FIELD",
    "DELTA_GENERATED_COLUMNS_VALUE_MISMATCH",
    "DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED",
    "DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED",
    "DELTA_EXCEED_CHAR_VARCHAR_LIMIT",  # a CHAR(n) or VARCHAR(n) value longer than n
    "EXCEED_LIMIT_LENGTH",  # the same, where Spark itself checks it
    # the data exceptions of a CHECK constraint or generated column on the client's values
    "CAST_OVERFLOW",
    "CAST_INVALID_INPUT",
    "NUMERIC_VALUE_OUT_OF_RANGE",
    "ARITHMETIC_OVERFLOW",
    "DIVIDE_BY_ZERO",
    "DATETIME_OVERFLOW",
    "INVALID_ARRAY_INDEX",
    "INVALID_ARRAY_INDEX_IN_ELEMENT_AT",
)
_BAD_TIME_POINT = (
    "DELTA_CANNOT_TIME_TRAVEL",
    "DELTA_VERSION_NOT_FOUND",
    "DELTA_TIME_TRAVEL_INVALID_BEGIN_VALUE",
    "DELTA_VERSION_NOT_CONTIGUOUS",
    "DELTA_TIMESTAMP_GREATER_THAN_COMMIT",
    "DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION",
    "DELTA_INVALID_TIMESTAMP_FORMAT",
    "INVALID_TIME_TRAVEL_TIMESTAMP_EXPR",
)
_CLIENT_ERRORS = _REFUSED_ROWS + _BAD_TIME_POINT
_ERROR_CLASS = re.compile(r"\[([A-Z_][A-Z0-9_.]*)\]")
# What follows the first line of a Spark message: plans, stacks, JVM frames.
_NOT_FOR_CLIENTS = re.compile(
    r"\n|\bat [a-z]+\.[\w.$]+\(|== (Physical|Analyzed|Parsed) |'Project \[| SQLSTATE: "
)


# A violated CHECK constraint's line ends "with values:", and the row's values follow it, a
# " - column : value" line each: the client's own row, which it needs to find the row by.
_ROW_VALUES = re.compile(r"with values:\n((?: - [^\n]*(?:\n|$))+)")

# A file or folder of the server's (its lake, its temporary files): not the client's to see.
# An absolute path starts a word: "ALTER/CHANGE COLUMN" in Spark's own text is no path.
_PATH = re.compile(r"(?:file:)?(?<!\w)/(?=[\w.-])[^\s`'\",;)\]]*")


def error_class(exc: BaseException) -> str:
    """Spark's error class of exc: a client's among those its message names (a JVM error
    wraps its cause: TASK_WRITE_FAILED around a violated constraint), else the first; ""
    when it names none."""
    found = [c.split(".")[0] for c in _ERROR_CLASS.findall(str(exc))]
    return next((c for c in found if c in _CLIENT_ERRORS), found[0] if found else "")


def client_cause(exc: BaseException) -> str | None:
    """What of the client's a Spark failure came from: "rows" (a constraint, a value),
    "time point" (one the table has no version for), or None (the server's own failure)."""
    named = error_class(exc)
    if named in _REFUSED_ROWS:
        return "rows"
    return "time point" if named in _BAD_TIME_POINT else None


def caused_by_client(exc: BaseException) -> bool:
    return client_cause(exc) is not None


# py4j's first line ("An error occurred while calling o95.getResult") says only which JVM
# object failed; what happened is the innermost Java exception's message.
_PY4J_CALL = "An error occurred while calling "
_JAVA_CAUSE = re.compile(r"^(?:Caused by)?: (?:[a-z_$][\w$]*\.)+([\w$]+)(?:: (.*))?$", re.MULTILINE)


# A Spark Connect call that failed without an error of Spark's (its server out of memory, a
# message over gRPC's limit) is told in gRPC's own rendering of the call, whose first line says
# nothing: "<_MultiThreadedRendezvous of RPC that terminated with:" … `details = "…"`.
_GRPC_DETAILS = re.compile(r'^<_\w+ of RPC that terminated with:.*?\bdetails = "(.*?)"\n', re.S)


def one_line(exc: BaseException, limit: int = 300) -> str:
    """The line of a Spark failure that says what happened (the one naming its error class;
    where none is named, the innermost Java cause's message), without the plan, the stack or
    the JVM's frames around it (those go to the server's log)."""
    text = str(exc).strip()
    rendered = _GRPC_DETAILS.match(text)
    if rendered:
        text = rendered.group(1)
    named = error_class(exc)
    if named:
        text = text[text.index("[" + named) :]
    elif text.startswith(_PY4J_CALL):
        causes = _JAVA_CAUSE.findall(text)
        if causes:
            name, message = causes[-1]
            text = message.strip() or name
    cut = _NOT_FOR_CLIENTS.search(text)
    line = (text[: cut.start()] if cut else text).strip().rstrip(".:")
    values = _ROW_VALUES.search(text)
    if values and cut and values.start(1) == cut.end():  # the values of the line's own row
        line += ": " + "; ".join(v.strip()[2:] for v in values.group(1).splitlines())
    line = _PATH.sub("<path>", line)
    return (line[:limit].rstrip() + ("…" if len(line) > limit else "")) or type(exc).__name__
