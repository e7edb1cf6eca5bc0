"""Whether the commits other writers made after the version a row-tracked table's statement
read its rows at leave the rows it names as they were (commits.py).

Such a statement names its rows by their values (Delta refuses row ids in its condition), and
counted at the version it read that no other row holds them. A later commit that only added
files (a stream's append, a blind INSERT) changed none of those rows; what it can do is add a
row holding the values the statement names its rows by, which the statement would change too.
So commits that only added files are let through where none of the rows they added holds
those values (one column of the added files read, or, for a statement naming every row, their
row counts), and the statement runs on the newer version; any other commit (a file removed, a
deletion vector, a schema or property change) means the rows are read again. Delta's own
UPDATE and DELETE do not conflict with blind appends either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa

from . import file_parts
from .row_values import holding

# Actions a commit that only appended holds besides its `add`s: its own record, a stream's
# transaction id, and domain metadata (row tracking's high-water mark of the row ids given out).
_BESIDE_ADDS = frozenset({"commitInfo", "txn", "domainMetadata"})


@dataclass(frozen=True)
class Named:
    """How a statement names its rows: by their values of column (values: theirs at the
    version read, as the version's files read them), or, column None, as every row of the
    table."""

    column: str | None = None
    values: pa.ChunkedArray | None = None


EVERY_ROW = Named()


@dataclass(frozen=True)
class ReadAt:
    """Where a statement read the rows it names: the version, its files (None: Spark read
    them, and any later commit means reading them again), and how it names them."""

    version: int
    files: file_parts.PartFiles | None
    named: Named


def only_appended(log_dir: Path, after: int, through: int) -> bool:
    """Whether every commit after version after, through version through, only added files
    without deletion vectors (a commit whose file is not in log_dir counts as more)."""
    for version in range(after + 1, through + 1):
        try:
            lines = (log_dir / f"{version:020d}.json").read_text().splitlines()
        except OSError:
            return False
        for line in filter(str.strip, lines):
            try:
                action = json.loads(line)
            except ValueError:
                return False
            if not isinstance(action, dict) or set(action) - _BESIDE_ADDS - {"add"}:
                return False
            added = action.get("add")
            if added is not None and (not isinstance(added, dict) or added.get("deletionVector")):
                return False
    return True


def added(before: file_parts.PartFiles, now: file_parts.PartFiles) -> list[int]:
    """The indexes of now's files that before does not have."""
    had = {unquote(path) for path in before.files.column("path").to_pylist()}
    paths = now.files.column("path").to_pylist()
    return [index for index, path in enumerate(paths) if unquote(path) not in had]


def holds_named(files: file_parts.PartFiles, indexes: list[int], named: Named) -> bool:
    """Whether a live row of the files at indexes is one named would name: any row, where it
    names every row; else one holding a value of its column (a null matching a null)."""
    if not indexes:
        return False
    if named.column is None or named.values is None:
        records = files.files.column("num_records").take(indexes).to_pylist()
        return None in records or sum(records) > 0
    return holding(files, named.column, named.values, indexes) > 0
