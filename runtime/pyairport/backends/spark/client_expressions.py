"""Whether an expression a client wrote (a CHECK constraint, a column's DEFAULT) may run in the
server's Spark, which evaluates it on every write to the table, for every user.

What is refused and why: a subquery reads tables the writer may not (another schema's, any
path); `reflect` / `java_method` call any static Java method (`System.exit` among them);
`current_user` names the server's own account, never the caller's; a regular expression
(`RLIKE`, `regexp_*`) or a LIKE pattern Spark matches by backtracking (the rule the scans'
filters follow, filters/patterns.py) can hold a task for hours on one crafted row; `repeat`,
`lpad` and their kind make a value as large as a number the client chose, enough to end the
JVM every user shares. A deny-list of those names was not enough: Spark takes a function's
name quoted (`` `reflect`(…) ``) or through `IDENTIFIER('reflect')`. So the expression is
read by Spark's own parser, and every part of its tree must be one this module allows:
comparisons, arithmetic, CASE, casts, LIKE with a constant pattern holding one `%` or one at
each end, and the functions named below, whose cost is linear in the values they are given.
Where no parser can be asked (Spark Connect), the text is held to the same functions by its
tokens, with anything that could hide a name (backquotes, comments, escapes, letters outside
ASCII) refused.

The text comes in DuckDB's dialect (the Airport extension sends DuckDB's own rendering of the
expression) and Spark reads another: `'it''s'` is two strings to Spark ("its"), `'a\b'` holds
an escape, `"my col"` is a string, `~~` is not LIKE. spark_expression re-spells those tokens
so that the constraint Spark keeps and the default it stores mean what the client wrote.
"""

from __future__ import annotations

import re
from typing import Any

from airport_contracts import EngineUnavailable

from ...filters import patterns
from .session import SPARK_STOPPED, engine_lost, is_connect
from .sql import one_line, quote, string_token

# Deterministic or clock-reading builtins with a cost linear in their arguments.
ALLOWED_FUNCTIONS = frozenset(
    """
    abs acos acosh asin asinh atan atan2 atanh bround cbrt ceil ceiling cos cosh cot degrees
    e exp expm1 floor greatest hypot least ln log log10 log1p log2 mod negative pi pmod
    positive pow power radians rint round sign signum sin sinh sqrt tan tanh
    try_add try_divide try_multiply try_subtract
    between coalesce equal_null if ifnull isnan isnotnull isnull nanvl nullif nullifzero
    nvl nvl2 zeroifnull
    ascii bit_length btrim char_length character_length concat concat_ws endswith initcap
    lcase left len length lower ltrim octet_length reverse right rtrim startswith substr
    substring trim ucase upper
    add_months curdate current_date current_timestamp date date_add date_diff date_part
    date_sub date_trunc dateadd datediff datepart day dayofmonth dayofweek dayofyear extract
    hour last_day localtimestamp make_date make_timestamp minute month months_between now
    quarter second timestamp timestamp_micros timestamp_millis timestamp_seconds to_date
    to_timestamp trunc unix_date unix_micros unix_millis unix_seconds weekday weekofyear year
    bigint binary boolean decimal double float int smallint string tinyint
    array array_contains array_size cardinality element_at map named_struct size struct
    """.split()
)

# Names Spark resolves without parentheses to the server's own state, not the caller's.
_SERVER_STATE = frozenset(
    {
        "current_user",
        "user",
        "session_user",
        "current_catalog",
        "current_database",
        "current_schema",
    }
)

