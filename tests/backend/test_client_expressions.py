"""Which expressions a client writes (CHECK constraints, DEFAULTs) the server's Spark may run
(backends/spark/client_expressions.py): asked of Spark's own parser in a classic session and
of the text's tokens over Spark Connect, with the same verdicts; and a CHECK refused or kept
through the wire on a Connect-backed catalog."""

from __future__ import annotations

from typing import Any

import grpc
import pyarrow as pa
import pytest

from pyairport.backends.spark.client_expressions import refusal, spark_expression
from pyairport.client import AirportClient
from pyairport.server import AirportServer, ServerConfig

from ..protocol.conftest import refusal as wire_refusal

REFUSED = [
    "x IN (SELECT 1)",
    "EXISTS (SELECT 1 FROM other.kept)",
    "reflect('java.lang.System', 'exit', 1) IS NULL",
    "`reflect`('java.lang.System', 'exit', 1) IS NULL",
    "`java_method`('java.lang.System', 'exit', 1) IS NULL",
    "IDENTIFIER('reflect')('java.lang.System', 'exit', 1) IS NULL",
    "system.builtin.reflect('java.lang.System', 'exit', 1) IS NULL",
    "current_user() = 'root'",
    "`current_user`() = 'root'",
    "CURRENT_USER = 'root'",
    "session_user = 'root'",
    "current_database() = 'default'",
    "s RLIKE '^(a+)+$'",
    "s REGEXP '^(a+)+$'",
    "regexp_like(s, '^(a+)+$')",
    "regexp_extract(s, '^(a+)+$', 1) = ''",
    "s LIKE '%a%a%a%b'",
    "s LIKE '%a_b%'",
    "s LIKE 'a%%'",
    "like_escape(s, 'a!%%b%', '!')",
    "s LIKE 'a%b%c'",
    "s LIKE s",
    "s LIKE ANY ('a%', 'b%')",
    "length(repeat(s, 2000000000)) > 0",
    "length(lpad(s, 2000000000, 'x')) > 0",
    "size(sequence(1, 2000000000)) > 0",
    "transform(array(x), y -> y) IS NOT NULL",
    "max(x) OVER () > 0",
    "\u212aurtosis(x) > 0",  # the Kelvin sign, which Python lowers to k
    "x > 0; DROP TABLE t",
    "uuid() IS NOT NULL",
    "\"reflect\"('java.lang.System', 'exit', 1) IS NULL",  # DuckDB's quoted name
    "\"current_user\" = 'root'",
    "s ~~ '%a%b%c'",  # DuckDB's LIKE
    "s !~~* s",
]
KEPT = [
    "x > 0",
    "(x > 0)",
    "x BETWEEN 0 AND 10 AND x IN (1, 2, 3)",
    "s IS NULL OR (length(s) < 5 AND upper(s) <> 'AX')",
    "s LIKE 'a%'",
    "s LIKE '%a'",
    "s LIKE '%a%'",
    "s LIKE 'a%b'",
    "s ILIKE '_b%'",
    "CASE WHEN x > 1 THEN 'a' ELSE 'b' END = 'a'",
    "cast(s AS INT) > 0",
    "coalesce(s, 'it''s') <> ''",
    "abs(x) % 2 = 0",
    "DATE '2024-01-01' < current_date()",
    "now() IS NOT NULL",
    '"my col" > 0 AND "say ""hi""" < 3',
    "s ~~ 'a%' AND s !~~* '%Z'",
    "s <> 'a\\b' AND s <> 'it''s'",
    "like_count > 0",
]


