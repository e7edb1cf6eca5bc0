"""A row-tracked Delta table's row ids, from its log and files, without Spark.

Delta's row tracking gives every row an id that survives UPDATE, MERGE and OPTIMIZE: a row that
was rewritten carries its id in a hidden column of its new file (its name in the table's
`delta.rowTracking.materializedRowIdColumnName`); any other row's id is its file's `baseRowId`
(in the add action that committed the file) plus the row's position in the file. delta-rs does
not say a file's `baseRowId`, so it is read here from the log: the latest checkpoint at or
before the version (classic, multi-part or v2 with sidecars), then the commits after it; the
latest add of a path carries its base.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

MATERIALIZED_ROW_ID = "delta.rowTracking.materializedRowIdColumnName"

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CLASSIC = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTI_PART = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_V2 = re.compile(r"^(\d{20})\.checkpoint\.[0-9a-fA-F-]+\.(parquet|json)$")


def base_row_ids(location: Path, version: int) -> dict[str, int]:
    """Each file committed at or before version (its path relative to the table, decoded), and
    its base row id."""
    log_dir = location / "_delta_log"
    names = [p.name for p in log_dir.iterdir()]
    checkpoint, files = _latest_checkpoint(log_dir, names, version)
    bases: dict[str, int] = {}
    for path in files:
        _add_checkpoint(log_dir, path, bases)
    commits = sorted(
        int(match.group(1))
        for match in map(_COMMIT.match, names)
        if match is not None and checkpoint < int(match.group(1)) <= version
    )
    for commit in commits:
        with (log_dir / f"{commit:020d}.json").open(encoding="utf-8") as lines:
            for line in lines:
                _take(json.loads(line), bases)
    return bases


def _latest_checkpoint(log_dir: Path, names: list[str], version: int) -> tuple[int, list[Path]]:
    """The version of the latest complete checkpoint at or before version (-1: none) and its
    files."""
    found: dict[int, list[Path]] = {}
    parts: dict[tuple[int, int], list[Path]] = {}
    for name in names:
        if match := _CLASSIC.match(name) or _V2.match(name):
            found.setdefault(int(match.group(1)), [log_dir / name])
        elif match := _MULTI_PART.match(name):
            key = (int(match.group(1)), int(match.group(3)))
            parts.setdefault(key, []).append(log_dir / name)
    for (at, count), files in parts.items():
        if len(files) == count and at not in found:
            found[at] = sorted(files)
    usable = [at for at in found if at <= version]
    if not usable:
        return -1, []
    at = max(usable)
    return at, found[at]


def _add_checkpoint(log_dir: Path, path: Path, bases: dict[str, int]) -> None:
    if path.suffix == ".json":  # a v2 checkpoint's top file, in JSON
        with path.open(encoding="utf-8") as lines:
            actions = [json.loads(line) for line in lines]
    else:
        table = pq.read_table(path, columns=_present(path, ["add", "sidecar"]))
        actions = _rows(table)
    for action in actions:
        sidecar = action.get("sidecar")
        if sidecar:
            _add_checkpoint(log_dir, log_dir / "_sidecars" / unquote(sidecar["path"]), bases)
        else:
            _take(action, bases)


def _present(path: Path, columns: list[str]) -> list[str]:
    names = pq.read_schema(path).names
    return [c for c in columns if c in names]


def _rows(table: pa.Table) -> list[dict[str, object]]:
    """The add (and sidecar) actions of a checkpoint, with only the fields read here."""
    rows: list[dict[str, object]] = []
    if "add" in table.column_names:
        adds = table.column("add").combine_chunks()
        valid = adds.is_valid()
        paths = pc.filter(pc.struct_field(adds, "path"), valid).to_pylist()
        kind = adds.type
        has_base = kind.get_field_index("baseRowId") >= 0
        base = (
            pc.filter(pc.struct_field(adds, "baseRowId"), valid).to_pylist()
            if has_base
            else [None] * len(paths)
        )
        rows += [{"add": {"path": p, "baseRowId": b}} for p, b in zip(paths, base, strict=True)]
    if "sidecar" in table.column_names:
        sidecars = table.column("sidecar").combine_chunks()
        for path in pc.filter(pc.struct_field(sidecars, "path"), sidecars.is_valid()).to_pylist():
            rows.append({"sidecar": {"path": path}})
    return rows


def _take(action: dict[str, object], bases: dict[str, int]) -> None:
    add = action.get("add")
    if isinstance(add, dict):
        path = unquote(str(add["path"]))
        base = add.get("baseRowId")
        if base is None:
            bases.pop(path, None)
        else:
            bases[path] = int(base)


def row_ids(base: int, start: int, count: int, materialized: pa.Array | None) -> pa.Array:
    """The ids of count rows of one file from position start: the materialized id where the
    file has one, else base plus the position."""
    computed = pa.array(np.arange(base + start, base + start + count, dtype=np.int64))
    if materialized is None:
        return computed
    return pc.coalesce(materialized.cast(pa.int64()), computed)