# The parts of a parsed expression's tree (Catalyst's unresolved nodes) that run nothing but
# the row's own values; functions, names and LIKE are looked at more closely below.
_ALLOWED_NODES = frozenset(
    """
    Literal UnresolvedAttribute UnresolvedExtractValue CreateNamedStruct
    And Or Not EqualTo EqualNullSafe LessThan LessThanOrEqual GreaterThan GreaterThanOrEqual
    In IsNull IsNotNull Add Subtract Multiply Divide Remainder IntegralDivide UnaryMinus
    UnaryPositive BitwiseAnd BitwiseOr BitwiseXor BitwiseNot Cast CaseWhen If Concat Collate
    UnresolvedCollation UnresolvedFunction Like ILike
    """.split()
)
_SUBQUERIES = frozenset({"ScalarSubquery", "Exists", "ListQuery", "InSubquery", "LateralSubquery"})
_NAMED = {
    "RLike": "'RLIKE'",
    "LikeAny": "'LIKE ANY'",
    "LikeAll": "'LIKE ALL'",
    "NotLikeAny": "'NOT LIKE ANY'",
    "NotLikeAll": "'NOT LIKE ALL'",
    "ExpressionWithUnresolvedIdentifier": "'IDENTIFIER(…)'",
    "UnresolvedStar": "'*'",
    "LambdaFunction": "a lambda function",
    "WindowExpression": "a window",
}
# More terms than any constraint a person writes: each costs the parser's tree a few calls.
MAX_TERMS = 2_000


class _Refused(Exception):
    """What of the expression is not allowed, as the refusal names it."""


def refusal(spark: Any, expression: str) -> str | None:
    """Why expression, in DuckDB's dialect as a client sends it, may not run in the server's
    Spark as spark_expression spells it ("'reflect' is not allowed", Spark's own parse
    error), or None when it may."""
    try:
        if is_connect(spark):
            _check_tokens(expression)
            return None
        try:
            parser = spark._jsparkSession.sessionState().sqlParser()
            tree = parser.parseExpression(spark_expression(expression))
        except Exception as exc:  # ParseException: Spark's reason, one line
            if engine_lost(exc):
                raise EngineUnavailable(error=SPARK_STOPPED) from None
            return one_line(exc)
        _check_tree(tree)
    except _Refused as refused:
        return f"{refused} is not allowed in one"
    return None


def _check_tree(root: Any) -> None:
    pending, terms = [root], 0
    while pending:
        node = pending.pop()
        terms += 1
        if terms > MAX_TERMS:
            raise _Refused(f"an expression of more than {MAX_TERMS:,} terms")
        kind = node.nodeName()
        if kind in _SUBQUERIES:
            raise _Refused("a subquery")
        if kind not in _ALLOWED_NODES:
            raise _Refused(_NAMED.get(kind, f"this kind of expression ({kind})"))
        if kind == "UnresolvedFunction":
            _check_function(_parts(node.nameParts()))
        elif kind == "UnresolvedAttribute":
            parts = _parts(node.nameParts())
            if len(parts) == 1 and parts[0].lower() in _SERVER_STATE:
                raise _Refused(repr(parts[0]))
        elif kind in ("Like", "ILike"):
            _check_like(node)
        children = node.children()
        pending.extend(children.apply(i) for i in range(children.size()))


def _parts(seq: Any) -> list[str]:
    return [str(seq.apply(i)) for i in range(seq.size())]


def _check_function(parts: list[str]) -> None:
    name = ".".join(parts)
    # ASCII only: a name Python lowers to an allowed one must be the one Spark resolves.
    if len(parts) != 1 or not name.isascii() or name.lower() not in ALLOWED_FUNCTIONS:
        raise _Refused(repr(name))


def _check_like(like: Any) -> None:
    """A LIKE must have a constant pattern that Spark matches in time linear in the row's
    value (patterns.is_linear), escaped by the default escape character (with another, a
    `\\%` that looks escaped is a wildcard)."""
    pattern = like.right()
    if pattern.nodeName() != "Literal" or pattern.value() is None:
        raise _Refused("a LIKE pattern that is not a constant")
    if str(like.escapeChar()) != patterns.ESCAPE:
        raise _Refused("a LIKE with ESCAPE")
    _check_like_text(str(pattern.value().toString()))


def _check_like_text(text: str) -> None:
    if not patterns.is_linear(text):
        raise _Refused("a LIKE pattern Spark would match by backtracking")


