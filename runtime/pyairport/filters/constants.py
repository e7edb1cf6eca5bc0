"""DuckDB's serialized constants (the `value` of a BOUND_CONSTANT in its filter JSON) as the
Python values the predicates hold, and back. Booleans, integers and strings are plain JSON
scalars. A DATE is its days since 1970-01-01. A TIMESTAMP is its microseconds since
1970-01-01 00:00 on the wall clock (a naive datetime here), a TIMESTAMP WITH TIME ZONE the
microseconds of its instant since 1970-01-01 00:00 UTC (a datetime in UTC here). A DECIMAL is
its unscaled integer, its width and scale in the type's `type_info`; wider than 18 digits
DuckDB keeps it as a 128-bit hugeint, written as {"upper": signed high 64 bits, "lower":
unsigned low 64 bits}."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

EPOCH = date(1970, 1, 1)
EPOCH_TIME = datetime(1970, 1, 1)
TIMESTAMP = "TIMESTAMP"
TIMESTAMP_TZ = "TIMESTAMP WITH TIME ZONE"
WIDEST_DECIMAL = 38
_INT64_DECIMAL_WIDTH = 18  # wider decimals are hugeints in DuckDB


def date_value(days: Any) -> date:
    """A DATE constant's day. ValueError for what Python's dates cannot hold (DuckDB's
    infinity, years past 9999), which is then not pushed down."""
    if not isinstance(days, int) or isinstance(days, bool):
        raise ValueError("a DATE constant is a number of days")
    try:
        return EPOCH + timedelta(days=days)
    except OverflowError as error:
        raise ValueError("a DATE beyond Python's") from error


def timestamp_value(micros: Any, zoned: bool) -> datetime:
    """A TIMESTAMP (zoned: WITH TIME ZONE) constant's time, naive or in UTC. ValueError for
    what Python's datetimes cannot hold (DuckDB's infinities, years past 9999), which is
    then not pushed down."""
    if not isinstance(micros, int) or isinstance(micros, bool):
        raise ValueError("a TIMESTAMP constant is a number of microseconds")
    try:
        wall = EPOCH_TIME + timedelta(microseconds=micros)
    except OverflowError as error:
        raise ValueError("a TIMESTAMP beyond Python's") from error
    return wall.replace(tzinfo=UTC) if zoned else wall


def decimal_value(serialized: Any, type_info: Any) -> Decimal:
    """A DECIMAL constant exactly, with its type's scale as its exponent."""
    width, scale = decimal_shape(type_info)
    if isinstance(serialized, dict):
        upper, lower = serialized["upper"], serialized["lower"]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (upper, lower)):
            raise ValueError("a hugeint's halves are integers")
        if not (-(2**63) <= upper < 2**63 and 0 <= lower < 2**64):
            raise ValueError("a hugeint's halves are 64 bits each")
        unscaled = (upper << 64) + lower
    elif isinstance(serialized, int) and not isinstance(serialized, bool):
        unscaled = serialized
    else:
        raise ValueError("a DECIMAL constant is an integer")
    if len(str(abs(unscaled))) > width:
        raise ValueError("a DECIMAL constant wider than its type")
    return Decimal(f"{unscaled}e-{scale}")  # from text: exact, whatever the context's precision


def decimal_shape(type_info: Any) -> tuple[int, int]:
    """A DECIMAL type's width and scale, from its `type_info`."""
    width, scale = type_info["width"], type_info["scale"]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (width, scale)):
        raise ValueError("a DECIMAL's width and scale are integers")
    if not 1 <= width <= WIDEST_DECIMAL or not 0 <= scale <= width:
        raise ValueError("no such DECIMAL type")
    return width, scale


def serialized_date(value: date) -> int:
    return (value - EPOCH).days


def serialized_timestamp(value: datetime) -> int:
    """A time as DuckDB writes a TIMESTAMP (naive) or TIMESTAMP WITH TIME ZONE constant."""
    wall = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo is not None else value
    elapsed = wall - EPOCH_TIME
    return (elapsed.days * 86_400 + elapsed.seconds) * 1_000_000 + elapsed.microseconds


def serialized_decimal(value: Decimal, width: int, scale: int) -> int | dict[str, int]:
    """value (at most scale decimals) as DuckDB writes a DECIMAL(width, scale) constant."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int) or exponent + scale < 0:
        raise ValueError(f"{value} has more than {scale} decimals")
    # integer arithmetic: Decimal's own would round past its context's 28 digits
    unscaled = int("".join(map(str, digits)) or "0") * int(10 ** (exponent + scale))
    unscaled = -unscaled if sign else unscaled
    if width <= _INT64_DECIMAL_WIDTH:
        return unscaled
    return {"upper": unscaled >> 64, "lower": unscaled & (2**64 - 1)}


def scale_of(value: Decimal) -> int:
    """How many decimals value is written with (Decimal('0.05'): 2)."""
    exponent = value.as_tuple().exponent
    return -exponent if isinstance(exponent, int) and exponent < 0 else 0


def digits_of(value: Decimal) -> int:
    return len(value.as_tuple().digits)
