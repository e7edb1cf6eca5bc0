"""Spark backend specifics: one Delta commit per statement, rollback commits nothing,
concurrent writers lose nothing, rowids stay put. (The DML scenarios run on Spark too:
tests/protocol/test_dml_scenarios.py.)"""

from __future__ import annotations

import json
import struct
import threading
import uuid
from typing import Any

import pyarrow as pa
import pytest

from airport_contracts import Context, DMLOptions, ScanOptions
from pyairport.statement_scope import Statement, with_statement

from ..filter_json import column, comparison, constant, document

pytestmark = pytest.mark.spark

COLUMNS = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture
def table(spark_backend: Any) -> Any:
    return spark_backend.table("unit", f"t_{uuid.uuid4().hex[:8]}", COLUMNS, id_from_rowid="id")


def _versions(table: Any) -> int:
    """The table's commits, a claim of rowids apart (it holds no row: rowid_claims.py)."""
    history = table.spark.sql(f"DESCRIBE HISTORY {table.fqn}")
    claims = history["userMetadata"].startswith("pyairport claims")
    return int(history.where(claims.isNull() | ~claims).count())


def _reader(data: pa.Table, batch_rows: int) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=batch_rows))


def _rows(n: int, start: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "name": [f"n{i}" for i in range(start, start + n)],
        }
    )


def test_a_multi_batch_statement_is_one_delta_commit(table: Any) -> None:
    before = _versions(table)
    statement = Statement("s")
    ctx = with_statement(Context.background(), statement)
    result = table.insert(
        ctx, _reader(_rows(10), 2), DMLOptions(returning=True, returning_columns=["id", "name"])
    )
    assert result.affected_rows == 10 and result.returning_data.read_all().num_rows == 10
    assert _versions(table) == before  # nothing visible before the statement commits
    statement.commit()
    assert _versions(table) == before + 1
    assert table.num_rows == 10


def test_rollback_commits_nothing_and_cleans_its_staging(table: Any, spark_backend: Any) -> None:
    table.insert(Context.background(), _reader(_rows(3), 3), None)
    before = _versions(table)
    for change in (
        lambda ctx: table.insert(ctx, _reader(_rows(5, 100), 2), None),
        lambda ctx: table.update_batch(
            ctx, _reader(pa.table({"name": ["x"], "rowid": pa.array([1], pa.int64())}), 1), None
        ),
        lambda ctx: table.delete_by_row_ids(ctx, pa.array([1, 2], pa.int64()), None),
    ):
        statement = Statement("s")
        change(with_statement(Context.background(), statement))
        statement.rollback()
    assert _versions(table) == before
    assert table.to_table().column("name").to_pylist() == ["n0", "n1", "n2"]
    assert not any(spark_backend.staging.iterdir())


def test_update_and_delete_are_one_commit_each_and_rowids_stay(table: Any) -> None:
    table.insert(Context.background(), _reader(_rows(6), 6), None)
    before = _versions(table)
    statement = Statement("u")
    ctx = with_statement(Context.background(), statement)
    updates = pa.table({"name": ["a", "b", "c"], "rowid": pa.array([2, 4, 6], pa.int64())})
    assert table.update_batch(ctx, _reader(updates, 1), None).affected_rows == 3
    statement.commit()
    assert statement.changed_rows == 3  # Delta's count, which the server answers
    statement = Statement("d")
    ctx = with_statement(Context.background(), statement)
    result = table.delete_batch(
        ctx, _reader(pa.table({"rowid": pa.array([1, 99], pa.int64())}), 1), None
    )
    assert result.affected_rows == 2  # at most the rowids given: rows are counted at commit
    statement.commit()
    assert statement.changed_rows == 1  # rowid 99 is not there
    assert _versions(table) == before + 2
    history = (
        table.spark.sql(f"DESCRIBE HISTORY {table.fqn}").select("operation").limit(2).collect()
    )
    # small statements are Spark's own UPDATE and DELETE (larger ones a MERGE, below)
    assert [r[0] for r in history] == ["DELETE", "UPDATE"]
    assert table.to_table().select(["rowid", "name"]).to_pylist() == [
        {"rowid": 2, "name": "a"},
        {"rowid": 3, "name": "n2"},
        {"rowid": 4, "name": "b"},
        {"rowid": 5, "name": "n4"},
        {"rowid": 6, "name": "c"},
    ]


