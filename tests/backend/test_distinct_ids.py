"""sorted_distinct and distinct_count give np.unique's answer, by flags over a dense range or by sorting; a
row-tracked UPDATE's test of whether columns tell its rows apart (row_values.all_distinct)
gives Arrow's group_by answer, folding integral columns into one integer a row where their
ranges allow."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pytest

from pyairport.backends import distinct_ids
from pyairport.backends.distinct_ids import distinct_count, sorted_distinct
from pyairport.backends.spark.row_values import all_distinct, folded_rows


@pytest.mark.parametrize(
    "ids",
    [
        np.array([], dtype=np.int64),
        np.array([7], dtype=np.int64),
        np.array([3, 3, 3], dtype=np.int64),
        np.array([5, -1, 5, 2, -1, 9], dtype=np.int64),
        np.random.default_rng(1).integers(-50, 50, size=10_000, dtype=np.int64),
        np.arange(10_000, dtype=np.int64),  # in order, dense: flags
        np.array([2**62, 0, 2**62], dtype=np.int64),  # sparse: sorted
        np.array([2**63 - 1, 2**63 - 3, 2**63 - 1, 2**63 - 2], dtype=np.int64),
        np.array([-(2**63), -(2**63) + 2, -(2**63)], dtype=np.int64),
        np.array([2**64 - 1, 2**64 - 5, 2**63, 2**64 - 1], dtype=np.uint64),
        np.array([9, -4, 9, 0], dtype=np.int32),
        np.array([100, -100, 100, 0] * 40, dtype=np.int8),  # the range passes int8's
        np.random.default_rng(2).integers(0, 9 * 1_000, size=1_000, dtype=np.int64),
    ],
    ids=[
        "empty",
        "one",
        "repeated",
        "unordered",
        "random",
        "in-order",
        "sparse",
        "int64-top",
        "int64-bottom",
        "uint64-top",
        "int32",
        "int8-wide-range",
        "edge-of-dense",
    ],
)
@pytest.mark.parametrize("dense_span", [distinct_ids.DENSE_SPAN, 0], ids=["flags", "sorted"])
def test_sorted_distinct_and_distinct_count_are_np_unique(
    ids: np.ndarray, dense_span: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(distinct_ids, "DENSE_SPAN", dense_span)  # 0: every range sorted
    found = sorted_distinct(ids)
    assert found.dtype == ids.dtype
    assert np.array_equal(found, np.unique(ids))
    assert distinct_count(ids) == len(np.unique(ids))


def test_the_input_is_not_reordered() -> None:
    ids = np.array([4, 1, 4, 0], dtype=np.int64)
    sorted_distinct(ids)
    assert ids.tolist() == [4, 1, 4, 0]


def _grouped(keys: pa.Table) -> bool:
    return keys.group_by(keys.column_names).aggregate([]).num_rows == keys.num_rows


RNG = np.random.default_rng(7)
EDGES = {
    "int8 across its range": pa.table({"a": pa.array([-128, 127, 0, -128], pa.int8())}),
    "uint64 above 2**63": pa.table(
        {"a": pa.array([2**64 - 1, 2**64 - 5, 2**64 - 1], pa.uint64()), "b": [1, 2, 3]}
    ),
    "dates and timestamps": pa.table(
        {
            "d": pa.array([datetime.date(1, 1, 1), datetime.date(9999, 12, 31)] * 2),
            "t": pa.array([0, 0, 5, 5], pa.timestamp("us", "UTC")),
        }
    ),
    "two columns, one repeat": pa.table(
        {"a": RNG.integers(0, 50, 2_000), "b": RNG.integers(-3, 3, 2_000, dtype=np.int16)}
    ),
    "a key of each row": pa.table({"a": np.arange(5_000), "b": np.arange(5_000) % 7}),
    "empty": pa.table({"a": pa.array([], pa.int64())}),
}
UNFOLDED = {
    "a null": pa.table({"a": pa.array([1, None, 1], pa.int64())}),
    "strings": pa.table({"a": [1, 1], "s": ["x", "y"]}),
    "ranges past 63 bits": pa.table({"a": [-(2**62), 2**62], "b": [-(2**62), 2**62], "c": [0, 0]}),
}


@pytest.mark.parametrize(
    ("keys", "folds"),
    [(keys, True) for keys in EDGES.values()] + [(keys, False) for keys in UNFOLDED.values()],
    ids=[*EDGES, *UNFOLDED],
)
def test_rows_told_apart_as_arrow_groups_them(keys: pa.Table, folds: bool) -> None:
    assert all_distinct(keys) is _grouped(keys)
    assert (folded_rows(keys) is not None) is folds


def test_folds_order_rows_by_their_columns_in_turn() -> None:
    """The first column leads the fold, so rows in runs of it fold in runs too (which the
    stable sort takes cheaply); a fold's order is the rows' order by each column in turn."""
    keys = pa.table(
        {
            "first": RNG.integers(-5, 5, 3_000),
            "second": RNG.integers(0, 300, 3_000, dtype=np.int32),
            "third": pa.array(RNG.integers(0, 2, 3_000).astype(bool)).cast(pa.int8()),
        }
    )
    keys = pa.concat_tables([keys.slice(0, 1_000), keys.slice(1_000)])  # chunked columns
    before = keys.to_pydict()
    folded = folded_rows(keys)
    assert folded is not None
    assert keys.to_pydict() == before  # folded in arrays of its own, the table untouched
    columns = [keys.column(name).to_numpy() for name in keys.column_names]
    by_columns = np.lexsort(columns[::-1])  # lexsort's last key is its primary one
    assert np.array_equal(folded[by_columns], np.sort(folded))
