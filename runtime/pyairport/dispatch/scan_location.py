"""Where a call's client reads the scans it asks endpoints for: the server's own address
unless the transport chose another for this caller (a data plane on the caller's host,
server/data_plane.py)."""

from __future__ import annotations

from airport_contracts import Context

_SCAN_LOCATION = object()  # the Context key; private, so only these two functions use it


def with_scan_location(ctx: Context, uri: str) -> Context:
    """ctx whose table scans' endpoints name uri."""
    return ctx.with_value(_SCAN_LOCATION, uri)


def scan_location(ctx: Context) -> str | None:
    """The address with_scan_location gave ctx, or None: the server's own."""
    uri: str | None = ctx.value(_SCAN_LOCATION)
    return uri