def _statement(
    table: Any, method: str, data: pa.Table, opts: DMLOptions | None = None
) -> tuple[Any, int | None]:
    """The table call's result and the statement's count (what the server answers)."""
    statement = Statement(method)
    result = getattr(table, method)(
        with_statement(Context.background(), statement), _reader(data, 2), opts
    )
    statement.commit()
    return result, statement.changed_rows


def test_small_updates_keep_each_value_and_type(table: Any) -> None:
    """The in-place UPDATE path: one value for every row, values that differ per row, a
    null, and columns a statement does not set are left alone."""
    table.insert(Context.background(), _reader(_rows(5), 5), None)
    same = pa.table({"name": ["same"] * 3, "rowid": pa.array([1, 2, 3], pa.int64())})
    assert _statement(table, "update_batch", same)[1] == 3
    mixed = pa.table(
        {
            "id": pa.array([40, None], pa.int64()),
            "name": ["it's", None],
            "rowid": pa.array([4, 5], pa.int64()),
        }
    )
    assert _statement(table, "update_batch", mixed)[1] == 2
    assert table.to_table().select(["rowid", "id", "name"]).to_pylist() == [
        {"rowid": 1, "id": 0, "name": "same"},
        {"rowid": 2, "id": 1, "name": "same"},
        {"rowid": 3, "id": 2, "name": "same"},
        {"rowid": 4, "id": 40, "name": "it's"},
        {"rowid": 5, "id": None, "name": None},
    ]


@pytest.mark.parametrize("inline_rowids", [100, 1], ids=["in_place", "merge"])
def test_a_statement_whose_calls_set_different_columns_leaves_the_others(
    table: Any, monkeypatch: pytest.MonkeyPatch, inline_rowids: int
) -> None:
    """Calls of one statement may set different columns of different rows; a column a row's
    call did not set keeps its value (CASE in the UPDATE, a flag column in the MERGE)."""
    from pyairport.backends.spark import commits as spark_table

    monkeypatch.setattr(spark_table, "INLINE_ROWIDS", inline_rowids)
    table.insert(Context.background(), _reader(_rows(3), 3), None)
    statement = Statement("mixed")
    ctx = with_statement(Context.background(), statement)
    names = pa.table({"name": ["a", "c"], "rowid": pa.array([1, 3], pa.int64())})
    ids = pa.table({"id": pa.array([20, 30], pa.int64()), "rowid": pa.array([2, 3], pa.int64())})
    table.update_batch(ctx, _reader(names, 2), None)
    table.update_batch(ctx, _reader(ids, 2), None)
    statement.commit()
    assert statement.changed_rows == 3
    assert table.to_table().select(["rowid", "id", "name"]).to_pylist() == [
        {"rowid": 1, "id": 0, "name": "a"},
        {"rowid": 2, "id": 20, "name": "n1"},
        {"rowid": 3, "id": 30, "name": "c"},  # each call's column, though the rows overlap
    ]


