"""The work tables a statement makes beside its target, named with the server's own prefix
(WORK_PREFIX): the table a CREATE builds before moving it into place, the table a CREATE …
REPLACE sets aside until the new one is in place, and the rows sent to a Spark on another host
(sent_rows.py).

Each is noted in the server's staging folder for as long as it exists. A statement settles its
own work tables however it ends; a server killed mid-statement cannot, and leaves its notes in
its staging folder. The next server started on this host for the same lake finds them there
(staging_folders.dead_stagings) and settles them: a work table is removed, and a table a
REPLACE had set aside goes back under its own name unless the new table had taken it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import uuid
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from .folders import WORK_PREFIX
from .lake import Lake

log = logging.getLogger("pyairport.spark")

NOTE_GLOB = "work-*.json"


@dataclass(frozen=True)
class WorkTable:
    schema: str
    name: str
    replaces: str | None = None
    """For a table a REPLACE set aside: the name it is served under."""


def note(lake: Lake, kind: str, schema: str, replaces: str | None = None) -> WorkTable:
    """A new work table's name, noted before the table is made (kind says what it holds)."""
    work = WorkTable(schema, f"{WORK_PREFIX}{kind}_{uuid.uuid4().hex[:12]}", replaces)
    _note_path(lake.staging, work).write_text(json.dumps({"lake": lake.place, **asdict(work)}))
    return work


def forget(lake: Lake, work: WorkTable) -> None:
    """The work table is gone (moved into place or removed): its note goes."""
    _note_path(lake.staging, work).unlink(missing_ok=True)


def settle(lake: Lake, work: WorkTable) -> None:
    """Remove the work table, or put a table set aside back under its name when that name has
    no table; then forget it. Never raises: a failure is logged and the note kept for a later
    server to settle (the statement's own outcome is what its client hears)."""
    if _settled(lake, work):
        forget(lake, work)


def discard(lake: Lake, work: WorkTable) -> None:
    """Remove the work table whatever it holds (a table set aside, once the new one has taken
    its name), then forget it; never raises, as settle."""
    settle(lake, replace(work, replaces=None))


def settle_left(lake: Lake, folder: Path) -> None:
    """Settle the work tables a staging folder notes for this lake (a dead server's, or this
    server's own as it stops), then remove the folder. Notes for other lakes (servers of other
    warehouses on this host), and those that could not be settled, stay in it for a later
    start. Two servers starting at once may both settle a folder: what one removed, the other
    finds gone."""
    with contextlib.suppress(FileNotFoundError):
        _settle_left(lake, folder)


def _settle_left(lake: Lake, folder: Path) -> None:
    kept = []
    for path in sorted(folder.glob(NOTE_GLOB)):
        try:
            noted = json.loads(path.read_text())
            work = WorkTable(noted["schema"], noted["name"], noted["replaces"])
            if not work.name.startswith(WORK_PREFIX):  # never a table of the lake's own
                raise ValueError(work.name)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            log.warning("removing unreadable work table note %s", path)
            continue
        if noted.get("lake") == lake.place and _settled(lake, work):
            continue
        kept.append(path)
    for entry in folder.iterdir():
        if entry in kept:
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    if not kept:
        with contextlib.suppress(OSError):  # another server's start may be settling it too
            folder.rmdir()


def _settled(lake: Lake, work: WorkTable) -> bool:
    try:
        own = work.replaces
        if (
            own is not None
            and lake.exists(work.schema, work.name)
            and not lake.exists(work.schema, own)
        ):
            lake.move_table(work.schema, work.name, own)
            log.warning("put %s.%s back, set aside by a REPLACE", work.schema, own)
        else:
            with contextlib.suppress(FileNotFoundError):  # never made, or moved into place
                lake.remove_table(work.schema, work.name)
    except Exception as exc:
        log.warning("could not settle work table %s.%s", work.schema, work.name, exc_info=exc)
        return False
    return True


def _note_path(staging: Path, work: WorkTable) -> Path:
    return staging / f"work-{work.name}.json"
