"""Where a call's client reads the scans it asks endpoints for: the server's own address
unless the transport chose another for this caller (a data plane on the caller's host,
server/data_plane.py), or data workers that read a table's parts for it
(server/data_workers.py)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from airport_contracts import Context, ScanOptions

from .served_scan import ServedScan

_SCAN_LOCATION = object()  # the Context keys; private, so only the functions below use them
_DATA_WORKERS = object()


class DataWorkers(Protocol):
    """Workers a caller may read scan parts from."""

    def endpoint(
        self,
        ctx: Context,
        table: tuple[str, str, str],
        plan: bytes,
        expected_rows: int,
        columns: list[str],
        rows_only: bool,
        string_dictionaries: bool = False,
    ) -> tuple[bytes, str]:
        """The ticket (sealed for ctx's identity) and the worker's address for one part:
        its plan (DetachableTable.detached_part), the rows it holds before filters (-1:
        unknown), the columns the client asked for, whether it only counts rows and whether
        its string columns go as dictionaries (the catalog declared them so)."""
        ...


class WorkerPool(Protocol):
    """The server's data workers (server/data_workers.py), as the transport uses them."""

    def for_peer(self, peer: str) -> DataWorkers | None:
        """The workers a caller at gRPC's peer may read from, or None."""
        ...

    def open_here(self, ctx: Context, ticket: bytes) -> ServedScan:
        """A sealed ticket brought to the server itself, served as a worker would."""
        ...


@runtime_checkable
class DetachableTable(Protocol):
    """A table whose scan parts another process can read (backends/spark/detached.py)."""

    def detached_part(self, ctx: Context, opts: ScanOptions) -> bytes | None: ...


def with_scan_location(ctx: Context, uri: str) -> Context:
    """ctx whose table scans' endpoints name uri."""
    return ctx.with_value(_SCAN_LOCATION, uri)


def scan_location(ctx: Context) -> str | None:
    """The address with_scan_location gave ctx, or None: the server's own."""
    uri: str | None = ctx.value(_SCAN_LOCATION)
    return uri


def with_data_workers(ctx: Context, workers: DataWorkers) -> Context:
    """ctx whose table scans' parts go to workers where the table can detach them."""
    return ctx.with_value(_DATA_WORKERS, workers)


def data_workers(ctx: Context) -> DataWorkers | None:
    workers: DataWorkers | None = ctx.value(_DATA_WORKERS)
    return workers