EXACT_TYPES = pa.schema(
    [
        ("b", pa.bool_()),
        ("i8", pa.int8()),
        ("i16", pa.int16()),
        ("i32", pa.int32()),
        ("i64", pa.int64()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("s", pa.string()),
        ("bin", pa.binary()),
        ("dec", pa.decimal128(20, 4)),
        ("d", pa.date32()),
    ]
)


def _edge_values() -> dict[str, list[Any]]:
    """Eight rows of EXACT_TYPES' edge values: quotes, backslashes, SQL, non-ASCII and
    control characters in strings; NaN, infinities, -0.0, subnormals, float32's own values;
    decimals, dates, bytes, nulls."""
    import datetime
    import decimal

    return {
        "b": [True, False, None, True, False, True, None, False],
        "i8": [-128, 127, 0, None, 1, -1, 5, 6],
        "i16": [-32768, 32767, 0, 1, None, 2, 3, 4],
        "i32": [-(2**31), 2**31 - 1, 0, 1, 2, None, 3, 4],
        "i64": [-(2**63), 2**63 - 1, 0, 1, 2, 3, None, 4],
        "f32": [
            float("nan"),
            float("inf"),
            float("-inf"),
            -0.0,
            1e-45,
            3.4028234663852886e38,
            0.1,
            None,
        ],
        "f64": [
            float("nan"),
            float("inf"),
            float("-inf"),
            -0.0,
            5e-324,
            1.7976931348623157e308,
            0.1,
            None,
        ],
        "s": [
            "it's",
            "back\\slash",
            "'; DROP TABLE x; --",
            "é中🚀",
            "a\nb\tc\x00d",
            "",
            "`x`",
            None,
        ],
        "bin": [b"", b"\x00\xff", b"'", None, b"abc", b"\\", b"x", b"y"],
        "dec": [
            decimal.Decimal("1234567890123456.7890"),
            decimal.Decimal("-0.0001"),
            decimal.Decimal("0"),
            None,
            decimal.Decimal("1E+3"),
            decimal.Decimal("-9999999999999999.9999"),
            decimal.Decimal("0.5"),
            decimal.Decimal("2"),
        ],
        "d": [
            datetime.date(1, 1, 1),
            datetime.date(9999, 12, 31),
            datetime.date(1970, 1, 1),
            None,
            datetime.date(2024, 2, 29),
            datetime.date(1582, 10, 15),
            datetime.date(2000, 1, 1),
            datetime.date(1969, 12, 31),
        ],
    }


def _assert_exact(stored: pa.Table, values: dict[str, list[Any]]) -> None:
    for name, expected in values.items():
        got = stored.column(name).to_pylist()
        if name in ("f32", "f64"):  # bit for bit: NaN, the sign of zero, float32 rounding
            form = "<f" if name == "f32" else "<d"
            got = [None if v is None else struct.pack(form, v) for v in got]
            expected = [None if v is None else struct.pack(form, v) for v in expected]
        assert got == expected, name


def test_small_updates_write_every_value_exactly(spark_backend: Any) -> None:
    """The in-place UPDATE writes values into Spark SQL: each type's edge values
    (_edge_values) come back exactly."""
    table = spark_backend.table("unit", f"t_{uuid.uuid4().hex[:8]}", EXACT_TYPES)
    seed = pa.Table.from_pylist([{}] * 8, schema=EXACT_TYPES)
    table.insert(Context.background(), _reader(seed, 8), None)
    values = _edge_values()
    changes = pa.table(
        {
            **{name: pa.array(v, EXACT_TYPES.field(name).type) for name, v in values.items()},
            "rowid": pa.array(range(1, 9), pa.int64()),
        }
    )
    statement = Statement("exact")
    table.update_batch(with_statement(Context.background(), statement), _reader(changes, 8), None)
    statement.commit()
    assert statement.changed_rows == 8
    operation = table.spark.sql(f"DESCRIBE HISTORY {table.fqn}").select("operation").first()[0]
    assert operation == "UPDATE"  # the in-place path, not the MERGE
    _assert_exact(table.to_table(), values)


def test_small_inserts_write_every_value_exactly(
    spark_backend: Any, monkeypatch: pytest.MonkeyPatch, spark_statements: list[str]
) -> None:
    """An INSERT of a few rows is Spark's own INSERT … VALUES: each type's edge values
    (_edge_values) come back exactly. More rows, or a value without an exact literal (a
    timestamp), go through a staged file."""
    from pyairport.backends.spark import commits

    table = spark_backend.table("unit", f"t_{uuid.uuid4().hex[:8]}", EXACT_TYPES)
    values = _edge_values()
    rows = pa.table({n: pa.array(v, EXACT_TYPES.field(n).type) for n, v in values.items()})
    table.insert(Context.background(), _reader(rows, 3), None)
    inserts = [query for query in spark_statements if query.startswith("INSERT")]
    assert len(inserts) == 1 and " VALUES (" in inserts[0]
    _assert_exact(table.to_table(), values)

    monkeypatch.setattr(commits, "INLINE_INSERT_ROWS", 7)
    table.insert(Context.background(), _reader(rows, 8), None)
    timed = pa.schema([("t", pa.timestamp("us", "UTC"))])
    stamped = spark_backend.table("unit", f"t_{uuid.uuid4().hex[:8]}", timed)
    stamped.insert(Context.background(), _reader(pa.table({"t": [0]}, schema=timed), 1), None)
    inserts = [query for query in spark_statements if query.startswith("INSERT")]
    assert [" VALUES (" in q for q in inserts] == [True, False, False]
    assert table.to_table().num_rows == 16
    assert stamped.to_table().column("t").cast(pa.int64()).to_pylist() == [0]


def test_larger_statements_merge(table: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond the in-place sizes, UPDATE and DELETE are one MERGE each against the rowids
    sent as a view, and rows are read and counted by a join."""
    from pyairport.backends.spark import commits as spark_table

    monkeypatch.setattr(spark_table, "INLINE_ROWIDS", 1)
    table.insert(Context.background(), _reader(_rows(4), 4), None)
    updates = pa.table({"name": ["a", "b"], "rowid": pa.array([1, 3], pa.int64())})
    returning = DMLOptions(returning=True, returning_columns=["id", "name"])
    result, changed = _statement(table, "update_batch", updates, returning)
    assert result.affected_rows == changed == 2
    assert sorted(result.returning_data.read_all().column("name").to_pylist()) == ["a", "b"]
    deletes = pa.table({"rowid": pa.array([2, 4, 99], pa.int64())})
    assert _statement(table, "delete_batch", deletes)[1] == 2  # Delta's count: 99 is not there
    history = table.spark.sql(f"DESCRIBE HISTORY {table.fqn}").select("operation").limit(2)
    assert [r[0] for r in history.collect()] == ["MERGE", "MERGE"]
    assert table.to_table().select(["rowid", "name"]).to_pylist() == [
        {"rowid": 1, "name": "a"},
        {"rowid": 3, "name": "b"},
    ]


def test_a_scan_reads_the_version_with_delta_rs_deletion_vectors_included(table: Any) -> None:
    """delta-rs reads the version current when the scan starts, with the filter and the
    projection: a commit after the scan began is not seen, and rows a deletion vector removes
    are gone without Spark reading the table."""
    table.insert(Context.background(), _reader(_rows(6), 6), None)
    table.delete_by_row_ids(Context.background(), pa.array([2], pa.int64()), None)
    assert table.direct_snapshot(table.fresh_layout()[0]) is not None  # delta-rs reads it
    reader = table.scan(Context.background())
    table.update_by_row_ids(
        Context.background(),
        pa.array([3], pa.int64()),
        _reader(pa.table({"name": ["new"]}), 1),
        None,
    )
    before = reader.read_all()
    assert before.schema.equals(table.schema, check_metadata=True)
    assert sorted(before.column("rowid").to_pylist()) == [1, 3, 4, 5, 6]
    assert [r["name"] for r in before.to_pylist() if r["rowid"] == 3] == ["n2"]  # the old value
    id_above_3 = filters_json("GREATERTHAN", 3)
    scanned = table.scan(Context.background(), ScanOptions(columns=["name"], filter=id_above_3))
    assert sorted(scanned.read_all().select(["rowid", "name"]).to_pylist(), key=str) == [
        {"rowid": 5, "name": "n4"},
        {"rowid": 6, "name": "n5"},
    ]
    assert set(scanned.schema.names) == set(table.schema.names)  # full width, others null

    table.spark.sql(
        f"ALTER TABLE {table.fqn} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')"
    )
    table.spark.sql(f"DELETE FROM {table.fqn} WHERE rowid = 4")  # a deletion vector
    snapshot = table.direct_snapshot(table.fresh_layout()[0])
    assert snapshot is not None and "deletionVectors" in snapshot.protocol().reader_features
    assert sorted(table.to_table().column("rowid").to_pylist()) == [1, 3, 5, 6]


def test_tables_pyairport_creates_have_deletion_vectors(table: Any) -> None:
    """A 1-row DELETE or UPDATE marks the row in a deletion vector instead of rewriting the
    file that holds it; delta-rs reads the table as Spark does."""
    table.insert(Context.background(), _reader(_rows(1000), 1000), None)
    properties = dict(table.spark.sql(f"SHOW TBLPROPERTIES {table.fqn}").collect())
    assert properties["delta.enableDeletionVectors"] == "true"
    table.delete_by_row_ids(Context.background(), pa.array([7], pa.int64()), None)
    table.update_by_row_ids(
        Context.background(), pa.array([9], pa.int64()), _reader(pa.table({"name": ["x"]}), 1), None
    )
    history = table.spark.sql(f"DESCRIBE HISTORY {table.fqn}").limit(2).collect()
    update, delete = (r.asDict() for r in history)
    assert (delete["operation"], delete["operationMetrics"]["numRemovedFiles"]) == ("DELETE", "0")
    assert delete["operationMetrics"]["numDeletionVectorsAdded"] == "1"
    assert update["operationMetrics"]["numDeletionVectorsAdded"] == "1"
    served = table.to_table()
    expected = table.spark.sql(f"SELECT * FROM {table.fqn} ORDER BY rowid").toArrow()
    assert served.num_rows == 999 and served.to_pylist() == expected.to_pylist()
    assert [r["name"] for r in served.to_pylist() if r["rowid"] == 9] == ["x"]


def test_a_table_is_created_in_one_commit_without_a_data_file(spark_backend: Any) -> None:
    """A new table is one CREATE TABLE commit (columns, properties) and holds no data file
    until rows arrive; nested field names Spark's own type strings leave bare are quoted."""
    columns = pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("odd", pa.struct([("a-b", pa.int32()), ("x:y", pa.string())])),
        ]
    )
    table = spark_backend.table("unit", f"t_{uuid.uuid4().hex[:8]}", columns, comment="made")
    history = table.spark.sql(f"DESCRIBE HISTORY {table.fqn}").collect()
    assert [r["operation"] for r in history] == ["CREATE TABLE"]
    assert table.spark.sql(f"DESCRIBE DETAIL {table.fqn}").first()["numFiles"] == 0
    assert table.arrow_schema().field("odd").type == columns.field("odd").type
    assert table.comment() == "made"
    rows = pa.table({"id": [1], "odd": [{"a-b": 2, "x:y": "z"}]})
    table.insert(Context.background(), _reader(rows, 1), None)
    assert table.to_table().select(["id", "odd"]).to_pylist() == rows.to_pylist()


