"""A data worker (`pyairport worker`): a process that serves DoGet of the scan parts its
catalog server sealed (ticket_seal.py), on Arrow C++'s Flight server (arrow_do_get.py), so
that a scan's parts are read and sent by as many processes as the catalog has workers, each
with a lock of its own (the catalog's process has one for every client), and by other hosts
for reads that outgrow one machine.

A worker decides nothing about rights: the catalog granted the read when it sealed the
ticket. It checks that the caller is who the ticket was issued to (the bearer token through
the same kinds of Authenticator as the catalog's), that the ticket is one its catalog sealed
and has not expired; then it reads the part's plan (a backend's bytes: a Delta table's part
by delta-rs, backends/spark/detached.py) as the catalog's DoGet would.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import pyarrow as pa

from airport_contracts import (
    Authenticator,
    Context,
    TicketRefused,
    identity_from_context,
    with_context_meta,
)
from airport_contracts.vocabulary import Protocol

from ..access.gate import Access
from ..access.tokens import AUTHORIZATION_HEADER
from ..dispatch import ServedScan
from ..dispatch.flight_infos import served_rows
from ..dispatch.headers import context_meta
from ..wire.column_ids import requested_only
from .arrow_do_get import DoGetServer
from .metrics import ReadMetrics
from .ticket_seal import TicketSeal
from .worker_link import is_probe, probe_answer

log = logging.getLogger("pyairport.worker")

PlanReader = Callable[[Context, bytes], pa.RecordBatchReader]
"""Reads a sealed part's plan: its rows, full width in the served schema."""


def open_sealed(ctx: Context, seal: TicketSeal, read_plan: PlanReader, ticket: bytes) -> ServedScan:
    """The scan a sealed ticket names, for the admitted caller of ctx (a worker's DoGet, or
    the catalog's own); the contract's TicketRefused when it may not be served."""
    try:
        sealed = seal.open(ticket, identity_from_context(ctx))
    except TicketRefused as refused:
        log.warning("DoGet refused: %s", refused)
        raise
    reader = read_plan(ctx, sealed.plan)
    if sealed.columns or sealed.rows_only:
        reader = requested_only(reader, list(sealed.columns))
    served = served_rows(reader, sealed.string_dictionaries)
    return ServedScan(served, sealed.expected_rows, sealed.table, sealed.rows_only)


class DataWorker:
    """Serves the parts sealed under seal at location (grpc://host:port, grpc+tls://…,
    grpc+unix://path) from its construction until stop(); metrics count its DoGets."""

    def __init__(
        self,
        location: str,
        seal: TicketSeal,
        read_plan: PlanReader,
        authenticator: Authenticator | None = None,
        compression: str = "auto",
        tls: tuple[bytes, bytes] | None = None,
        metrics: ReadMetrics | None = None,
    ) -> None:
        self._seal = seal
        self._read_plan = read_plan
        self.access = Access(authenticator)
        self._server = DoGetServer(location, self._open, metrics, compression, tls)
        self.port: int = self._server.port
        self.probes = 0  # the catalog's probes answered (worker_link.py)

    @property
    def scans(self) -> int:
        """The scan parts served (probes aside)."""
        count: int = self._server.scans - self.probes
        return count

    def _open(self, ctx: Context, headers: dict[str, str], ticket: bytes) -> ServedScan:
        if is_probe(ticket):  # the catalog's: the key is its credential, not a token
            answer = probe_answer(self._seal, ticket)
            self.probes += 1
            return answer
        ctx = with_context_meta(ctx, context_meta(Protocol.DOGET, headers, AUTHORIZATION_HEADER))
        return open_sealed(self.access.admit(ctx), self._seal, self._read_plan, ticket)

    def stop(self, grace: float | None = 2.0) -> None:
        stopper = threading.Thread(target=self._server.shutdown, daemon=True)
        stopper.start()
        stopper.join(grace)
