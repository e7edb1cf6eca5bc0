"""What the server's own data workers tell it of their DoGets, so that its metrics (one
scrape) count every read of its tables whichever process sent it: each worker writes a JSON
line to its stdout, which only the server reads, when a DoGet ends (the call, and a table's
rows and bytes), and the server adds them to its ServerMetrics as its own DoGets are added.

A worker on another host is not the server's child: it serves metrics of its own
(`pyairport worker --metrics-port`).
"""

from __future__ import annotations

import json
import logging
import threading
from typing import IO

from .metrics import ReadMetrics

log = logging.getLogger("pyairport.workers")


class StdoutReport:
    """A worker's ReadMetrics: each report a line on out."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self._writing = threading.Lock()  # DoGets end on Arrow's threads

    def called(self, rpc: str, method: str | None, code: str, seconds: float) -> None:
        self._write({"called": [rpc, method, code, seconds]})

    def read(self, where: tuple[str, str, str], rows: int, nbytes: int, sent: int) -> None:
        self._write({"read": [list(where), rows, nbytes, sent]})

    def _write(self, report: dict[str, object]) -> None:
        with self._writing:
            self._out.write(json.dumps(report) + "\n")
            self._out.flush()


def add_reports(lines: IO[bytes], metrics: ReadMetrics) -> None:
    """Adds each report line of a worker's stdout to metrics, until it closes (the worker
    ended)."""
    for line in lines:
        try:
            report = json.loads(line)
            if "called" in report:
                rpc, method, code, seconds = report["called"]
                metrics.called(str(rpc), method, str(code), float(seconds))
            elif "read" in report:
                where, rows, nbytes, sent = report["read"]
                catalog, schema, table = (str(name) for name in where)
                metrics.read((catalog, schema, table), int(rows), int(nbytes), int(sent))
        except (ValueError, TypeError, KeyError) as exc:  # a line of another kind: a bug here
            log.warning("a data worker's report was not understood: %s", exc)