def test_a_comment_is_kept_exactly(spark_backend: Any) -> None:
    """A quote or a backslash in a table's comment (a table property) is kept as written:
    Spark reads a backslash in a literal as an escape, and the quote used to be dropped."""
    comment = "Bob's \\ table, 'quoted', ends in \\"
    columns = pa.schema([pa.field("id", pa.int64())])
    table = spark_backend.table("unit", f"t_{uuid.uuid4().hex[:8]}", columns, comment=comment)
    assert table.comment() == comment


def test_a_table_written_before_anything_read_it_is_scanned_without_spark(
    table: Any, spark_statements: list[str]
) -> None:
    """A table opened (here: made) and written before its first scan: the scan compares the
    new version's shape with that of the version its layout was read at, through delta-rs,
    and asks Spark nothing; a column Spark SQL adds beside it is still seen."""
    table.insert(Context.background(), _reader(_rows(2), 2), None)
    spark_statements.clear()
    assert table.to_table().column("name").to_pylist() == ["n0", "n1"]
    assert spark_statements == []
    table.spark.sql(f"ALTER TABLE {table.fqn} ADD COLUMNS (extra STRING)")
    assert table.to_table().column("extra").to_pylist() == [None, None]


def test_a_scan_asks_spark_nothing_the_first_after_a_commit_included(
    table: Any, spark_statements: list[str]
) -> None:
    """delta-rs finds and reads the latest version: scanning an unchanged table, or one that
    pyairport or Spark SQL beside it has just changed, runs no Spark SQL and no Spark job;
    a commit from anywhere is seen by the next scan."""
    table.insert(Context.background(), _reader(_rows(4), 4), None)
    assert len(table.to_table()) == 4
    spark_statements.clear()
    assert table.to_table().column("name").to_pylist() == ["n0", "n1", "n2", "n3"]
    assert spark_statements == []  # the same version: nothing asked of Spark
    table.update_by_row_ids(
        Context.background(),
        pa.array([2], pa.int64()),
        _reader(pa.table({"name": ["ours"]}), 1),
        None,
    )
    table.spark.sql(f"UPDATE {table.fqn} SET name = 'beside' WHERE rowid = 4")
    spark_statements.clear()
    jobs = set(table.spark.sparkContext.statusTracker().getJobIdsForGroup())
    assert table.to_table().column("name").to_pylist() == ["n0", "ours", "n2", "beside"]
    assert spark_statements == []
    assert set(table.spark.sparkContext.statusTracker().getJobIdsForGroup()) == jobs


