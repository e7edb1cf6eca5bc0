"""The demo catalog's one function of each kind, in demo_schema (protocol §6). The interop
suite's airport-go server serves the same (tests/interop/go/internal/functions), so DuckDB
sessions calling them compare answer for answer.

    SELECT lake.demo_schema.email_domain(email) FROM lake.demo_schema.readonly;
    SELECT * FROM lake.demo_schema.series(1, 5);
    SELECT * FROM lake.demo_schema.shouted((SELECT name FROM lake.demo_schema.readonly));
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..functions import scalar_function, table_function, table_function_in_out

MAX_SERIES_ROWS = 10_000_000
_SERIES_BATCH_ROWS = 65536
SERIES = pa.schema([("n", pa.int64())])


@scalar_function(
    params=[pa.string()], returns=pa.string(), comment="the domain of an e-mail address"
)
def email_domain(emails: pa.Array) -> pa.Array:
    """The text after the last "@", or null when there is none."""
    domains = pc.replace_substring_regex(emails, pattern="^.*@", replacement="")
    return pc.if_else(pc.match_substring(emails, "@"), domains, pa.scalar(None, pa.string()))


@table_function(
    params=[pa.int64(), pa.int64()], schema=SERIES, comment="the integers from start to stop"
)
def series(start: int | None, stop: int | None) -> Iterator[pa.RecordBatch]:
    """n from start to stop, in batches of 65,536."""
    if start is None or stop is None:
        raise ValueError("series: start and stop must not be null")
    if stop - start >= MAX_SERIES_ROWS:
        raise ValueError(f"series: at most {MAX_SERIES_ROWS} rows")
    for low in range(start, stop + 1, _SERIES_BATCH_ROWS):
        high = min(low + _SERIES_BATCH_ROWS - 1, stop)
        yield pa.record_batch([pa.array(np.arange(low, high + 1), pa.int64())], schema=SERIES)


@table_function_in_out(
    params=[], schema=lambda rows: rows, comment="the rows with their text in upper case"
)
def shouted(rows: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Every string column in upper case, batch by batch."""
    for batch in rows:
        yield pa.RecordBatch.from_arrays(
            [pc.utf8_upper(c) if pa.types.is_string(c.type) else c for c in batch.columns],
            schema=batch.schema,
        )


DEMO_FUNCTIONS = (email_domain, series, shouted)
