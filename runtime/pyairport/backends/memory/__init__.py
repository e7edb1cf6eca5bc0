"""The in-memory backend: the reference implementation of the table interfaces.

Storage is one immutable, chunked pyarrow Table whose first column is the rowid, kept
sorted, so a rowid lookup is an offset or a numpy searchsorted in a copy of that column
(which INSERTs extend in place). Two layers sit on top, so that neither DELETE nor UPDATE
rewrites whole columns per statement:
- a deletion mask: DELETE marks rows dead in a numpy bool array, in place (a scan reading
  the mask makes the next DELETE mark a copy); the table is compacted once half of it is
  dead;
- a patch: UPDATE adds its rows' positions and new values per column (later values win,
  small additions merged into larger ones); the patch is written into the columns — only
  the chunks holding a patched row — when a scan needs whole columns, when it reaches a
  quarter of the table or when a column has too many runs, so a run of UPDATEs pays one
  rewrite.
Single-row statements (DuckDB sends one per row) cost the same however many came before.
Every DML call stages its change in the statement scope (airport_contracts.Statement) and
the change is applied once, under the table lock, when the statement commits: a failure or
a disconnect mid-statement leaves no trace, however many batches the client sent. Called
outside a statement (directly from user code), a call applies at once.

`memory_table(...)` builds a table that implements exactly the interfaces you ask for, so
capability detection (and "batch preferred") is real.
"""

from .table import SCAN_BATCH_ROWS, MemoryTable, memory_table

__all__ = ["SCAN_BATCH_ROWS", "MemoryTable", "memory_table"]