def test_a_direct_scan_reads_files_written_before_a_column_was_added(
    table: Any, spark_backend: Any
) -> None:
    """A column added later (Spark SQL's ADD COLUMNS) is absent from the older files: null
    there, its values from the newer ones, with a filter as well."""
    from pyairport.backends.spark import SparkTable
    from pyairport.backends.spark.layout import read_layout

    table.insert(Context.background(), _reader(_rows(3), 3), None)
    table.spark.sql(f"ALTER TABLE {table.fqn} ADD COLUMNS (extra STRING)")
    table.spark.sql(f"INSERT INTO {table.fqn} VALUES (4, 3, 'n3', 'e')")
    reopened = SparkTable(spark_backend, "unit", table.name(), read_layout(table.spark, table.fqn))
    assert reopened.direct_snapshot(reopened.fresh_layout()[0]) is not None  # delta-rs reads it
    rows = reopened.to_table().select(["rowid", "extra"]).to_pylist()
    assert rows == [{"rowid": r, "extra": "e" if r == 4 else None} for r in (1, 2, 3, 4)]
    above_1 = filters_json("GREATERTHAN", 1)
    scanned = reopened.scan(Context.background(), ScanOptions(columns=["extra"], filter=above_1))
    assert sorted(scanned.read_all().column("rowid").to_pylist()) == [3, 4]


