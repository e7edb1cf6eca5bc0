"""sorted_distinct gives np.unique's answer, by sorting."""

from __future__ import annotations

import numpy as np
import pytest

from pyairport.backends.distinct_ids import sorted_distinct


@pytest.mark.parametrize(
    "ids",
    [
        np.array([], dtype=np.int64),
        np.array([7], dtype=np.int64),
        np.array([3, 3, 3], dtype=np.int64),
        np.array([5, -1, 5, 2, -1, 9], dtype=np.int64),
        np.random.default_rng(1).integers(-50, 50, size=10_000, dtype=np.int64),
    ],
    ids=["empty", "one", "repeated", "unordered", "random"],
)
def test_sorted_distinct_is_np_unique(ids: np.ndarray) -> None:
    found = sorted_distinct(ids)
    assert found.dtype == ids.dtype
    assert np.array_equal(found, np.unique(ids))


def test_the_input_is_not_reordered() -> None:
    ids = np.array([4, 1, 4, 0], dtype=np.int64)
    sorted_distinct(ids)
    assert ids.tolist() == [4, 1, 4, 0]
