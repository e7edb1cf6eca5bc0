"""A time point's unit and value read the same way by every backend (DuckDB's `AT (VERSION
=> n)` and `AT (TIMESTAMP => '…')`): units compared without case, values parsed, never
pasted into anything."""

from __future__ import annotations

from datetime import UTC, datetime

from airport_contracts import TimePoint

LARGEST_VERSION = 2**63 - 1
"""The largest version a Delta table can have (its log numbers versions as Java longs)."""


class TimePointError(ValueError):
    """A time point the table cannot be read at (its unit or value): the client's error."""


def version_of(point: TimePoint) -> int | None:
    """The version a VERSION time point names; None for another unit."""
    if point.unit.lower() != "version":
        return None
    text = point.value.strip()
    # ASCII digits only, as Go's strconv reads them: str.isdigit() also takes "²" and "١",
    # which int() refuses or reads as another number.
    if not (text.isascii() and text.isdigit()):
        raise TimePointError(f"version must be a non-negative integer, got {point.value!r}"[:120])
    # A Delta version is a signed 64-bit number; a longer one names no version (and int()
    # refuses more than 4,300 digits).
    if len(text.lstrip("0")) > len(str(LARGEST_VERSION)) or int(text) > LARGEST_VERSION:
        raise TimePointError(f"version {text[:24]}{'…' if len(text) > 24 else ''} does not exist")
    return int(text)


def moment_of(point: TimePoint) -> datetime | None:
    """The instant (UTC) a TIMESTAMP time point names (a value without a zone is UTC); None
    for another unit."""
    if point.unit.lower() not in ("timestamp", "timestamp_ns"):
        return None
    try:
        moment = datetime.fromisoformat(point.value.strip())
    except ValueError:
        raise TimePointError(f"not a timestamp: {point.value!r}"[:120]) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # year 1 east of UTC, year 9999 west of it
        raise TimePointError(f"timestamp out of range: {point.value!r}"[:120]) from None


def parsed(point: TimePoint) -> int | datetime:
    """A version number or an instant; any other unit is the client's error."""
    version = version_of(point)
    if version is not None:
        return version
    moment = moment_of(point)
    if moment is not None:
        return moment
    raise TimePointError(f"unit {point.unit!r} is not one of version, timestamp"[:120])
