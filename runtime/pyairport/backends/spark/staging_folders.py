"""Where servers on this host stage what their statements send to Spark: one folder per server
process under STAGING_ROOT, named by the process (its pid and, where /proc tells it, its start
time), so that a server started later knows which folders belong to servers that are gone.

A pid alone does not tell: a restarted container's server usually has the pid its killed
predecessor had, and an old pid may have been given to another process.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

STAGING_ROOT = Path(tempfile.gettempdir()) / "pyairport-staging"


def fresh_staging() -> Path:
    """A new staging folder of this process's own under STAGING_ROOT."""
    STAGING_ROOT.mkdir(parents=True, exist_ok=True)
    pid = os.getpid()
    return Path(tempfile.mkdtemp(prefix=f"{pid}-{_started(pid) or 'x'}-", dir=STAGING_ROOT))


def dead_stagings() -> list[Path]:
    """The staging folders of this user's server processes that no longer run (STAGING_ROOT
    is in the host's shared temporary folder: another user's folders are not this server's
    to read)."""
    if not STAGING_ROOT.is_dir():
        return []
    return [
        folder for folder in STAGING_ROOT.iterdir() if _owner_gone(folder.name) and _mine(folder)
    ]


def _mine(folder: Path) -> bool:
    try:
        return folder.is_dir() and folder.lstat().st_uid == os.getuid()
    except OSError:
        return False


def _owner_gone(name: str) -> bool:
    pid, _, rest = name.partition("-")
    if not pid.isdigit():
        return False  # not a staging folder's name: not ours to judge
    started = rest.partition("-")[0] if rest.count("-") else ""
    if not _alive(int(pid)):
        return True
    # A live process of that pid that started at another time is another process.
    return started.isdigit() and _started(int(pid)) not in (None, started)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


def _started(pid: int) -> str | None:
    """When the process started (clock ticks since boot, /proc's field 22), where /proc says."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from its end.
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None
