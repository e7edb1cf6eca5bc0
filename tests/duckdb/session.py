"""A DuckDB connection attached to a Flight server, whose failures show the SQL and DuckDB's
own error text."""

from __future__ import annotations

from typing import Any

from . import extension as airport_extension


class SqlFailed(AssertionError):
    """A statement that should have run failed (or one that should have failed ran)."""


class Session:
    """`ATTACH '' AS lake (TYPE airport, LOCATION …)` in a fresh in-memory DuckDB."""

    def __init__(self, extension: str, location: str, token: str | None = None) -> None:
        import duckdb

        self._error = duckdb.Error
        self.connection = airport_extension.connect(extension)
        self.location = location
        if token is not None:
            self.run(
                f"CREATE SECRET lake_token (TYPE airport, auth_token '{token}', scope '{location}')"
            )
        self.run(f"ATTACH '' AS lake (TYPE airport, LOCATION '{location}')")

    def run(self, sql: str, *parameters: Any) -> list[tuple[Any, ...]]:
        """The statement's rows (none for DML without RETURNING)."""
        try:
            cursor = self.connection.execute(sql, parameters or None)
            return cursor.fetchall() if cursor.description else []
        except self._error as error:
            raise SqlFailed(f"{sql}\n  -> DuckDB: {type(error).__name__}: {error}") from None

    def value(self, sql: str) -> Any:
        rows = self.run(sql)
        if len(rows) != 1 or len(rows[0]) != 1:
            raise SqlFailed(f"{sql}\n  -> expected one value, got {rows!r}")
        return rows[0][0]

    def fails(self, sql: str) -> str:
        """DuckDB's error text for a statement that must fail."""
        try:
            cursor = self.connection.execute(sql)
            rows = cursor.fetchall() if cursor.description else []
        except self._error as error:
            return str(error)
        raise SqlFailed(f"{sql}\n  -> expected an error, ran and gave {rows[:5]!r}")

    def close(self) -> None:
        self.connection.close()
