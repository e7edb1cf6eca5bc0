"""DuckDB's filter pushdown (the `json_filters` of an `endpoints` request, handed to a scan as
ScanOptions.filter) turned into predicates a backend can evaluate: pyarrow expressions for
the memory backend, Spark columns for Spark, SQL text for delta-rs (DataFusion).

DuckDB applies its filters again to whatever a scan returns, so a scan may return more rows
than the filter allows, never fewer. Hence the rule: translate what is understood, widen
what is not. In an AND an unknown child is dropped (the result is wider); an OR or a NOT is
kept only when everything under it was translated exactly, because dropping part of an OR
would widen and dropping part of something under NOT would narrow. Malformed JSON gives no
predicate at all: the scan returns every row and DuckDB filters. A filter larger than the
engines take (they recurse over it: parser.MAX_TERMS) is cut the same way: an AND keeps its
first children, an IN of too many values becomes the range of its values, and the tree each
backend runs is balanced, log2(n) deep.

The JSON is DuckDB's serialization of bound expressions: {"filters": [...],
"column_binding_names_by_index": [...]}, each filter with "expression_class" and "type".
Only comparisons, IN / NOT IN, BETWEEN, IS [NOT] NULL, [NOT] LIKE (patterns.py), AND, OR and
NOT over plain columns and constants of boolean, integer, VARCHAR, DATE, TIMESTAMP [WITH TIME
ZONE] and DECIMAL types are translated (constants.py), and a constant only where it matches
its column's type, a decimal's scale included (so no backend has to cast, which Spark's ANSI
mode would turn into a runtime error). Floating-point columns are never filtered: DuckDB
orders NaN above every number and pyarrow's comparisons are false for NaN, so a pushed-down
`x > 5` would lose the NaN rows DuckDB keeps. ILIKE is left to DuckDB: engines fold case
differently beyond ASCII.
"""

from .arrow import arrow_expression
from .model import And, Between, Compare, In, IsNull, Like, Not, Or, Predicate, columns_of
from .parser import parse
from .spark import spark_column, spark_safe
from .sql import sql_identifier, sql_text
from .translate import Translator, translate
from .writer import to_json

__all__ = [
    "And",
    "Between",
    "Compare",
    "In",
    "IsNull",
    "Like",
    "Not",
    "Or",
    "Predicate",
    "Translator",
    "arrow_expression",
    "columns_of",
    "parse",
    "spark_column",
    "spark_safe",
    "sql_identifier",
    "sql_text",
    "to_json",
    "translate",
]
