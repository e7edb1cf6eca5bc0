"""What a client sees of a Spark failure: one line, the error class that says what happened,
no plan, stack or path of the server's (no Spark needed: these are Spark's texts)."""

from __future__ import annotations

import pytest

from pyairport.backends.spark.sql import caused_by_client, one_line

WRAPPED_CONSTRAINT = (
    "An error occurred while calling o2127.save.\n: org.apache.spark.SparkException:"
    " [TASK_WRITE_FAILED] Task failed while writing rows to file:/lake/sales/t. SQLSTATE: 58030\n"
    "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.taskFailedWhileWritingRowsError(x)\n"
    "Caused by: [DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] CHECK constraint positive (amount / 2 > 0)"
    " violated by row with values:\n - amount : -1.0\n\tat org.apache.spark.Foo(Foo.scala:1)"
)


@pytest.mark.parametrize(
    ("text", "line", "clients"),
    [
        (
            WRAPPED_CONSTRAINT,
            "[DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] CHECK constraint positive (amount / 2 > 0)"
            " violated by row with values",
            True,
        ),
        (
            "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column with name `rowid` cannot be resolved."
            " SQLSTATE: 42703;\n'Project ['rowid, order_id#2330L]",
            "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column with name `rowid` cannot be resolved",
            False,
        ),
        (
            "[DELTA_VERSION_NOT_FOUND] Cannot time travel Delta table to version 99."
            " Available versions: [0, 2].",
            "[DELTA_VERSION_NOT_FOUND] Cannot time travel Delta table to version 99."
            " Available versions: [0, 2]",
            True,
        ),
        (
            "[PATH_NOT_FOUND] Path does not exist: file:/data/lake/sales/orders.",
            "[PATH_NOT_FOUND] Path does not exist: <path>",
            False,
        ),
        ("no error class at all\n\tat x.y(Z.java:1)", "no error class at all", False),
    ],
)
def test_one_line_of_a_spark_failure(text: str, line: str, clients: bool) -> None:
    error = RuntimeError(text)
    assert one_line(error) == line
    assert caused_by_client(error) is clients