def filters_json(kind: str, value: int) -> str:
    """DuckDB's json_filters for `id <kind> value` (id: column 0 of the bindings)."""
    return document(["id", "name"], comparison(kind, column(0), constant(value)))


def _a_version_spark_reads(table: Any) -> Any:
    """A time point naming the table's latest version, once a column added since has made it
    a version of another shape than today's: Spark reads it (delta-rs reads today's shape)."""
    from airport_contracts import TimePoint

    version = table.spark.sql(f"DESCRIBE HISTORY {table.fqn} LIMIT 1").first()["version"]
    table.spark.sql(f"ALTER TABLE {table.fqn} ADD COLUMNS (extra STRING)")
    at = TimePoint(unit="version", value=str(version))
    assert table.direct_snapshot(table.fresh_layout()[0], at) is None
    return at


def test_a_like_spark_would_match_by_backtracking_is_left_to_duckdb(table: Any) -> None:
    """A scan Spark serves given `name LIKE '%a%a…%b'` (twelve `%`s) over a 40-character name:
    Spark, matching it as a Java regular expression, ran for over a minute, in a task no
    cancel stops. The LIKE is left to DuckDB: every row comes."""
    from pyairport import filters

    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a" * 40, "a" * 39 + "b"]})
    table.insert(Context.background(), _reader(rows, 2), None)
    at = _a_version_spark_reads(table)
    slow = filters.to_json(filters.Like("name", "%a" * 12 + "%b"), table.arrow_schema())
    answered: list[list[str]] = []

    def scan() -> None:
        options = ScanOptions(columns=["name"], filter=slow, time_point=at)
        answered.append(table.scan(Context.background(), options).read_all()["name"].to_pylist())

    worker = threading.Thread(target=scan, daemon=True)
    worker.start()
    worker.join(30)
    assert answered, "the scan did not answer within 30 s"
    assert sorted(answered[0]) == sorted(rows["name"].to_pylist())


