"""How many parts a large scan is split into (deviation several_endpoints): DuckDB reads each
endpoint on a thread of its own, but every part is a DoGet stream the server sends alone.

Measured on 2 cores with DuckDB beside the server (docs/benchmarks.md): grpcio's Python server
sends two streams barely faster than one, and DuckDB's threads take the same cores, so more
parts made every query slower there. The default is one part per two cores (one on such a
machine); `pyairport serve --scan-parts N` sets it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass
class ScanSplit:
    max_parts: int = max(1, (os.cpu_count() or 1) // 2)
    rows_per_part: int = 1 << 20  # fewer rows than this make no part of their own

    def parts(self, rows: int, pieces: int) -> int:
        """How many parts a scan of rows (in pieces that cannot be cut: files) gets."""
        wanted = max(1, -(-rows // self.rows_per_part))
        return max(1, min(self.max_parts, pieces, wanted))


SPLIT = ScanSplit()
"""The process's setting (the server's flag sets it; tests change it)."""
