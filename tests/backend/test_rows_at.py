"""commits._Rows: an UPDATE's keys taken for each staged batch by position give what Arrow's
take gives, from a table of many chunks, whether the positions run in order or not."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from pyairport.backends.spark.commits import _Rows


def _chunked() -> pa.Table:
    batches = [
        pa.record_batch({"k": pa.array(range(s, s + 5)), "s": [f"v{i}" for i in range(s, s + 5)]})
        for s in range(0, 20, 5)
    ]
    return pa.Table.from_batches(batches)  # 20 rows in 4 chunks


@pytest.mark.parametrize(
    "positions",
    [[], [0], [3, 4, 5, 6, 7], [19], [7, 3, 12], [2, 4, 6], [5, 6, 8], [0, 1, 2, 3, 4, 5, 6]],
    ids=["none", "first", "a run across chunks", "last", "unordered", "gaps", "a gap", "from 0"],
)
def test_rows_at_positions_are_arrows_take(positions: list[int]) -> None:
    table = _chunked()
    rows = _Rows(table)
    at = np.array(positions, dtype=np.int64)
    taken = rows.at(at)
    assert taken.schema == table.schema
    assert taken.to_pylist() == table.take(pa.array(at, pa.int64())).to_pylist()


def test_a_run_is_a_slice_and_the_table_is_combined_only_for_others() -> None:
    table = _chunked()
    rows = _Rows(table)
    rows.at(np.arange(3, 9))
    assert rows._combined is None  # a run: sliced, nothing copied
    rows.at(np.array([9, 1]))
    assert rows._combined is not None and rows._combined.column(0).num_chunks == 1