def test_duckdb_text_is_respelled_for_spark() -> None:
    """Strings and quoted names exactly, as Spark reads them; LIKE's operators as words."""
    assert spark_expression("s <> 'it''s' AND s <> 'a\\b'") == "s <> 'it\\'s' AND s <> 'a\\\\b'"
    assert spark_expression('"my col" > 0 AND "a`b" = "say ""hi"""') == (
        '`my col` > 0 AND `a``b` = `say "hi"`'
    )
    assert spark_expression("(s ~~ 'a%') AND (s !~~* 'b') AND (s ~~* 'c') AND (s !~~ 'd')") == (
        "(s  LIKE  'a%') AND (s  NOT ILIKE  'b') AND (s  ILIKE  'c') AND (s  NOT LIKE  'd')"
    )
    assert spark_expression("s ~~~ 'a*'") == "s ~~~ 'a*'"  # GLOB: Spark refuses it
    # DuckDB's LIKE has no escape character, Spark's is \\: a pattern's backslash is doubled
    assert (
        spark_expression("s LIKE 'a\\%' AND s <> 'a\\%'") == "s LIKE 'a\\\\\\\\%' AND s <> 'a\\\\%'"
    )


@pytest.mark.spark
@pytest.mark.parametrize("session", ["classic", "connect"])
def test_parser_and_tokens_refuse_and_keep_the_same_expressions(
    session: str, request: pytest.FixtureRequest
) -> None:
    backend = request.getfixturevalue(
        "spark_backend" if session == "classic" else "spark_connect_backend"
    )
    for expression in REFUSED:
        assert refusal(backend.spark, expression) is not None, expression
    for expression in KEPT:
        assert refusal(backend.spark, expression) is None, expression


@pytest.mark.spark
def test_a_check_over_spark_connect_is_held_to_the_same_rules(spark_connect_backend: Any) -> None:
    """Through the wire on a catalog whose Spark is reached by Spark Connect: a hostile CHECK
    is refused in one line and makes no table; a plain one is made and enforced; a DEFAULT is
    held to the same and kept with the meaning DuckDB's dialect gives it."""
    server = AirportServer(spark_connect_backend.catalog, None, ServerConfig(port=0)).start()
    client = AirportClient(server.location)
    columns = pa.schema([pa.field("x", pa.int64()), pa.field("s", pa.string())])
    try:
        client.create_schema("checks")
        for expression in ("`reflect`('java.lang.System', 'exit', 1) IS NULL", "s RLIKE 'a'"):
            error = wire_refusal(
                lambda: client.create_table("checks", "t", columns, checks=[expression])  # noqa: B023
            )
            assert error.code == grpc.StatusCode.INTERNAL, error.message
            assert "is not allowed in one" in error.message and "\n" not in error.message
            assert [t.name for t in client.list_tables("checks")] == []
        client.create_table("checks", "t", columns, checks=["x BETWEEN 0 AND 10"])
        client.put_insert("checks", "t", pa.table({"x": [3], "s": ["a"]}, columns))
        error = wire_refusal(
            lambda: client.put_insert("checks", "t", pa.table({"x": [11], "s": ["b"]}, columns))
        )
        assert error.code == grpc.StatusCode.INVALID_ARGUMENT, error.message
        assert client.scan("checks", "t", ["x"]).read_all().column("x").to_pylist() == [3]
        error = wire_refusal(lambda: client.set_default("checks", "t", "s", '"current_user"'))
        assert "'current_user' is not allowed in one" in error.message, error.message
        client.set_default("checks", "t", "s", "'it''s \\ here'")
        (folder,) = [
            p.parent
            for p in spark_connect_backend.warehouse.rglob("_delta_log")
            if p.parent.name == "t" and p.parent.parent.name == "checks"
        ]
        spark = spark_connect_backend.spark
        stored = spark.read.format("delta").load(str(folder)).schema["s"].metadata
        assert spark.sql("SELECT " + stored["CURRENT_DEFAULT"]).first()[0] == "it's \\ here"
        narrow = pa.schema([pa.field("n", pa.int32())])
        client.create_table("checks", "w", narrow)
        client.change_column_type("checks", "w", pa.field("n", pa.int64()))  # Delta's widening
        (widened,) = [t for t in client.list_tables("checks") if t.name == "w"]
        assert widened.arrow_schema.field("n").type == pa.int64()
    finally:
        client.close()
        server.stop(0)
