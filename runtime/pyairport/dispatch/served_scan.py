"""What a DoGet streams (ServedScan) and the progress each of its batches carries
(ProgressReport), wherever it is served: the catalog's grpcio server, its data socket or a
data worker."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from airport_contracts import ScanProgress


@dataclass(frozen=True)
class ServedScan:
    """What DoGet streams: the rows, and how many the ticket's part holds before filters
    (-1 when unknown), which its progress is reported against (deviation
    scan_progress_reported)."""

    reader: pa.RecordBatchReader
    expected_rows: int = -1
    table: tuple[str, str, str] | None = None
    """(catalog, schema, table) of a table's scan, for the server's metrics; None for a
    function's rows or the databases listing."""
    rows_only: bool = False
    """A count's rows (deviation scan_needs_no_columns), whose values both backends leave
    null: every buffer zeros, which compress to nothing (wire/compression.codec_for)."""
    internal: bool = False
    """A check between pyairport's own processes (a catalog's probe of a data worker), no
    client's read: in no metric."""


class ProgressReport:
    """A ServedScan's batches, each with its app_metadata: ScanProgress against the rows the
    part was expected to hold (no more than 0.99 until the end: filters and deletion vectors
    make the count an upper bound), and 1 on the last batch, which it reads one batch ahead
    to know. Without an expected count only the last batch says anything."""

    def __init__(self, served: ServedScan) -> None:
        self._reader = served.reader
        self._expected = served.expected_rows
        self._sent = 0
        self._ahead: pa.RecordBatch | None = None
        self._started = False

    def _read(self) -> pa.RecordBatch | None:
        try:
            batch: pa.RecordBatch = self._reader.read_next_batch()
        except StopIteration:
            return None
        return batch

    def next(self) -> tuple[pa.RecordBatch, bytes] | None:
        """The next batch and its app_metadata, or None at the end."""
        if not self._started:
            self._ahead, self._started = self._read(), True
        current = self._ahead
        if current is None:
            return None
        self._ahead = self._read()
        self._sent += current.num_rows
        if self._ahead is None:
            progress: float | None = 1.0
        elif self._expected > 0:
            progress = min(self._sent / self._expected, _BEFORE_THE_END)
        else:
            progress = None
        return current, b"" if progress is None else ScanProgress(progress=progress).encode()


_BEFORE_THE_END = 0.99