def test_spark_scans_the_rows_another_writer_left_without_a_rowid(
    table: Any, spark_backend: Any
) -> None:
    """Rows plain Spark inserted into a table of this server's have no rowid: Spark's scan
    by rowid ranges (a server that has given out no rowid yet, or a table of over a million)
    lost them; delta-rs' did not."""
    from pyairport.backends.spark.layout import read_layout
    from pyairport.backends.spark.table import SparkTable

    table.insert(Context.background(), _reader(_rows(2), 2), None)
    table.spark.sql(f"INSERT INTO {table.fqn} (id, name) VALUES (7, 'plain'), (8, 'spark')")
    at = _a_version_spark_reads(table)
    layout = read_layout(table.spark, table.fqn)
    reopened = SparkTable(spark_backend, "unit", table.name(), layout)  # as a new server's
    scanned = reopened.scan(Context.background(), ScanOptions(columns=["name"], time_point=at))
    assert sorted(scanned.read_all()["name"].to_pylist()) == ["n0", "n1", "plain", "spark"]


def test_concurrent_writers_lose_nothing(table: Any) -> None:
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for j in range(3):
                statement = Statement(f"{k}-{j}")
                table.insert(
                    with_statement(Context.background(), statement),
                    _reader(_rows(50, k * 1000 + j * 50), 20),
                    None,
                )
                statement.commit()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    data = table.to_table()
    assert data.num_rows == 4 * 3 * 50
    assert len(set(data.column("rowid").to_pylist())) == data.num_rows
    assert sorted(data.column("id").to_pylist()) == sorted(
        k * 1000 + j for k in range(4) for j in range(150)
    )


def test_schema_declares_the_rowid_and_scans_match_it(table: Any) -> None:
    schema = table.arrow_schema()
    assert schema.names == ["rowid", "id", "name"]
    assert schema.field("rowid").metadata == {b"is_rowid": b"true"}
    table.insert(Context.background(), _reader(_rows(2), 2), None)
    assert table.scan(Context.background()).schema.equals(schema, check_metadata=True)


def test_tables_created_or_dropped_on_the_spark_side_change_the_catalog(spark_backend: Any) -> None:
    import shutil

    name = f"side_{uuid.uuid4().hex[:8]}"
    location = spark_backend.warehouse / "unit" / name
    before, _ = spark_backend.catalog.version()
    spark_backend.spark.sql(f"CREATE DATABASE IF NOT EXISTS unit LOCATION '{location.parent}'")
    spark_backend.spark.sql(
        f"CREATE TABLE unit.{name} (rowid BIGINT, id BIGINT) USING delta LOCATION '{location}'"
    )
    spark_backend.refresh()
    after, fixed = spark_backend.catalog.version()
    schema = spark_backend.catalog.schema(Context.background(), "unit")
    assert after > before and not fixed
    table = schema.table(Context.background(), name)
    assert table is not None and table.arrow_schema().names == ["rowid", "id"]
    spark_backend.spark.sql(f"DROP TABLE unit.{name}")
    shutil.rmtree(location, ignore_errors=True)
    spark_backend.refresh()
    assert schema.table(Context.background(), name) is None
    assert spark_backend.catalog.version()[0] > after


