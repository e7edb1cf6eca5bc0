"""Where a warehouse keeps its schemas and tables: `<warehouse>/<schema folder>/<table folder>/`,
each folder named by the server from the name a client gave (deviation names_confined), never
a path the client wrote.

A name made of A-Z a-z 0-9 _ - . that does not start with `.` is its own folder, as plain
Spark names folders, so a lake written by Spark reads the same. Any other name is `~` followed
by the name with each UTF-8 byte outside those characters written `~XX` (hexadecimal):
`"Q1 sales"` lives in `~~22Q1~20sales~22`, listed again as `"Q1 sales"`. Not `%`: delta-rs
and DuckDB read a table's folder as a URL and would decode it. A folder whose name does not
decode to a name the rule allows (one with a newline, made by anyone) is not served, and the
listing goes on without it.
"""

from __future__ import annotations

import os
import re
import string
from pathlib import Path

from ...names import MAX_NAME_BYTES, NameRefused, name_problem

WORK_PREFIX = "pyairport_ddl_"
"""Tables being made or replaced carry this name for a moment; the catalog skips them, and a
client's name that starts so is refused rather than hidden."""

ENCODED = "~"
_PLAIN_TEXT = string.ascii_letters + string.digits + "_-."
_PLAIN = frozenset(_PLAIN_TEXT)
_PLAIN_BYTES = frozenset(_PLAIN_TEXT.encode())
_FOLDER = re.compile(r"(?:[A-Za-z0-9_.-]|~[0-9A-F]{2})*")


def folder_for(name: str) -> str:
    """The folder a schema or table of this name is kept in."""
    if name and name[0] != "." and all(c in _PLAIN for c in name):
        return name
    escaped = (chr(b) if b in _PLAIN_BYTES else f"{ENCODED}{b:02X}" for b in name.encode())
    return ENCODED + "".join(escaped)


def _decoded(escaped: str) -> str | None:
    """The name an escaped folder name stands for, or None when folder_for makes no such."""
    if not _FOLDER.fullmatch(escaped):
        return None
    raw = bytearray()
    index = 0
    while index < len(escaped):
        if escaped[index] == ENCODED:
            raw.append(int(escaped[index + 1 : index + 3], 16))
            index += 3
        else:
            raw.append(ord(escaped[index]))
            index += 1
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return None


def name_of(folder: str) -> str | None:
    """The name a folder holds a schema or table of, or None when it holds none the server
    serves (a work folder, a hidden one, one whose name the rule refuses)."""
    if folder.startswith(WORK_PREFIX) or folder.startswith("."):
        return None
    if folder.startswith(ENCODED):
        name = _decoded(folder[len(ENCODED) :])
        if name is None or folder_for(name) != folder:  # one name, one folder
            return None
    else:
        name = folder
    return name if name_problem(name) is None else None


def check_storable(kind: str, name: str) -> None:
    """NameRefused for a name the rule allows but a warehouse cannot keep: one that starts as
    the server's work folders do, or whose folder would be too long."""
    if name.lower().startswith(WORK_PREFIX):
        raise NameRefused(kind, name, f"names starting with {WORK_PREFIX} are the server's own")
    size = len(folder_for(name).encode())
    if size > MAX_NAME_BYTES:
        raise NameRefused(
            kind,
            name,
            f"its folder would be {size} bytes long, more than {MAX_NAME_BYTES}"
            " (each byte outside A-Z a-z 0-9 _ - . takes three)",
        )


def inside(root: Path, *parts: str) -> Path:
    """root/parts, refused unless it lies inside root (a last guard: folder_for never makes a
    part that leaves it)."""
    path = Path(os.path.normpath(root.joinpath(*parts)))
    if path == root or not path.is_relative_to(root):
        raise NameRefused("table", "/".join(parts), "it names a folder outside the catalog's")
    return path