# DuckDB's text (what the Airport extension sends: its own rendering of the expression) has
# strings '…' with '' for a quote and no escapes, names "…" with "" for a quote, and LIKE as
# operators; Spark's reads a backslash in a string as an escape and '' as two strings.
_STRING = r"'(?:[^']|'')*'"
_NAME = r'"(?:[^"]|"")*"'
_DUCKDB_TOKEN = re.compile(rf"{_STRING}|{_NAME}|!~~\*|~~\*|!~~|~~~|~~|\bi?like\b", re.IGNORECASE)
_DUCKDB_STRING = re.compile(_STRING)
_DUCKDB_NAME = re.compile(_NAME)
_LIKE_OPERATORS = {"!~~*": " NOT ILIKE ", "~~*": " ILIKE ", "!~~": " NOT LIKE ", "~~": " LIKE "}


def spark_expression(text: str) -> str:
    """DuckDB's expression text as Spark SQL of the same meaning: each string and quoted name
    re-spelled exactly, LIKE's operators as words, a LIKE's pattern in Spark's form (DuckDB's
    LIKE has no escape character; Spark's takes a backslash as one). GLOB's `~~~` stays, for
    Spark to refuse."""
    after_like = False

    def respelled(token: re.Match[str]) -> str:
        nonlocal after_like
        found, was_like = token.group(0), after_like
        after_like = found in _LIKE_OPERATORS or found.lower() in ("like", "ilike")
        if found.startswith("'"):
            value = found[1:-1].replace("''", "'")
            return string_token(patterns.from_duckdb(value) if was_like else value)
        if found.startswith('"'):
            return quote(found[1:-1].replace('""', '"'))
        return _LIKE_OPERATORS.get(found, found)

    return _DUCKDB_TOKEN.sub(respelled, text)


# Spark Connect: the tokens of DuckDB's text, whose strings and names lex simply; anything
# outside them that could hide a name from the checks below is refused.
_HIDING = re.compile(r"`|--|/\*|\\|\$|\bidentifier\b", re.IGNORECASE)
_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*(\.\s*[A-Za-z_][A-Za-z0-9_]*\s*)*\(")
_KEYWORDS = re.compile(
    r"\b(select|from|table|exists|lateral|rlike|regexp|glob|similar|escape|over"
    r"|(?:i?like|~~\*?)\s+(?:any|all|some))\b|->|~~~|;",
    re.IGNORECASE,
)
# Words Spark's grammar puts before a parenthesis without a function being called.
_SYNTAX = frozenset(
    "and or not in is between case when then else end cast try_cast interval collate".split()
)
_WORD = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
_LIKE = re.compile(rf"(?:\bi?like\b|~~\*?)\s*({_STRING})?", re.IGNORECASE)


def _check_tokens(expression: str) -> None:
    for like in _LIKE.finditer(expression):
        if like.group(1) is None:
            raise _Refused("a LIKE pattern that is not a constant")
        _check_like_text(patterns.from_duckdb(like.group(1)[1:-1].replace("''", "'")))
    bare = _DUCKDB_STRING.sub("''", expression)
    for quoted in _DUCKDB_NAME.finditer(bare):
        name = quoted.group(0)[1:-1].replace('""', '"')
        if name.lower() in _SERVER_STATE:
            raise _Refused(repr(name))
        if bare[quoted.end() :].lstrip().startswith("("):  # called as a function
            _check_function([name])
    bare = _DUCKDB_NAME.sub(" quoted_name ", bare)
    if "'" in bare.replace("''", "") or '"' in bare:
        raise _Refused("an unclosed string")
    hiding = _HIDING.search(bare)
    if hiding is not None:
        raise _Refused(repr(hiding.group(0)))
    keyword = _KEYWORDS.search(bare)
    if keyword is not None:
        found = keyword.group(0)
        raise _Refused("a subquery" if found.lower() in ("select", "from") else repr(found))
    if not bare.isascii():
        raise _Refused("a name outside ASCII")
    for call in _CALL.finditer(bare):
        called = call.group(0).rstrip("( \t\n").replace(" ", "")
        if called.lower() not in _SYNTAX:
            _check_function([called])
    for word in _WORD.finditer(bare):
        if word.group(0).lower() in _SERVER_STATE:
            raise _Refused(repr(word.group(0)))
