"""What a client sees of a Spark failure: one line, the error class that says what happened,
no plan, stack or path of the server's (no Spark needed: these are Spark's texts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

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
            " violated by row with values: amount : -1.0",
            True,
        ),
        (
            "[DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] CHECK constraint c (a > b) violated by row"
            " with values:\n - a : 1\n - b : /etc/passwd\n\tat org.apache.spark.Foo(Foo.scala:1)",
            "[DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] CHECK constraint c (a > b) violated by row"
            " with values: a : 1; b : <path>",
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
        (
            "[NOT_SUPPORTED_CHANGE_COLUMN] ALTER TABLE ALTER/CHANGE COLUMN is not supported for"
            " changing `spark_catalog`.`delta`.`file:/data/lake/t`'s column `id`",
            "[NOT_SUPPORTED_CHANGE_COLUMN] ALTER TABLE ALTER/CHANGE COLUMN is not supported for"
            " changing `spark_catalog`.`delta`.`<path>`'s column `id`",
            False,
        ),
        ("no error class at all\n\tat x.y(Z.java:1)", "no error class at all", False),
        (
            "An error occurred while calling o95.getResult.\n: org.apache.spark.SparkException:"
            " Exception thrown in awaitResult: \n\tat org.apache.spark.util.X.y(X.scala:1)\n"
            "Caused by: org.apache.spark.SparkException: Job aborted due to stage failure: Task"
            " 0 in stage 9.0 failed 1 times\n\tat org.apache.spark.Z.z(Z.scala:2)\nCaused by:"
            " java.lang.UnsupportedOperationException: BigDecimal precision cannot be greater"
            " than that in the Arrow vector: 19 > 18\n\tat org.apache.arrow.W.w(W.java:3)",
            "BigDecimal precision cannot be greater than that in the Arrow vector: 19 > 18",
            False,
        ),
        (
            "An error occurred while calling o7.collectToPython.\n: java.lang.NullPointerException"
            "\n\tat org.apache.spark.Q.q(Q.scala:4)",
            "NullPointerException",
            False,
        ),
        (
            "An error occurred while calling o8.sql.\n: org.apache.spark.SparkException: read"
            " file:/data/lake/s/t/part-0.parquet failed\n\tat org.apache.spark.Q.q(Q.scala:4)",
            "read <path> failed",
            False,
        ),
        (  # a Spark Connect call that failed without Spark's error: gRPC's own rendering
            "<_MultiThreadedRendezvous of RPC that terminated with:\n\tstatus ="
            ' StatusCode.UNKNOWN\n\tdetails = "Java heap space"\n\tdebug_error_string ='
            ' "UNKNOWN:Error received from peer ipv4:10.0.0.7:15002 {grpc_status:2}"\n>',
            "Java heap space",
            False,
        ),
    ],
)
def test_one_line_of_a_spark_failure(text: str, line: str, clients: bool) -> None:
    error = RuntimeError(text)
    assert one_line(error) == line
    assert caused_by_client(error) is clients


@pytest.mark.spark  # delta-rs comes with the [spark] extra
def test_delta_rs_errors_carry_no_backtrace_where_rust_backtrace_is_set(tmp_path: Path) -> None:
    """With RUST_BACKTRACE=1 (many a developer's machine) delta-rs' errors carried frames and
    the C library's source paths into clients' messages; the Spark backend turns a library's
    backtraces off, in a fresh process as the server starts."""
    log = tmp_path / "t" / "_delta_log"
    log.mkdir(parents=True)
    schema: dict[str, Any] = {"type": "long"}
    for _ in range(50):  # deeper than delta-rs reads: it fails with a backtraced error
        schema = {
            "type": "struct",
            "fields": [{"name": "f", "type": schema, "nullable": True, "metadata": {}}],
        }
    commit = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "deep",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(
                    {
                        "type": "struct",
                        "fields": [{"name": "v", "type": schema, "nullable": True, "metadata": {}}],
                    }
                ),
                "partitionColumns": [],
                "configuration": {},
            }
        },
    ]
    (log / "00000000000000000000.json").write_text("\n".join(json.dumps(a) for a in commit))
    probe = (
        "import sys, pyairport.backends.spark, deltalake\n"
        "try:\n    deltalake.DeltaTable(sys.argv[1])\n"
        "except Exception as e:\n    print(repr(str(e)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "RUST_LIB_BACKTRACE"}
    env["RUST_BACKTRACE"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "t")], env=env, capture_output=True, text=True
    )
    assert "too deeply nested" in done.stdout, done.stderr
    assert "\\n" not in done.stdout and "pthread" not in done.stdout