def test_scan_reads_only_the_columns_asked_for(table: Any) -> None:
    from airport_contracts import ScanOptions

    table.insert(Context.background(), _reader(_rows(3), 3), None)
    data = table.scan(Context.background(), ScanOptions(columns=["name"])).read_all()
    assert data.schema.equals(table.arrow_schema(), check_metadata=True)
    assert data.column("name").null_count == 0 and data.column("id").null_count == 3


@pytest.mark.parametrize("connect", [False, True], ids=["classic", "connect"])
def test_a_scan_streams_pieces_of_one_delta_version(
    table: Any, monkeypatch: pytest.MonkeyPatch, connect: bool
) -> None:
    """Scans Spark serves of tables whose rowids span more than one query's stream (a classic
    session's by Spark partitions, Spark Connect's, forced here on a classic session, a data
    file at a time: the server never holds the table), and every piece comes from the version
    current when the scan began: a commit in the middle is not seen."""
    from pyairport.backends.spark import scans

    monkeypatch.setattr(scans, "is_connect", lambda _: connect)
    monkeypatch.setattr(scans, "SCAN_RANGE_ROWIDS", 4)
    monkeypatch.setattr(scans, "SCAN_GROUP_BYTES", 1)
    monkeypatch.setattr(scans, "SCAN_BATCH_ROWS", 4)
    monkeypatch.setattr(type(table), "direct_snapshot", lambda self, *_: None)  # Spark reads
    table.insert(Context.background(), _reader(_rows(10), 10), None)  # rowids 1..10: 3 ranges
    table.delete_by_row_ids(Context.background(), pa.array([5, 6, 7, 8], pa.int64()), None)
    reader = table.scan(Context.background())
    first = reader.read_next_batch()  # rowids 1..4
    table.insert(
        Context.background(), _reader(_rows(3, start=100), 3), None
    )  # after the scan began
    table.update_by_row_ids(
        Context.background(),
        pa.array([9], pa.int64()),
        _reader(pa.table({"name": ["new"]}), 1),
        None,
    )
    rest = reader.read_all()
    seen = pa.Table.from_batches([first]).to_pylist() + rest.to_pylist()
    assert sorted(r["rowid"] for r in seen) == [1, 2, 3, 4, 9, 10]  # 5..8 deleted, 11..13 late
    assert [r["name"] for r in seen if r["rowid"] == 9] == ["n8"]  # the old value
    assert first.num_rows <= 4 and max(b.num_rows for b in rest.to_batches()) <= 4
    # pushed-down filters and projection apply to every range
    id_above_2 = json.dumps(
        {
            "filters": [
                {
                    "expression_class": "BOUND_COMPARISON",
                    "type": "COMPARE_GREATERTHAN",
                    "left": {
                        "expression_class": "BOUND_COLUMN_REF",
                        "type": "BOUND_COLUMN_REF",
                        "binding": {"table_index": 0, "column_index": 0},
                    },
                    "right": {
                        "expression_class": "BOUND_CONSTANT",
                        "type": "VALUE_CONSTANT",
                        "value": {"type": {"id": "BIGINT"}, "is_null": False, "value": 2},
                    },
                }
            ],
            "column_binding_names_by_index": ["id"],
        }
    ).encode()
    filtered = table.scan(
        Context.background(), ScanOptions(columns=["name"], filter=id_above_2)
    ).read_all()
    assert filtered.sort_by("rowid").select(["rowid", "name"]).to_pylist() == [
        {"rowid": 4, "name": "n3"},
        {"rowid": 9, "name": "new"},
        {"rowid": 10, "name": "n9"},
        {"rowid": 11, "name": "n100"},
        {"rowid": 12, "name": "n101"},
        {"rowid": 13, "name": "n102"},
    ]
    assert filtered.column("id").null_count == filtered.num_rows  # not asked for: null
