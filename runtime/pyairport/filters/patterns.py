"""LIKE patterns: DuckDB's ways of writing one, read into the one form every engine here
takes, and back.

A pattern here is what pyarrow's `match_like`, DataFusion's LIKE and Spark's LIKE take by
default: `%` any run of characters (line breaks included), `_` one character, and `\\`
making the character after it literal (`\\%`, `\\_`, `\\\\`). DuckDB's own forms differ:
`~~` (LIKE without ESCAPE) has no escape character at all, so its backslash is a plain
character; `like_escape` names its escape character; and DuckDB turns `LIKE 'ab%'`,
`'%ab'` and `'%ab%'` into `prefix`, `suffix` and `contains` of plain text."""

from __future__ import annotations

ESCAPE = "\\"
_SPECIAL = frozenset("%_\\")


def literal(text: str) -> str:
    """A pattern matching exactly text."""
    return "".join(ESCAPE + c if c in _SPECIAL else c for c in text)


def from_duckdb(pattern: str, escape: str = "") -> str:
    """DuckDB's LIKE pattern whose escape character is escape ('' for none) in the form
    here. ValueError for an escape longer than one character (DuckDB refuses it) and for a
    pattern ending in its escape character (which DuckDB matches to nothing)."""
    if len(escape) > 1:
        raise ValueError("an escape is one character")
    written: list[str] = []
    characters = iter(pattern)
    for character in characters:
        if escape and character == escape:
            following = next(characters, None)
            if following is None:
                raise ValueError("a pattern ends in its escape character")
            written.append(literal(following))
        elif character == ESCAPE:  # DuckDB's is then literal; here it escapes
            written.append(ESCAPE + ESCAPE)
        else:
            written.append(character)
    return "".join(written)


def check(pattern: str) -> str:
    """pattern, when it is one in the form here: each `\\` escapes a `%`, `_` or `\\`.
    ValueError otherwise (the engines differ on what else an escape means)."""
    characters = iter(pattern)
    for character in characters:
        if character == ESCAPE and next(characters, None) not in _SPECIAL:
            raise ValueError(f"not a LIKE pattern: {pattern!r} (a \\ escapes %, _ or \\)")
    return pattern


def is_plain(text: str) -> bool:
    """Whether text holds no wildcard and no escape: a pattern of it matches only itself."""
    return not _SPECIAL & set(text)


def any_runs(pattern: str) -> int:
    """How many `%` (any run of characters) the pattern holds, escaped ones not counted."""
    runs, characters = 0, iter(pattern)
    for character in characters:
        if character == ESCAPE:
            next(characters, None)
        elif character == "%":
            runs += 1
    return runs


def is_linear(pattern: str) -> bool:
    """Whether Spark matches pattern (escaped by ESCAPE) in time linear in the value: it runs a
    LIKE as a Java regular expression, each `%` a `.*`, and a backtracking match takes the
    value's length to the power of its `%`s. Linear: at most one `%`, or plain text between
    a `%` at each end (which Spark matches as a contains)."""
    runs = any_runs(pattern)
    if runs <= 1:
        return True
    return runs == 2 and pattern[:1] == pattern[-1:] == "%" and is_plain(pattern[1:-1])
