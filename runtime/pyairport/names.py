"""What a schema, table or column name may be (deviation names_confined): one rule for every
backend, so that no name a client sends can become a path out of a warehouse, a line that
breaks a listing, or a message that carries the server's insides. Everything else a name may
hold (spaces, quotes, punctuation, any script) is kept exactly.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator

import pyarrow as pa

from airport_contracts import NameInvalid

from .wire.go_text import go_quote

MAX_NAME_BYTES = 255
"""A name's longest UTF-8 form: a file system's longest folder name."""

_SEPARATORS = ("/", "\\")
_LINE_BREAKS = ("\u2028", "\u2029")


def name_problem(name: str) -> str | None:
    """Why name cannot be a schema, table or column name, or None when it can."""
    if not name:
        return "it is empty"
    if name in (".", ".."):
        return f"{name} names a folder, not a {'' if name == '.' else 'parent '}object"
    for separator in _SEPARATORS:
        if separator in name:
            return f"it holds the path separator {separator}"
    for character in name:
        if character == "\0":
            return "it holds a NUL character"
        if unicodedata.category(character) == "Cs":  # JSON's \\ud800 brings one; UTF-8 has none
            return f"it holds the lone surrogate U+{ord(character):04X}"
        if unicodedata.category(character) == "Cc" or character in _LINE_BREAKS:
            return f"it holds the control character U+{ord(character):04X}"
    size = len(name.encode())
    if size > MAX_NAME_BYTES:
        return f"it is {size} bytes long, more than {MAX_NAME_BYTES}"
    return None


def field_names(schema: pa.Schema) -> Iterator[str]:
    """Every column name of schema and every struct field name nested in its types."""
    for schema_field in schema:
        yield from _names(schema_field)


def _names(schema_field: pa.Field) -> Iterator[str]:
    yield schema_field.name
    yield from _nested_names(schema_field.type)


def _nested_names(data_type: pa.DataType) -> Iterator[str]:
    """The struct field names in data_type. A list's element and a map's key and value fields
    are the client library's to name (DuckDB names a fixed-size array's element ""), and
    Delta keeps no name for them: their types are looked into, their names are not names."""
    for struct in _structs(data_type):
        for index in range(struct.num_fields):
            yield from _names(struct.field(index))


def _structs(data_type: pa.DataType) -> Iterator[pa.StructType]:
    """The outermost struct types data_type is or holds, through lists and maps (whose own
    fields' names are not names: _nested_names)."""
    if pa.types.is_struct(data_type):
        yield data_type
    elif pa.types.is_map(data_type):
        yield from _structs(data_type.key_field.type)
        yield from _structs(data_type.item_field.type)
    elif (
        pa.types.is_list(data_type)
        or pa.types.is_large_list(data_type)
        or pa.types.is_fixed_size_list(data_type)
        or pa.types.is_list_view(data_type)
        or pa.types.is_large_list_view(data_type)
    ):
        yield from _structs(data_type.value_field.type)


class NameRefused(ValueError):
    """A name a backend cannot keep, and why (the client sees error name_invalid)."""

    def __init__(self, kind: str, name: str, reason: str) -> None:
        super().__init__(f"invalid {kind} name {name!r}: {reason}")
        self.kind = kind
        self.name = name
        self.reason = reason


def check_name(kind: str, name: str) -> None:
    """NameInvalid naming name and what is wrong with it, unless the rule allows it."""
    problem = name_problem(name)
    if problem is not None:
        raise NameInvalid(kind=kind, name=go_quote(name), reason=problem)


def check_columns(schema: pa.Schema) -> None:
    """Every column and nested field name of schema held to the rule, and no two of one level
    the same name (check_distinct)."""
    for name in field_names(schema):
        check_name("column", name)
    check_distinct(schema)


def name_key(name: str) -> str:
    """What DuckDB and Delta know a schema, table, column or field name by: they take a name
    whatever its case (Spark compares them by Java's equalsIgnoreCase, not casefold)."""
    return name.lower()


def same_name(name: str, other: str) -> bool:
    """Whether two names are one name to DuckDB and Delta (name_key)."""
    return name_key(name) == name_key(other)


def in_another_case(name: str, names: Iterable[str]) -> str | None:
    """The one of names that is name in another case, or None: a schema, table or column so
    named beside name would be the same one to DuckDB, which lists one and hides the other
    (a table "T" beside t took the statements sent to t)."""
    others = others_in_another_case(name, names)
    return others[0] if others else None


def others_in_another_case(name: str, names: Iterable[str]) -> list[str]:
    """Those of names that are name in another case."""
    return [other for other in names if other != name and same_name(other, name)]


def check_distinct(schema: pa.Schema) -> None:
    """NameInvalid for two columns, or two fields of one struct, whose names differ at most in
    case: DuckDB would read the second under a name of its own making (a_1) and its queries
    by the first name, and Delta refuses the table."""
    _check_distinct(list(schema))


def _check_distinct(fields: list[pa.Field]) -> None:
    seen: dict[str, str] = {}
    for each in fields:
        key = name_key(each.name)
        if key in seen:
            raise NameInvalid(
                kind="column",
                name=go_quote(each.name),
                reason=f"it is also the name of {go_quote(seen[key])}: DuckDB and Delta take"
                " a name whatever its case",
            )
        seen[key] = each.name
        for struct in _structs(each.type):
            _check_distinct([struct.field(i) for i in range(struct.num_fields)])


def refused(exc: NameRefused) -> NameInvalid:
    """What a client is told of a name a backend cannot keep."""
    return NameInvalid(kind=exc.kind, name=go_quote(exc.name), reason=exc.reason)


def table_path(text: str) -> tuple[str, str] | None:
    """The schema and table a function's 'schema.table' argument names, or None where it names
    no two: each name bare (the schema's up to the first dot, the table's the rest) or in
    double quotes, a quote inside doubled, as SQL writes a name that holds a dot:
    '"eu.sales".orders' is table orders of schema eu.sales, 's.a.b' table a.b of s."""
    schema = _leading_name(text)
    if schema is None or not text.startswith(".", schema[1]):
        return None
    rest = text[schema[1] + 1 :]
    table = _leading_name(rest) if rest.startswith('"') else (rest, len(rest))
    if table is None or table[1] != len(rest) or not schema[0] or not table[0]:
        return None
    return schema[0], table[0]


def _leading_name(text: str) -> tuple[str, int] | None:
    """The name text starts with and where it ends: a quoted one whole, else up to a dot."""
    if not text.startswith('"'):
        dot = text.find(".")
        return (text, len(text)) if dot < 0 else (text[:dot], dot)
    parts, at = [], 1
    while (close := text.find('"', at)) >= 0:
        parts.append(text[at:close])
        if not text.startswith('"', close + 1):
            return '"'.join(parts), close + 1
        at = close + 2
    return None  # the quote never closes
