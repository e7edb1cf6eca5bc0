"""Blocks of pyairport's rowid column claimed in the table's own Delta log, so that any number
of servers give out rowids without a check at every INSERT.

Block b is the rowids b·BLOCK_ROWIDS … (b+1)·BLOCK_ROWIDS − 1 (block 0 starts at 1). A server
claims a block before it gives out one of its rowids: one empty append whose commit carries
Delta's idempotent-write marker (a SetTransaction) for the application id CLAIM_APP + b at
version 1. Delta decides who owns it, in its own transaction:
- a block claimed before (by anyone, in any earlier run) already holds version 1, and Delta
  skips a write whose version is not above the recorded one: no commit is made, which the log
  shows (no commit carries the claim's token);
- two servers claiming the same block at once both read the application id, so Delta fails
  the later commit with ConcurrentTransactionException.
The loser tries the next block. A block's rows are then blind appends (commits.py): an INSERT
into a claimed block needs no read of the table, which a rowid check costs (a second or more
per statement on local Spark, against a third of a second for the append alone).

Where this server reads the table's log folder, delta-rs says which blocks are claimed and the
folder shows whether the claim's commit was made; elsewhere (Spark Connect to a remote server,
a catalog that holds commits) blocks are tried one by one and the table's history shows it.
The first claim of a run starts above the largest rowid the table holds, so rows other writers
gave rowids to (a pyairport before claims) are never claimed over. Servers that give out
rowids without claiming (those earlier versions) must not write the table at the same time.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from .delta_stats import column_stats, files_of
from .lake import Lake
from .layout import ROWID, Layout
from .scans import log_version
from .sql import quote

log = logging.getLogger("pyairport.spark")

BLOCK_ROWIDS = 1 << 24  # 16.8 M rows: a claim (about a second) for every 16.8 M rows inserted
CLAIM_APP = "pyairport.rowids."
CLAIM_ATTEMPTS = 16
HISTORY_SEARCHED = 100  # commits of the table's history searched for a claim's own


class ClaimsFailed(RuntimeError):
    """No block could be claimed in CLAIM_ATTEMPTS tries."""


def block_range(block: int) -> tuple[int, int]:
    """The first rowid of a block and the first after it."""
    return max(block * BLOCK_ROWIDS, 1), (block + 1) * BLOCK_ROWIDS


class RowidClaims:
    """The claims of one table. label: its name for messages (schema.table); snapshot:
    delta-rs's view of its latest version where this server reads its log folder (None where
    it does not, or delta-rs cannot open it)."""

    def __init__(
        self,
        lake: Lake,
        label: str,
        layout: Callable[[], Layout],
        snapshot: Callable[[], Any] | None,
    ) -> None:
        self._lake = lake
        self._label = label
        self._layout = layout
        self._snapshot = snapshot

    def claim(self, after: int | None) -> int:
        """A block claimed for this process: the first free one after block `after` (the
        last this process claimed), or, for the first claim of a run, above every rowid the
        table holds."""
        block = self._above_rows() if after is None else after + 1
        for _ in range(CLAIM_ATTEMPTS):
            block = self._unclaimed_from(block)
            if self._try(block):
                log.info("%s: rowid block %d claimed", self._label, block)
                return block
            block += 1
        raise ClaimsFailed(
            f"no rowid block of {self._label} could be claimed in {CLAIM_ATTEMPTS}"
            " tries: other writers claimed every one tried"
        )

    def _above_rows(self) -> int:
        """The first block above the largest rowid the table holds (0 for no rows): from the
        log's file statistics where every file has them, else by Spark."""
        largest = self._largest_logged()
        if largest is None:
            (largest,) = self._lake.spark.sql(
                f"SELECT max({quote(ROWID)}) FROM {self._layout().ident}"
            ).first()
        return 0 if largest is None or int(largest) < 1 else int(largest) // BLOCK_ROWIDS + 1

    def _largest_logged(self) -> int | None:
        """The largest rowid the latest version's file statistics bound (0 for no file), or
        None where they do not say (no statistics, column mapping's physical names)."""
        snapshot = self._snapshot() if self._snapshot is not None else None
        if snapshot is None:
            return None
        files = files_of(snapshot)
        if not files.num_rows:
            return 0
        high = column_stats(files, pa.field(ROWID, pa.int64())).max
        return None if high is None else int(high.as_py())

    def _unclaimed_from(self, block: int) -> int:
        """The first block from `block` on that the latest version records no claim of."""
        snapshot = self._snapshot() if self._snapshot is not None else None
        if snapshot is None:
            return block
        while snapshot.transaction_version(f"{CLAIM_APP}{block}") is not None:
            block += 1
        return block

    def _try(self, block: int) -> bool:
        """Claim one block: whether this process owns it now (see the module's doc)."""
        layout = self._layout()
        local = self._snapshot is not None
        log_dir = layout.location / "_delta_log" if local and layout.location else None
        before = log_version(log_dir) if log_dir is not None else None
        token = uuid.uuid4().hex
        spark = self._lake.spark
        # the columns an INSERT writes: Delta fills the generated ones, and checks no row
        written = [quote(n) for n in layout.stored.names if n not in layout.computed]
        empty = spark.createDataFrame([], spark.table(layout.ident).select(*written).schema)
        try:
            (
                empty.write.format("delta")
                .mode("append")
                .option("txnAppId", f"{CLAIM_APP}{block}")
                .option("txnVersion", 1)
                .option("userMetadata", f"pyairport claims rowid block {block} ({token})")
                .saveAsTable(layout.ident)
            )
        except Exception as exc:
            if "ConcurrentTransaction" in str(exc)[:2000]:
                return False  # another server claimed it at the same moment
            raise
        if log_dir is not None and before is not None:
            return _logged(log_dir, before, token)
        return self._in_history(token)

    def _in_history(self, token: str) -> bool:
        """Whether one of the table's latest commits carries the token. (A claim made but not
        found among them is left unused: a block lost, never one shared.)"""
        history = self._lake.spark.sql(
            f"DESCRIBE HISTORY {self._layout().ident} LIMIT {HISTORY_SEARCHED}"
        )
        found = history.where(history["userMetadata"].contains(token)).limit(1).collect()
        return bool(found)


def _logged(log_dir: Path, before: int, token: str) -> bool:
    """Whether a commit of the log folder after version `before` carries the token (Delta
    made the claim's commit rather than skip it)."""
    latest = log_version(log_dir)
    for version in range(before + 1, (latest if latest is not None else before) + 1):
        try:
            text = (log_dir / f"{version:020d}.json").read_text()
        except OSError:  # cleaned up meanwhile: not the claim just made
            continue
        if token in text:
            return True
    return False
