"""Spec 001 §10: every row of the compatibility matrix, through the dispatchers."""

from __future__ import annotations

import pytest

from airport_contracts import DeleteNotSupported, UpdateNotSupported
from airport_contracts.contract import COMPATIBILITY_MATRIX, MatrixRow

from .dispatch_helpers import batch, dispatcher_for, exchange
from .tables import make_table, seed

METHOD = {
    "UpdatableBatchTable": "update_batch",
    "UpdatableTable": "update_by_row_ids",
    "DeletableBatchTable": "delete_batch",
    "DeletableTable": "delete_by_row_ids",
}


def test_matrix_has_every_row_of_the_spec() -> None:
    assert len(COMPATIBILITY_MATRIX) == 7


@pytest.mark.parametrize("row", COMPATIBILITY_MATRIX, ids=lambda r: "+".join(r.implements))
def test_update_follows_the_matrix(row: MatrixRow) -> None:
    table = make_table(*row.implements, rows=seed(3))
    dispatcher = dispatcher_for(table)
    if row.update is None:
        with pytest.raises(UpdateNotSupported) as err:
            exchange(dispatcher, "update", [batch({"name": ["x"], "rowid": [1]})])
        assert str(err.value) == "table 'users' does not support UPDATE operations"
        assert table.calls == []
    else:
        _, _, total = exchange(dispatcher, "update", [batch({"name": ["x"], "rowid": [1]})])
        assert total == 1
        assert table.calls == [METHOD[row.update]]  # the batch method wins; the other never runs
        assert table.rows[1]["name"] == "x"


@pytest.mark.parametrize("row", COMPATIBILITY_MATRIX, ids=lambda r: "+".join(r.implements))
def test_delete_follows_the_matrix(row: MatrixRow) -> None:
    table = make_table(*row.implements, rows=seed(3))
    dispatcher = dispatcher_for(table)
    if row.delete is None:
        with pytest.raises(DeleteNotSupported) as err:
            exchange(dispatcher, "delete", [batch({"rowid": [1]})])
        assert str(err.value) == "table 'users' does not support DELETE operations"
    else:
        _, _, total = exchange(dispatcher, "delete", [batch({"rowid": [1]})])
        assert total == 1 and 1 not in table.rows
        assert table.calls == [METHOD[row.delete]]
