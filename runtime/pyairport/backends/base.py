"""What every backend table shares: its name, comment and schema, and how it joins the
statement scope so that its changes are applied once, when the statement commits."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

import numpy as np
import pyarrow as pa

from airport_contracts import Context, DMLOptions, DMLResult, project_schema

from ..statement_scope import statement_from_context

P = TypeVar("P")


class BackendTable(ABC, Generic[P]):
    """Subclasses set `schema`, `_name`, `_comment`, implement `_new_pending` and
    `_commit_pending` (and `_discard_pending` if rolling back has something to clean up), and
    the row changes the capability interfaces are built on (capabilities.py): `insert_rows`,
    `update_rows` (rowids and their new values, chunk by chunk) and `delete_rows`."""

    schema: pa.Schema
    _name: str
    _comment: str

    def name(self) -> str:
        return self._name

    def comment(self) -> str:
        return self._comment

    def arrow_schema(self, columns: list[str] | None = None) -> pa.Schema:
        return project_schema(self.schema, columns or [])

    @abstractmethod
    def insert_rows(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        """Stage the rows as new rows of the table (applied at once outside a statement)."""

    @abstractmethod
    def update_rows(
        self,
        ctx: Context,
        chunks: Iterable[tuple[np.ndarray, pa.RecordBatch]],
        opts: DMLOptions | None,
    ) -> DMLResult:
        """Stage new values for the rows the rowids name, chunk by chunk."""

    @abstractmethod
    def delete_rows(
        self, ctx: Context, id_chunks: Iterable[np.ndarray], opts: DMLOptions | None
    ) -> DMLResult:
        """Stage the removal of the rows the rowids name."""

    @abstractmethod
    def _new_pending(self) -> P:
        """Empty staged changes for one statement."""

    @abstractmethod
    def _commit_pending(self, ctx: Context, pending: P) -> int | None:
        """Apply a statement's staged changes (its commit hook) for the call ctx belongs to
        (work that outlives the call may stop when it ends): the rows it changed when it
        counts them only now (Statement.changed_rows), else None."""

    def _discard_pending(self, pending: P) -> None:
        """Nothing to clean up unless a backend staged outside memory."""

    def _stage(self, ctx: Context) -> tuple[P, bool]:
        """This statement's pending changes, and whether to apply them at once (a call made
        outside any statement, e.g. directly from user code)."""
        statement = statement_from_context(ctx)
        if statement is None:
            return self._new_pending(), True
        pending: Any = statement.join(
            self,
            self._new_pending,
            lambda staged: self._commit_pending(ctx, staged),
            self._discard_pending,
        )
        return pending, False
