"""A lake written by plain Spark (SQL only, no pyairport), served as it is: every table shape a
Spark team has, read, time-travelled and changed over the wire."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import msgpack
import pyarrow as pa
import pytest

from airport_contracts import flight_pb2
from pyairport.backends.capabilities import ALL_CAPABILITIES
from pyairport.backends.spark import commits
from pyairport.client import AirportClient, RemoteError
from pyairport.server import AirportServer, ServerConfig
from pyairport.transactions import MemoryTransactionManager
from pyairport.wire.ipc import read_message

from ..protocol.conftest import Running, assert_error_row, serving

pytestmark = pytest.mark.spark

# What marks a table pyairport made with a rowid column of its own (as the demo's are): a
# table plain Spark makes with one is such a table only with it.
OWN_ROWID_COLUMN = f"'pyairport.capabilities' = '{','.join(ALL_CAPABILITIES)}'"

# Each shape as plain Spark makes it: (name, CREATE TABLE tail, statements after it).
SHAPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "orders": (
        "(order_id BIGINT, customer STRING, amount DOUBLE) USING delta",
        (
            "INSERT INTO {t} VALUES (1, 'ann', 10.0), (2, 'bo', 20.0)",
            "INSERT INTO {t} VALUES (3, 'cy', 30.0)",
        ),
    ),
    "orders_by_region": (
        "(order_id BIGINT, amount DOUBLE, region STRING) USING delta PARTITIONED BY (region)",
        ("INSERT INTO {t} VALUES (1, 10.0, 'eu'), (2, 20.0, 'us'), (3, 30.0, 'eu')",),
    ),
    "tracked": (
        "(order_id BIGINT, amount DOUBLE) USING delta"
        " TBLPROPERTIES ('delta.enableRowTracking' = 'true')",
        (
            "INSERT INTO {t} VALUES (1, 10.0), (2, 20.0), (3, 30.0)",
            "INSERT INTO {t} VALUES (4, 40.0)",
        ),
    ),
    "renamed": (
        "(order_id BIGINT, amt DOUBLE) USING delta"
        " TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2',"
        " 'delta.minWriterVersion' = '5')",
        (
            "INSERT INTO {t} VALUES (1, 10.0), (2, 20.0)",
            "ALTER TABLE {t} RENAME COLUMN amt TO amount",
        ),
    ),
    "with_deletes": (
        "(order_id BIGINT, amount DOUBLE) USING delta"
        " TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
        (
            "INSERT INTO {t} SELECT id, id * 1.5 FROM range(1, 101)",
            "DELETE FROM {t} WHERE order_id % 10 = 0",
        ),
    ),
    "constrained": (
        "(order_id BIGINT NOT NULL, amount DOUBLE, note VARCHAR(5),"
        " cents BIGINT GENERATED ALWAYS AS (CAST(amount * 100 AS BIGINT)),"
        " milli BIGINT GENERATED ALWAYS AS (order_id * 1000),"
        " serial BIGINT GENERATED ALWAYS AS IDENTITY) USING delta"
        " TBLPROPERTIES ('delta.enableRowTracking' = 'true')",
        (
            "ALTER TABLE {t} ADD CONSTRAINT positive CHECK (amount > 0)",
            "INSERT INTO {t} (order_id, amount) VALUES (1, 1.5)",
        ),
    ),
}


def make_table(spark: Any, lake: Path, name: str, schema: str = "sales") -> str:
    """One table of SHAPES under lake/schema/name, made by plain Spark SQL; its SQL name."""
    ident = f"delta.`{lake / schema / name}`"
    create, after = SHAPES[name]
    spark.sql(f"CREATE TABLE {ident} {create}")
    for statement in after:
        spark.sql(statement.format(t=ident))
    return ident


def spark_rows(spark: Any, ident: str, clause: str = "") -> list[dict[str, Any]]:
    rows = spark.sql(f"SELECT * FROM {ident}{clause}").toArrow().to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def served_rows(table: pa.Table) -> list[dict[str, Any]]:
    rows = table.drop_columns([c for c in table.column_names if c == "rowid"]).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def test_doput_update_finds_row_tracked_rows_by_their_ids(
    spark_backend: Any, fresh_lake: Path
) -> None:
    """Spec 002's DoPut UPDATE names rows by row_ids; its row_ids_exist check asks the table
    for those rows only, and a row-tracked table finds them by the ids Delta gave them (and
    refuses an id no row has, changing nothing)."""
    spark = spark_backend.spark
    ident = make_table(spark, fresh_lake, "tracked")
    with serving_lake(spark, fresh_lake) as client:
        scanned = {
            r["order_id"]: r["rowid"]
            for r in client.scan("sales", "tracked", ["rowid", "order_id"]).read_all().to_pylist()
        }
        rows = pa.table({"order_id": pa.array([1, 4], pa.int64()), "amount": [11.0, 44.0]})
        answer = client.put_update("sales", "tracked", [scanned[1], scanned[4]], rows)
        assert answer.affected_rows == 2
        # rowids alone (a DoExchange UPDATE setting no column): found, nothing set, no commit
        log = fresh_lake / "sales" / "tracked" / "_delta_log"
        versions = sorted(log.glob("*.json"))
        assert client.update("sales", "tracked", pa.table({"rowid": [scanned[2]]})).total_changed
        assert sorted(log.glob("*.json")) == versions
        unknown = max(scanned.values()) + 1_000
        with pytest.raises(RemoteError) as refused:
            client.put_update("sales", "tracked", [scanned[2], unknown], rows)
        error = refused.value
        assert_error_row("row_not_found", {"row_id": unknown}, error.code, error.message)
    after = {
        r["order_id"]: (r["rowid"], r["amount"])
        for r in spark.sql(f"SELECT _metadata.row_id AS rowid, * FROM {ident}").collect()
    }
    assert after == {
        1: (scanned[1], 11.0),
        2: (scanned[2], 20.0),
        3: (scanned[3], 30.0),
        4: (scanned[4], 44.0),
    }


@contextlib.contextmanager
def _lake_running(spark: Any, lake: Path) -> Iterator[Running]:
    """pyairport serving the lake as `pyairport serve --backend spark --warehouse lake` does."""
    from pyairport.backends.spark import SparkBackend

    backend = SparkBackend(spark, lake)
    backend.serve_lake_functions()
    try:
        with serving(backend.catalog, MemoryTransactionManager()) as running:
            yield running
    finally:
        backend.close()


@contextlib.contextmanager
def lake_server(spark: Any, lake: Path) -> Iterator[str]:
    """The lake served (see _lake_running); yields its location."""
    with _lake_running(spark, lake) as running:
        yield running.server.location


@contextlib.contextmanager
def serving_lake(spark: Any, lake: Path) -> Iterator[AirportClient]:
    """The lake served (see _lake_running); yields a client of it."""
    with _lake_running(spark, lake) as running:
        yield running.client


def _files(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }


@pytest.fixture(scope="module")
def lake(spark_backend: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every shape, made by plain Spark; the tests that read it change nothing in it."""
    root = tmp_path_factory.mktemp("lake")
    for name in SHAPES:
        make_table(spark_backend.spark, root, name)
    return root


@pytest.fixture
def fresh_lake(tmp_path: Path) -> Path:
    """A lake of this test's own, for tests that change tables."""
    return tmp_path / "lake"


def test_serving_writes_nothing_into_the_lake(spark_backend: Any, lake: Path) -> None:
    before = _files(lake)
    with serving_lake(spark_backend.spark, lake) as client:
        schemas = {s.name: s for s in client.list_schemas()}
        for table in schemas["sales"].tables:
            client.scan("sales", table.name).read_all()
    assert _files(lake) == before
    assert sorted(schemas) == ["delta", "sales"]  # delta: the lake's functions, no tables
    assert schemas["delta"].tables == ()
    assert sorted(t.name for t in schemas["sales"].tables) == sorted(SHAPES)


def test_each_table_scans_exactly_as_spark_reads_it(spark_backend: Any, lake: Path) -> None:
    spark = spark_backend.spark
    with serving_lake(spark, lake) as client:
        tables = {t.name: t for t in client.list_tables("sales")}
        for name in SHAPES:
            ident = f"delta.`{lake / 'sales' / name}`"
            assert served_rows(client.scan("sales", name).read_all()) == spark_rows(spark, ident)
            # a projection reads only what it asks for, whatever the rowid's place
            (column,) = [c for c in tables[name].arrow_schema.names if c != "rowid"][-1:]
            assert sorted(
                client.scan("sales", name, [column]).read_all().column(column).to_pylist(),
                key=str,
            ) == sorted((r[column] for r in spark_rows(spark, ident)), key=str)
        # rowids: row tracking's, or none
        assert tables["tracked"].rowid_column == "rowid"
        assert tables["orders"].rowid_column is None
        assert tables["renamed"].arrow_schema.names == ["order_id", "amount"]
        tracked = client.scan("sales", "tracked", ["rowid", "order_id"]).read_all()
        expected = spark.sql(
            f"SELECT _metadata.row_id AS rowid, order_id FROM delta.`{lake / 'sales' / 'tracked'}`"
        ).toArrow()
        assert sorted(tracked.to_pylist(), key=lambda r: r["rowid"]) == sorted(
            expected.to_pylist(), key=lambda r: r["rowid"]
        )


def test_partitioned_column_mapped_and_deletion_vector_tables_scan_without_spark(
    spark_backend: Any, lake: Path, spark_statements: list[str]
) -> None:
    """delta-rs reads these shapes itself: whole, projected, filtered and at a version of the
    same shape, no Spark SQL and no Spark job runs, and the rows are Spark's."""
    from pyairport.filters import Compare

    spark = spark_backend.spark
    expected = {
        name: spark_rows(spark, f"delta.`{lake / 'sales' / name}`")
        for name in ("orders_by_region", "renamed", "with_deletes")
    }
    then = spark_rows(spark, f"delta.`{lake / 'sales' / 'with_deletes'}`", " VERSION AS OF 1")
    with lake_server(spark, lake) as location:
        client = AirportClient(location)
        try:
            client.list_schemas()  # opening the tables reads their layouts (Spark's part)
            tracker = spark.sparkContext.statusTracker()
            jobs = set(tracker.getJobIdsForGroup())
            spark_statements.clear()
            scanned = {name: client.scan("sales", name).read_all() for name in expected}
            above_50 = Compare("order_id", ">", 50)
            filtered = client.scan(
                "sales", "with_deletes", ["order_id"], filter=above_50
            ).read_all()
            at_1 = _scan_at(client, ["sales", "with_deletes"], "1")
            assert spark_statements == [] and set(tracker.getJobIdsForGroup()) == jobs
        finally:
            client.close()
    for name, rows in expected.items():
        assert served_rows(scanned[name]) == rows, name
    assert sorted(filtered.column("order_id").to_pylist()) == sorted(
        r["order_id"] for r in expected["with_deletes"] if r["order_id"] > 50
    )
    assert served_rows(at_1) == then and len(then) == 100  # before the DELETE


def test_a_stored_value_its_column_cannot_hold_fails_the_scan_naming_the_column(
    spark_backend: Any, tmp_path: Path
) -> None:
    """A DECIMAL(18, 0) column whose file holds a 19-digit value (delta-rs writes what it is
    handed): the rows are never changed, a scan of that column fails naming it, and the
    table's other columns still read."""
    import decimal

    from deltalake import write_deltalake

    wide = [decimal.Decimal(1), decimal.Decimal(10**18 + 7), decimal.Decimal(-2)]
    values = pa.array(wide, pa.decimal128(38, 0)).cast(pa.decimal128(18, 0), safe=False)
    write_deltalake(str(tmp_path / "s" / "t"), pa.table({"id": [1, 2, 3], "v": values}))
    before = _files(tmp_path)
    with serving_lake(spark_backend.spark, tmp_path) as client:
        ids = client.scan("s", "t", ["id"]).read_all()
        for columns in (["v"], None):
            with pytest.raises(RemoteError) as failed:
                client.scan("s", "t", columns).read_all()
            error = "column v: Decimal value does not fit in precision 18"
            assert_error_row(
                "scan_failed", {"error": error}, failed.value.code, failed.value.message
            )
    assert sorted(ids.column("id").to_pylist()) == [1, 2, 3]
    assert _files(tmp_path) == before


def test_returning_reads_the_rows_from_the_files_deletion_vectors_kept(
    spark_backend: Any, fresh_lake: Path
) -> None:
    """RETURNING's rows are read from the latest version's files (a Spark query per batch of
    DuckDB's was 14 times the statement's time): across files, in several batches, without
    the rows a deletion vector already took out, each row as Spark reads it."""
    spark = spark_backend.spark
    ident = f"delta.`{fresh_lake / 'sales' / 'dv'}`"
    spark.sql(
        f"CREATE TABLE {ident} (rowid BIGINT, name STRING, amount DECIMAL(10, 2)) USING delta"
        f" TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', {OWN_ROWID_COLUMN})"
    )
    for first in (0, 100, 200):  # a file each
        spark.sql(
            f"INSERT INTO {ident} SELECT id, concat('n', id), id / 4 FROM range({first},"
            f" {first + 100})"
        )
    spark.sql(f"DELETE FROM {ident} WHERE rowid % 10 = 3")  # deletion vectors, no rewrite
    asked = list(range(50, 250, 3))
    live = [i for i in asked if i % 10 != 3]
    with serving_lake(spark, fresh_lake) as client:
        answer = client.delete("sales", "dv", asked, returning=True, batch_rows=16)
    returned = sorted(answer.returning.to_pylist(), key=lambda r: r["name"])
    expected = spark.createDataFrame([(i,) for i in live], "rowid BIGINT")
    before = spark.sql(f"SELECT * FROM {ident} VERSION AS OF 4").join(expected, "rowid")
    assert returned == sorted(
        ({"name": r["name"], "amount": r["amount"]} for r in before.collect()),
        key=lambda r: r["name"],
    )
    left = {r["rowid"] for r in spark.sql(f"SELECT rowid FROM {ident}").collect()}
    assert left == {i for i in range(300) if i % 10 != 3} - set(live)


def test_returning_a_stored_value_its_column_cannot_hold_refuses_the_statement(
    spark_backend: Any, tmp_path: Path
) -> None:
    """UPDATE and DELETE with RETURNING read the rows they change before committing: one
    whose DECIMAL(18, 0) value has 19 digits (delta-rs writes what it is handed) refuses the
    statement naming the column, and nothing is written; without RETURNING the same statement
    changes the row, never reading the value (kept exactly as stored)."""
    import decimal

    from deltalake import DeltaTable, write_deltalake

    wide = [decimal.Decimal(1), decimal.Decimal(10**18 + 7), decimal.Decimal(-2)]
    values = pa.array(wide, pa.decimal128(38, 0)).cast(pa.decimal128(18, 0), safe=False)
    where = tmp_path / "s" / "t"
    write_deltalake(str(where), pa.table({"rowid": [1, 2, 3], "id": [1, 2, 3], "v": values}))
    # pyairport's own rowid column (delta-rs takes no property of another name)
    spark_backend.spark.sql(f"ALTER TABLE delta.`{where}` SET TBLPROPERTIES ({OWN_ROWID_COLUMN})")
    before = _files(tmp_path)
    error = "column v: Decimal value does not fit in precision 18"
    new_id = pa.table({"id": [20], "rowid": pa.array([2], pa.int64())})
    with serving_lake(spark_backend.spark, tmp_path) as client:
        for operation, statement in (
            ("UPDATE", lambda: client.update("s", "t", new_id, returning=True)),
            ("DELETE", lambda: client.delete("s", "t", [2], returning=True)),
        ):
            with pytest.raises(RemoteError) as refused:
                statement()
            assert_error_row(
                "operation_failed",
                {"operation": operation, "error": error},
                refused.value.code,
                refused.value.message,
            )
        assert _files(tmp_path) == before
        fine = client.update(
            "s", "t", pa.table({"id": [10], "rowid": pa.array([1], pa.int64())}), returning=True
        )
        assert fine.returning.column("id").to_pylist() == [10]  # the statement's columns
        assert client.update("s", "t", new_id).total_changed == 1
    stored = DeltaTable(str(where)).to_pyarrow_table().sort_by("rowid")
    assert stored.column("id").to_pylist() == [10, 20, 3]
    assert stored.column("v").cast(pa.decimal128(38, 0)).to_pylist() == wide


def _flight_info_at(client: AirportClient, path: list[str], version: str) -> pa.Schema:
    descriptor = flight_pb2.FlightDescriptor(type=flight_pb2.FlightDescriptor.PATH, path=path)
    body = msgpack.packb(
        {"descriptor": descriptor.SerializeToString(), "at_unit": "VERSION", "at_value": version}
    )
    (answer,) = client.action("flight_info", body)
    info = flight_pb2.FlightInfo()
    info.ParseFromString(answer)
    return pa.ipc.read_schema(pa.py_buffer(info.schema))


def _scan_at(client: AirportClient, path: list[str], version: str) -> pa.Table:
    """endpoints with DuckDB's at_unit/at_value, then DoGet, as the extension calls them."""
    descriptor = flight_pb2.FlightDescriptor(type=flight_pb2.FlightDescriptor.PATH, path=path)
    request = {
        "descriptor": descriptor.SerializeToString(),
        "parameters": {
            "column_ids": [],
            "json_filters": "",
            "at_unit": "VERSION",
            "at_value": version,
        },
    }
    (answer,) = client.action("endpoints", msgpack.packb(request))
    endpoint = flight_pb2.FlightEndpoint()
    endpoint.ParseFromString(msgpack.unpackb(answer, raw=True)[0])
    schema, batches = None, []
    for data in client.stub.DoGet(endpoint.ticket):
        message = read_message(data)
        if schema is None:
            schema = pa.ipc.read_schema(message)
        else:
            batches.append(pa.ipc.read_record_batch(message, schema))
    return pa.Table.from_batches(batches, schema=schema)


def test_time_travel_equals_sparks_version_as_of(spark_backend: Any, lake: Path) -> None:
    spark = spark_backend.spark
    with serving_lake(spark, lake) as client:
        for name in ("orders", "renamed", "tracked", "with_deletes", "orders_by_region"):
            ident = f"delta.`{lake / 'sales' / name}`"
            for version in ("0", "1"):
                schema = _flight_info_at(client, ["sales", name], version)
                then = spark.sql(f"SELECT * FROM {ident} VERSION AS OF {version}")
                assert [n for n in schema.names if n != "rowid"] == then.columns, (name, version)
                scanned = _scan_at(client, ["sales", name], version)
                assert served_rows(scanned) == spark_rows(
                    spark, ident, f" VERSION AS OF {version}"
                ), (name, version)
        # a version the table does not have is the client's error
        with pytest.raises(RemoteError) as missing:
            _flight_info_at(client, ["sales", "orders"], "99")
        assert missing.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert missing.value.message.startswith("invalid time point: ")
        assert "\n" not in missing.value.message and " at org." not in missing.value.message
        with pytest.raises(RemoteError) as bad:
            _flight_info_at(client, ["sales", "orders"], "one")
        assert_error_row(
            "time_point_invalid",
            {"error": "version must be a non-negative integer, got 'one'"},
            bad.value.code,
            bad.value.message,
        )


def test_a_version_vacuum_took_the_files_of_is_the_clients_error_before_a_row_is_sent(
    spark_backend: Any, fresh_lake: Path
) -> None:
    """VACUUM removes the files of versions past the table's retention; time travel to such
    a version failed half-way through DoGet, INTERNAL. Now flight_info and endpoints say so,
    the contract's time point error; the versions whose files are kept still read."""
    spark = spark_backend.spark
    ident = f"delta.`{fresh_lake / 'sales' / 'swept'}`"
    spark.sql(f"CREATE TABLE {ident} (id BIGINT, v STRING) USING delta")
    spark.sql(f"INSERT INTO {ident} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT OVERWRITE {ident} VALUES (3, 'c')")
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        spark.sql(f"VACUUM {ident} RETAIN 0 HOURS")
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    spark.sql(f"CREATE TABLE delta.`{fresh_lake / 'sales' / 'copy'}` SHALLOW CLONE {ident}")
    gone = "version 1 can no longer be read: VACUUM removed its data files"
    with serving_lake(spark, fresh_lake) as client:
        for ask in (_flight_info_at, _scan_at):
            with pytest.raises(RemoteError) as swept:
                ask(client, ["sales", "swept"], "1")
            assert_error_row(
                "time_point_invalid", {"error": gone}, swept.value.code, swept.value.message
            )
        assert served_rows(_scan_at(client, ["sales", "swept"], "2")) == [{"id": 3, "v": "c"}]
        assert _scan_at(client, ["sales", "swept"], "0").num_rows == 0
        # a shallow clone's files are the source's, named by URI in its log: they are there
        assert served_rows(_scan_at(client, ["sales", "copy"], "0")) == [{"id": 3, "v": "c"}]


def test_inserts_land_where_spark_sees_them(spark_backend: Any, fresh_lake: Path) -> None:
    spark = spark_backend.spark
    for name in ("orders", "orders_by_region", "renamed", "tracked", "with_deletes"):
        make_table(spark, fresh_lake, name)
    with serving_lake(spark, fresh_lake) as client:
        client.insert(
            "sales", "orders", pa.table({"order_id": [9], "customer": ["zed"], "amount": [9.5]})
        )
        client.insert(
            "sales",
            "orders_by_region",
            pa.table({"order_id": [9, 10], "amount": [1.0, 2.0], "region": ["ap", "eu"]}),
        )
        client.insert("sales", "renamed", pa.table({"order_id": [9], "amount": [9.5]}))
        answer = client.insert(
            "sales", "tracked", pa.table({"order_id": [9], "amount": [9.5]}), returning=True
        )
        assert answer.returning.to_pylist() == [{"order_id": 9, "amount": 9.5}]
        client.insert("sales", "with_deletes", pa.table({"order_id": [1000], "amount": [1.0]}))
    sales = fresh_lake / "sales"
    assert (
        spark.sql(f"SELECT customer FROM delta.`{sales / 'orders'}` WHERE order_id = 9").first()[0]
        == "zed"
    )
    by_region = f"delta.`{sales / 'orders_by_region'}`"
    assert spark.sql(f"SELECT count(*) FROM {by_region} WHERE region = 'ap'").first()[0] == 1
    assert (sales / "orders_by_region" / "region=ap").is_dir()  # its partition's folder
    assert (
        spark.sql(f"SELECT amount FROM delta.`{sales / 'renamed'}` WHERE order_id = 9").first()[0]
        == 9.5
    )
    assert spark.sql(f"SELECT count(*) FROM delta.`{sales / 'tracked'}`").first()[0] == 5
    assert spark.sql(f"SELECT count(*) FROM delta.`{sales / 'with_deletes'}`").first()[0] == 91


def test_update_and_delete_by_row_tracking_rowids(spark_backend: Any, fresh_lake: Path) -> None:
    spark = spark_backend.spark
    ident = make_table(spark, fresh_lake, "tracked")
    before = {
        r["order_id"]: r["rowid"]
        for r in spark.sql(f"SELECT _metadata.row_id AS rowid, order_id FROM {ident}").collect()
    }
    with serving_lake(spark, fresh_lake) as client:
        scanned = {
            r["order_id"]: r["rowid"]
            for r in client.scan("sales", "tracked", ["rowid", "order_id"]).read_all().to_pylist()
        }
        assert scanned == before
        client.update(
            "sales",
            "tracked",
            pa.table({"amount": [99.0], "rowid": pa.array([scanned[2]], pa.int64())}),
        )
        answer = client.delete("sales", "tracked", [scanned[3]], returning=True)
        assert answer.returning.to_pylist() == [{"order_id": 3, "amount": 30.0}]
        assert answer.total_changed == 1
    after = {
        r["order_id"]: (r["rowid"], r["amount"])
        for r in spark.sql(f"SELECT _metadata.row_id AS rowid, * FROM {ident}").collect()
    }
    assert after == {
        1: (before[1], 10.0),
        2: (before[2], 99.0),  # its row id kept
        4: (before[4], 40.0),
    }


@pytest.mark.parametrize(
    ("inline_keys", "counted_by_spark"),
    [(None, False), (0, False), (None, True), (0, True)],
    ids=["keys-listed", "keys-joined", "keys-listed-spark-count", "keys-joined-spark-count"],
)
def test_row_tracked_changes_by_the_first_column_or_by_every_column(
    spark_backend: Any,
    fresh_lake: Path,
    inline_keys: int | None,
    counted_by_spark: bool,
    monkeypatch: pytest.MonkeyPatch,
    spark_statements: list[str],
) -> None:
    """The first column names the rows to change only where no other row holds its value
    (and, for an UPDATE, no two rows to change share it); else every column does. A few
    values are listed (a DELETE is Spark's own DELETE … IN), more are joined (a MERGE).
    The rows holding the values are counted in the version's files, or by Spark where the
    column's equality is not Arrow's (floating point, nested) or the files are not read."""
    from pyairport.backends.spark import commits, row_values

    spark = spark_backend.spark
    ident = make_table(spark, fresh_lake, "tracked")
    if inline_keys is not None:  # None: the server's own limit
        monkeypatch.setattr(row_values, "INLINE_KEYS", inline_keys)
    if counted_by_spark:
        monkeypatch.setattr(commits, "exactly_equal", lambda data_type, features: False)
    # order 5 has three lines, order 6 two; a null order_id once
    spark.sql(
        f"INSERT INTO {ident} VALUES (5, 1.0), (5, 2.0), (5, 3.0), (6, 1.0), (6, 2.0), (NULL, 7.0)"
    )
    with serving_lake(spark, fresh_lake) as client:
        rows = client.scan("sales", "tracked", ["rowid", "order_id", "amount"]).read_all()
        rowid = {(r["order_id"], r["amount"]): r["rowid"] for r in rows.to_pylist()}
        # one line of order 5: its order_id is held by two other rows
        assert client.delete("sales", "tracked", [rowid[(5, 2.0)]]).total_changed == 1
        # every line of order 6: the order_id alone names them, each once
        both = [rowid[(6, 1.0)], rowid[(6, 2.0)]]
        spark_statements.clear()
        assert client.delete("sales", "tracked", both).total_changed == 2
        statements = [query.split(" ", 1)[0] for query in spark_statements]
        assert ("DELETE" in statements, "MERGE" in statements) == (
            (False, True) if inline_keys == 0 else (True, False)
        )
        assert ("SELECT" in statements) == counted_by_spark
        # two rows of order 5 sharing the order_id take one value each
        changed = client.update(
            "sales",
            "tracked",
            pa.table(
                {
                    "amount": [100.0, 300.0],
                    "rowid": pa.array([rowid[(5, 1.0)], rowid[(5, 3.0)]], pa.int64()),
                }
            ),
        )
        assert changed.total_changed == 2
        # the row whose first column is null
        nulled = pa.table({"amount": [70.0], "rowid": pa.array([rowid[(None, 7.0)]], pa.int64())})
        assert client.update("sales", "tracked", nulled).total_changed == 1
        assert (
            client.update(
                "sales", "tracked", pa.table({"amount": [44.0], "rowid": [rowid[(4, 40.0)]]})
            ).total_changed
            == 1
        )
    after = {
        (r["order_id"], r["amount"]): r["rowid"]
        for r in spark.sql(f"SELECT _metadata.row_id AS rowid, * FROM {ident}").collect()
    }
    assert after == {
        (1, 10.0): rowid[(1, 10.0)],
        (2, 20.0): rowid[(2, 20.0)],
        (3, 30.0): rowid[(3, 30.0)],
        (4, 44.0): rowid[(4, 40.0)],
        (5, 100.0): rowid[(5, 1.0)],
        (5, 300.0): rowid[(5, 3.0)],
        (None, 70.0): rowid[(None, 7.0)],
    }


@pytest.mark.parametrize("reads_files", [True, False], ids=["files", "spark"])
def test_row_tracked_rows_told_apart_by_their_leading_columns_are_matched_by_them(
    spark_backend: Any,
    fresh_lake: Path,
    spark_statements: list[str],
    monkeypatch: pytest.MonkeyPatch,
    reads_files: bool,
) -> None:
    """Where the first column repeats, the fewest leading columns that tell the rows to
    change apart (and no other row holds) match them, not every column: counted by Spark
    for some rows, not at all when every row of the version changes (deletion vectors
    drop rows from the count), and then without the middle columns the others tell them
    apart without. The columns are read from the version's files as the search
    reaches them, or by one Spark read of them all where the server does not read the
    files. Where another row holds them too, every column matches."""
    from pyairport.backends.spark.table import SparkTable

    spark = spark_backend.spark
    if not reads_files:
        monkeypatch.setattr(SparkTable, "_files_at", lambda self, version: None)
    read: list[str] = []  # the columns the rows to change were read with
    reading = commits.DeltaChanges._tracked_rows

    def tracked_rows(self: Any, ids: Any, version: int, columns: list[str], files: Any) -> Any:
        read.extend(columns)
        return reading(self, ids, version, columns, files)

    monkeypatch.setattr(commits.DeltaChanges, "_tracked_rows", tracked_rows)
    ident = f"delta.`{fresh_lake / 'sales' / 'lines'}`"
    spark.sql(
        f"CREATE TABLE {ident} (order_id INT, line INT, note STRING, amount DOUBLE) USING delta"
        " TBLPROPERTIES ('delta.enableRowTracking' = 'true',"
        " 'delta.enableDeletionVectors' = 'true')"
    )
    spark.sql(
        f"INSERT INTO {ident} VALUES (1, 1, 'a', 1.0), (1, 2, 'b', 2.0), (2, 1, 'c', 3.0),"
        " (2, 1, 'd', 4.0), (3, 1, 'e', 5.0), (9, 9, 'gone', 9.0)"
    )
    spark.sql(f"DELETE FROM {ident} WHERE order_id = 9")  # a deletion vector
    with serving_lake(spark, fresh_lake) as client:
        rows = client.scan("sales", "lines", ["rowid", "note"]).read_all().to_pylist()
        rowid = {r["note"]: r["rowid"] for r in rows}

        def update(notes: list[str], amount: float, step: float = 0.0) -> list[str]:
            """Each row its own value where step is not 0 (rows set to one value that their
            first column's values name are Spark's own UPDATE: test_whole_table.py)."""
            spark_statements.clear()
            read.clear()
            ids = pa.array([rowid[n] for n in notes], pa.int64())
            amounts = pa.array([amount + step * i for i in range(len(notes))], pa.float64())
            changed = client.update("sales", "lines", pa.table({"amount": amounts, "rowid": ids}))
            assert changed.total_changed == len(notes)
            return list(spark_statements)

        def merge_on(statements: list[str]) -> str:
            (merge,) = [q for q in statements if q.startswith("MERGE")]
            return merge.split(" ON ", 1)[1].split(" WHEN ", 1)[0]

        # order 1's two lines: order_id and line tell them apart, a count shows no other
        # row holds theirs
        told = update(["a", "b"], 10.0, step=1.0)
        assert "`line`" in merge_on(told) and "`note`" not in merge_on(told)
        assert any(q.startswith("SELECT count(*)") for q in told)
        if reads_files:
            assert sorted(read) == ["line", "order_id"]  # each once, no other column
        else:
            assert sorted(read) == ["amount", "line", "note", "order_id"]
        # order 2's line 1 is two rows: every column tells the one asked for apart
        one = update(["c"], 30.0)
        assert "`note`" in merge_on(one) and "`amount`" in merge_on(one)
        # every row: (order_id, line) does not tell order 2's apart, all three do; no
        # count, and then (order_id, note) without line
        every = update(["a", "b", "c", "d", "e"], 50.0, step=1.0)
        assert "`note`" in merge_on(every) and "`amount`" not in merge_on(every)
        if reads_files:
            assert not any(q.startswith("SELECT count(*)") for q in every)
            assert sorted(read) == ["line", "note", "order_id"]
            assert "`order_id`" in merge_on(every) and "`line`" not in merge_on(every)
        else:  # the version's rows are not counted from its files: the prefix whole
            assert "`line`" in merge_on(every)
        deleted = client.delete("sales", "lines", [rowid["a"], rowid["c"]])
        assert deleted.total_changed == 2
    after = spark.sql(f"SELECT _metadata.row_id AS rowid, note, amount FROM {ident}").collect()
    assert sorted(after) == sorted(
        [(rowid["b"], "b", 51.0), (rowid["d"], "d", 53.0), (rowid["e"], "e", 54.0)]
    )


def test_row_tracked_update_lists_its_keys_only_where_delta_skips_files_by_them(
    spark_backend: Any, fresh_lake: Path, spark_statements: list[str]
) -> None:
    """An UPDATE's MERGE on a row-tracked table carries its key values as a literal list
    only where the log's statistics show that Delta skips most of the table's files by it:
    keys within one file's range are listed, keys in every file are not (a list that skips
    nothing costs the MERGE). Either way exactly the rows asked for change."""
    spark = spark_backend.spark
    ident = make_table(spark, fresh_lake, "tracked")
    for first in (100, 200, 300, 400):  # a file each, ranges apart
        spark.sql(f"INSERT INTO {ident} SELECT id, 1.0 FROM range({first}, {first + 100}, 1, 1)")
    spark_statements.clear()
    with serving_lake(spark, fresh_lake) as client:
        rowid = {
            r["order_id"]: r["rowid"]
            for r in client.scan("sales", "tracked", ["rowid", "order_id"]).read_all().to_pylist()
        }

        def update(keys: list[int], amount: float) -> int:
            """Each row its own value (rows set to one value are Spark's own UPDATE)."""
            ids = pa.array([rowid[k] for k in keys], pa.int64())
            amounts = pa.array([amount + i for i in range(len(keys))], pa.float64())
            return client.update(
                "sales", "tracked", pa.table({"amount": amounts, "rowid": ids})
            ).total_changed

        assert update([210, 220, 230], 2.0) == 3  # one file of five
        assert update([150, 250, 350, 450], 3.0) == 4  # every file of 100 rows
    merges = [query for query in spark_statements if query.startswith("MERGE")]
    assert len(merges) == 2
    assert " IN (" in merges[0] and " IN (" not in merges[1]
    changed = {
        r["order_id"]: r["amount"]
        for r in spark.sql(
            f"SELECT * FROM {ident} WHERE amount > 1.0 AND order_id >= 100"
        ).collect()
    }
    assert changed == {210: 2.0, 220: 3.0, 230: 4.0, 150: 3.0, 250: 4.0, 350: 5.0, 450: 6.0}


def test_rows_no_column_tells_apart_are_refused_not_guessed(
    spark_backend: Any, fresh_lake: Path
) -> None:
    spark = spark_backend.spark
    ident = make_table(spark, fresh_lake, "tracked")
    spark.sql(f"INSERT INTO {ident} VALUES (1, 10.0)")  # the same values as row 1
    with serving_lake(spark, fresh_lake) as client:
        rows = client.scan("sales", "tracked", ["rowid", "order_id"]).read_all().to_pylist()
        twin = next(r["rowid"] for r in rows if r["order_id"] == 1)
        with pytest.raises(RemoteError) as refused:
            client.delete("sales", "tracked", [twin])
        assert "cannot be changed one by one" in refused.value.message
    assert spark.sql(f"SELECT count(*) FROM {ident}").first()[0] == 5


def test_a_table_without_rowids_serves_reads_and_inserts_and_refuses_the_rest(
    spark_backend: Any, lake: Path
) -> None:
    before = _files(lake)
    with serving_lake(spark_backend.spark, lake) as client:
        with pytest.raises(RemoteError) as update:
            client.update(
                "sales", "orders", pa.table({"amount": [1.0], "rowid": pa.array([1], pa.int64())})
            )
        assert_error_row(
            "update_not_supported", {"table": "orders"}, update.value.code, update.value.message
        )
        with pytest.raises(RemoteError) as delete:
            client.delete("sales", "orders", [1])
        assert_error_row(
            "delete_not_supported", {"table": "orders"}, delete.value.code, delete.value.message
        )
    assert _files(lake) == before


def test_an_append_only_table_takes_inserts_and_refuses_the_rest(
    spark_backend: Any, fresh_lake: Path
) -> None:
    """`delta.appendOnly`: Delta refuses its UPDATE and DELETE (which failed INTERNAL at
    the commit); the table says so as any table without the capability, reading nothing."""
    spark = spark_backend.spark
    ident = f"delta.`{fresh_lake / 'sales' / 'ledger'}`"
    spark.sql(
        f"CREATE TABLE {ident} (entry BIGINT, amount DOUBLE) USING delta TBLPROPERTIES"
        " ('delta.appendOnly' = 'true', 'delta.enableRowTracking' = 'true')"
    )
    spark.sql(f"INSERT INTO {ident} VALUES (1, 1.5)")
    with serving_lake(spark, fresh_lake) as client:
        client.insert("sales", "ledger", pa.table({"entry": [2], "amount": [2.5]}))
        (rowid,) = client.scan("sales", "ledger", ["rowid"]).read_all().column(0).to_pylist()[:1]
        before = _files(fresh_lake)
        with pytest.raises(RemoteError) as update:
            client.update(
                "sales", "ledger", pa.table({"amount": [9.0], "rowid": pa.array([rowid])})
            )
        assert_error_row(
            "update_not_supported", {"table": "ledger"}, update.value.code, update.value.message
        )
        with pytest.raises(RemoteError) as delete:
            client.delete("sales", "ledger", [rowid])
        assert_error_row(
            "delete_not_supported", {"table": "ledger"}, delete.value.code, delete.value.message
        )
        assert _files(fresh_lake) == before
    assert sorted(spark.sql(f"SELECT * FROM {ident}").collect()) == [(1, 1.5), (2, 2.5)]


def test_enable_row_tracking_upgrades_every_table_without_rowids_but_those_it_cannot_serve(
    spark_backend: Any, fresh_lake: Path
) -> None:
    """`--enable-row-tracking` turns row tracking on where a table has no way to address
    rows, so that UPDATE and DELETE can; an append-only table takes neither, nor can a table
    with a column of its own named rowid address rows: their protocol is not upgraded for
    nothing."""
    from airport_contracts import Context
    from pyairport.backends.spark import SparkBackend

    spark = spark_backend.spark
    names = ("plain", "ledger", "export")
    tables = {name: f"delta.`{fresh_lake / 'sales' / name}`" for name in names}
    spark.sql(f"CREATE TABLE {tables['plain']} (entry BIGINT) USING delta")
    spark.sql(
        f"CREATE TABLE {tables['ledger']} (entry BIGINT) USING delta"
        " TBLPROPERTIES ('delta.appendOnly' = 'true')"
    )
    spark.sql(f"CREATE TABLE {tables['export']} (rowid BIGINT, entry BIGINT) USING delta")
    backend = SparkBackend(spark, fresh_lake, enable_row_tracking=True)
    try:
        ctx = Context.background()
        schema: Any = backend.catalog.schema(ctx, "sales")
        assert schema.table(ctx, "plain").layout.rowids == "tracked"
        assert schema.table(ctx, "ledger").layout.rowids is None
        assert schema.table(ctx, "export").layout.rowid_is_data
    finally:
        backend.close()
    tracking = {
        name: spark.sql(f"SHOW TBLPROPERTIES {ident} ('delta.enableRowTracking')").first()[1]
        for name, ident in tables.items()
    }
    assert tracking == {"plain": "true", "ledger": tracking["ledger"], "export": tracking["export"]}
    assert "true" not in (tracking["ledger"], tracking["export"])


def test_constraints_refuse_rows_and_change_nothing(spark_backend: Any, fresh_lake: Path) -> None:
    spark = spark_backend.spark
    ident = make_table(spark, fresh_lake, "constrained")
    with serving_lake(spark, fresh_lake) as client:
        # the generated column is Delta's to fill
        client.insert("sales", "constrained", pa.table({"order_id": [2], "amount": [2.25]}))
        with pytest.raises(RemoteError) as check:
            client.insert(
                "sales", "constrained", pa.table({"order_id": [3, 4], "amount": [1.0, -1.0]})
            )
        assert check.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert check.value.message.startswith("INSERT refused: ")
        assert check.value.message == (  # the constraint and the row's values that broke it
            "INSERT refused: [DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] CHECK constraint positive"
            " (amount > 0) violated by row with values: amount : -1.0"
        )
        assert "\n" not in check.value.message and "at org." not in check.value.message
        with pytest.raises(RemoteError) as not_null:
            client.insert(
                "sales",
                "constrained",
                pa.table({"order_id": pa.array([None], pa.int64()), "amount": [5.0]}),
            )
        assert not_null.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "order_id" in not_null.value.message
        rows = client.scan("sales", "constrained", ["rowid", "order_id"]).read_all().to_pylist()
        first = next(r["rowid"] for r in rows if r["order_id"] == 1)
        with pytest.raises(RemoteError) as update:
            client.update(
                "sales",
                "constrained",
                pa.table({"amount": [-5.0], "rowid": pa.array([first], pa.int64())}),
            )
        assert update.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert update.value.message.startswith("UPDATE refused: ")
        # a VARCHAR(n)'s length, which Arrow's strings do not carry: Delta checks it
        longer = pa.table({"order_id": [5, 6], "amount": [5.0, 6.0], "note": ["short", "longer"]})
        with pytest.raises(RemoteError) as too_long:
            client.insert("sales", "constrained", longer)
        assert too_long.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert too_long.value.message == (
            'INSERT refused: [DELTA_EXCEED_CHAR_VARCHAR_LIMIT] Value "longer" exceeds'
            " char/varchar type length limitation. Failed check: ((note IS NULL) OR"
            " (length(note) <= 5))"
        )
        with pytest.raises(RemoteError) as too_long:
            client.update(
                "sales",
                "constrained",
                pa.table({"note": ["longer"], "rowid": pa.array([first], pa.int64())}),
            )
        assert too_long.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "[DELTA_EXCEED_CHAR_VARCHAR_LIMIT]" in too_long.value.message
        # a generated column's arithmetic on the client's value
        with pytest.raises(RemoteError) as overflow:
            client.insert("sales", "constrained", pa.table({"order_id": [2**62], "amount": [1.0]}))
        assert overflow.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert overflow.value.message.startswith("INSERT refused: [ARITHMETIC_OVERFLOW] overflow")
    rows = spark_rows(spark, ident)
    serials = [r.pop("serial") for r in rows]  # Delta's identity values, one per row
    assert None not in serials and len(set(serials)) == 2
    assert rows == [
        {"order_id": 1, "amount": 1.5, "note": None, "cents": 150, "milli": 1000},
        {"order_id": 2, "amount": 2.25, "note": None, "cents": 225, "milli": 2000},
    ]


def test_two_servers_and_a_spark_job_insert_at_once(spark_backend: Any, fresh_lake: Path) -> None:
    """Row tracking's rowids stay distinct whoever writes; UPDATE and DELETE by them hit one
    row each."""
    spark = spark_backend.spark
    ident = make_table(spark, fresh_lake, "tracked")
    errors: list[BaseException] = []
    with serving_lake(spark, fresh_lake) as first, serving_lake(spark, fresh_lake) as second:

        def flight_writer(client: AirportClient, base: int) -> None:
            try:
                for batch in range(3):
                    start = base + batch * 1000
                    ids = pa.array(range(start, start + 1000), pa.int64())
                    client.insert(
                        "sales",
                        "tracked",
                        pa.table({"order_id": ids, "amount": pa.array([1.0] * 1000)}),
                    )
            except BaseException as exc:  # reported below
                errors.append(exc)

        def spark_writer() -> None:
            try:
                for batch in range(3):
                    start = 200_000 + batch * 1000
                    spark.sql(
                        f"INSERT INTO {ident} SELECT id, 2.0 FROM range({start}, {start + 1000})"
                    )
            except BaseException as exc:
                errors.append(exc)

        threads = [
            threading.Thread(target=flight_writer, args=(first, 10_000)),
            threading.Thread(target=flight_writer, args=(second, 100_000)),
            threading.Thread(target=spark_writer),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        total, distinct = spark.sql(
            f"SELECT count(*), count(DISTINCT _metadata.row_id) FROM {ident}"
        ).first()
        assert total == distinct == 4 + 9000
        rows = first.scan("sales", "tracked", ["rowid", "order_id"]).read_all().to_pylist()
        by_order = {r["order_id"]: r["rowid"] for r in rows}
        second.update(
            "sales",
            "tracked",
            pa.table({"amount": [7.0], "rowid": pa.array([by_order[100_500]], pa.int64())}),
        )
        assert first.delete("sales", "tracked", [by_order[200_500]]).total_changed == 1
    assert spark.sql(f"SELECT count(*) FROM {ident} WHERE amount = 7.0").first()[0] == 1
    assert spark.sql(f"SELECT count(*) FROM {ident}").first()[0] == 4 + 9000 - 1


_METASTORE_SPARK = """
import sys
from pathlib import Path
from pyairport.backends.spark.session import spark_session

root, jars = Path(sys.argv[1]), Path(sys.argv[2])
conf = {key: value for key, _, value in (a.partition("=") for a in sys.argv[3:])}
spark = spark_session(master="local[1]", warehouse=None, jars_dir=jars, conf=conf)
spark.sql("CREATE DATABASE sales")
spark.sql("CREATE TABLE sales.orders (order_id BIGINT, amount DOUBLE) USING delta"
          " TBLPROPERTIES ('delta.enableRowTracking' = 'true')")
spark.sql("INSERT INTO sales.orders VALUES (1, 10.0), (2, 20.0)")
spark.sql("CREATE TABLE sales.notes (line STRING) USING parquet")
spark.stop()
"""


def test_a_metastore_registered_table(tmp_path: Path) -> None:
    """`--spark-catalog` with an embedded (Derby) Hive metastore: the catalog's Delta tables
    are served by their names, changed over the wire, and nothing else of it is touched."""
    import os
    import signal
    import subprocess
    import sys

    from ..conftest import JARS

    conf = [
        "spark.sql.catalogImplementation=hive",
        f"spark.sql.warehouse.dir={tmp_path / 'metastore-warehouse'}",
        "spark.hadoop.javax.jdo.option.ConnectionURL="
        f"jdbc:derby:;databaseName={tmp_path / 'metastore_db'};create=true",
    ]
    env = dict(os.environ, GRPC_VERBOSITY="NONE")
    made = subprocess.run(
        [sys.executable, "-c", _METASTORE_SPARK, str(tmp_path), str(JARS), *conf],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert made.returncode == 0, made.stderr[-2000:]
    command = [sys.executable, "-m", "pyairport", "serve", "--backend", "spark", "--port", "0"]
    command += ["--spark-catalog", "--spark-master", "local[1]", "--jars-dir", str(JARS)]
    command += ["--no-spark-warm-up"]  # its own test: test_spark_process.py
    for setting in conf:
        command += ["--spark-conf", setting]
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        cwd=tmp_path,
        env=env,
        start_new_session=True,
    )
    try:
        assert server.stdout is not None
        line = next((line for line in server.stdout if " serving on " in line), "")
        assert line, (tmp_path / "server.log").read_text()[-3000:]
        with AirportClient(line.split(" serving on ")[1].split()[0]) as client:
            (sales,) = [s for s in client.list_schemas() if s.name == "sales"]
            assert [t.name for t in sales.tables] == ["orders"]  # the parquet table is not served
            rows = client.scan("sales", "orders", ["rowid", "order_id"]).read_all().to_pylist()
            second = next(r["rowid"] for r in rows if r["order_id"] == 2)
            client.update(
                "sales",
                "orders",
                pa.table({"amount": [22.0], "rowid": pa.array([second], pa.int64())}),
            )
            client.insert("sales", "orders", pa.table({"order_id": [3], "amount": [30.0]}))
            read = client.scan("sales", "orders").read_all().select(["order_id", "amount"])
            assert sorted(read.to_pylist(), key=lambda r: r["order_id"]) == [
                {"order_id": 1, "amount": 10.0},
                {"order_id": 2, "amount": 22.0},
                {"order_id": 3, "amount": 30.0},
            ]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)
        log.close()


def test_two_servers_give_out_distinct_rowids_of_their_own_column(
    spark_backend: Any, tmp_path: Path
) -> None:
    """Two servers on one warehouse insert 3 × 1,000 rows each at once into a table with
    pyairport's rowid column (the demo's batch_schema.users): each statement checks, in its
    own Delta commit, that its rowids are free, and moves them past the table's when not."""
    from pyairport.backends.spark import SparkBackend
    from pyairport.demo import spark_demo_catalog

    spark = spark_backend.spark
    warehouse = tmp_path / "warehouse"
    backends = [SparkBackend(spark, warehouse) for _ in range(2)]
    catalogs = [spark_demo_catalog(backend) for backend in backends]
    servers = [
        AirportServer(catalog, MemoryTransactionManager(), ServerConfig(port=0)).start()
        for catalog in catalogs
    ]
    clients = [AirportClient(server.location) for server in servers]
    errors: list[BaseException] = []

    def writer(client: AirportClient, base: int) -> None:
        try:
            for batch in range(3):
                ids = pa.array(range(base + batch * 1000, base + batch * 1000 + 1000), pa.int64())
                names = pa.array([f"n{i}" for i in range(1000)])
                client.insert(
                    "batch_schema", "users", pa.table({"id": ids, "name": names, "email": names})
                )
        except BaseException as exc:  # reported below
            errors.append(exc)

    try:
        threads = [
            threading.Thread(target=writer, args=(client, base))
            for client, base in zip(clients, (10_000, 20_000), strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        ident = f"delta.`{warehouse / 'batch_schema' / 'users'}`"
        total, distinct = spark.sql(f"SELECT count(*), count(DISTINCT rowid) FROM {ident}").first()
        assert total == distinct == 6000
        rows = clients[1].scan("batch_schema", "users", ["rowid", "id"]).read_all().to_pylist()
        by_id = {r["id"]: r["rowid"] for r in rows}
        clients[0].update(
            "batch_schema",
            "users",
            pa.table({"name": ["changed"], "rowid": pa.array([by_id[20_500]], pa.int64())}),
        )
        assert clients[1].delete("batch_schema", "users", [by_id[10_500]]).total_changed == 1
        assert spark.sql(f"SELECT count(*) FROM {ident} WHERE name = 'changed'").first()[0] == 1
        assert spark.sql(f"SELECT count(*) FROM {ident}").first()[0] == 5999
    finally:
        for client, server, backend in zip(clients, servers, backends, strict=True):
            client.close()
            server.stop(0)
            backend.close()


def test_the_column_types_duckdb_sends(spark_backend: Any, fresh_lake: Path) -> None:
    """decimal, date, timestamp with and without zone, binary, struct, list and map: a table
    Spark wrote scans as Spark reads it, and rows a client inserts read back the same."""
    import datetime
    import decimal

    spark = spark_backend.spark
    ident = f"delta.`{fresh_lake / 'sales' / 'typed'}`"
    spark.sql(
        f"CREATE TABLE {ident} (id BIGINT, price DECIMAL(18,4), day DATE, at TIMESTAMP,"
        " local TIMESTAMP_NTZ, raw BINARY, point STRUCT<x: INT, y: STRING>,"
        " tags ARRAY<STRING>, attrs MAP<STRING, BIGINT>) USING delta"
        " TBLPROPERTIES ('delta.enableRowTracking' = 'true')"
    )
    spark.sql(
        f"INSERT INTO {ident} VALUES (1, 12.3456, DATE'2024-02-29',"
        " TIMESTAMP'2024-02-29 12:00:00+00:00', TIMESTAMP_NTZ'2024-02-29 12:00:00',"
        " X'00ff', named_struct('x', 1, 'y', 'a'), array('p', 'q'), map('k', 7))"
    )
    with serving_lake(spark, fresh_lake) as client:
        (table,) = client.list_tables("sales")
        assert served_rows(client.scan("sales", "typed").read_all()) == spark_rows(spark, ident)
        row = pa.table(
            {
                "id": pa.array([2], pa.int64()),
                "price": pa.array([decimal.Decimal("-0.0001")], pa.decimal128(18, 4)),
                "day": pa.array([datetime.date(1, 1, 1)], pa.date32()),
                "at": pa.array(
                    [datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)], pa.timestamp("us", "UTC")
                ),
                "local": pa.array([datetime.datetime(2030, 1, 1, 1)], pa.timestamp("us")),
                "raw": pa.array([b"\x00\x01"], pa.binary()),
                "point": pa.array([{"x": 2, "y": "b"}], table.arrow_schema.field("point").type),
                "tags": pa.array([["r"]], table.arrow_schema.field("tags").type),
                "attrs": pa.array([[("m", 9)]], table.arrow_schema.field("attrs").type),
            }
        )
        client.insert("sales", "typed", row)
        rows = client.scan("sales", "typed", ["rowid", "id"]).read_all().to_pylist()
        first = next(r["rowid"] for r in rows if r["id"] == 1)
        client.update(
            "sales",
            "typed",
            pa.table(
                {
                    "price": pa.array([decimal.Decimal("1.5")], pa.decimal128(18, 4)),
                    "rowid": pa.array([first], pa.int64()),
                }
            ),
        )
    read = {r["id"]: r for r in spark_rows(spark, ident)}
    assert read[2]["price"] == decimal.Decimal("-0.0001") and read[2]["day"] == datetime.date(
        1, 1, 1
    )
    assert read[2]["raw"] == b"\x00\x01" and read[2]["point"] == {"x": 2, "y": "b"}
    assert read[2]["tags"] == ["r"] and dict(read[2]["attrs"]) == {"m": 9}
    assert read[2]["local"] == datetime.datetime(2030, 1, 1, 1)
    assert read[1]["price"] == decimal.Decimal("1.5") and read[1]["tags"] == ["p", "q"]


def test_two_lakes_plain_spark_wrote_as_two_catalogs_to_a_pyarrow_client(
    spark_backend: Any, tmp_path: Path
) -> None:
    """`serve --catalog-name sales --add-catalog hr=…` over lakes plain Spark wrote, with a
    tokens file and a policy, read and written by pyarrow.flight (a client this project did not
    make) sending the airport-catalog header: each catalog's own tables, the refusals as the
    contract words them, nothing of Spark (no plan, path or stack) in any message."""
    import pyarrow.flight as flight

    from pyairport.access.identities import TokensFile, hash_token
    from pyairport.access.policy import Policy
    from pyairport.backends.spark import SparkBackend

    spark = spark_backend.spark
    sales_ident = make_table(spark, tmp_path / "sales", "orders")
    hr_ident = make_table(spark, tmp_path / "hr", "tracked", schema="people")
    tokens = tmp_path / "tokens"
    tokens.write_text(f"ann {hash_token('ann-token')}\n")
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[[grant]]\nidentity = "ann"\ncatalog = "sales"\nrights = ["read", "write"]\n'
    )
    backends = [SparkBackend(spark, tmp_path / "sales"), SparkBackend(spark, tmp_path / "hr")]
    server = AirportServer(
        None,
        None,
        ServerConfig(port=0),
        authenticator=TokensFile(tokens),
        policy=Policy.from_file(policy),
    )
    for name, backend in zip(("sales", "hr"), backends, strict=True):
        backend.catalog.rename(name)
        server.add_catalog(backend.catalog, MemoryTransactionManager())
    server.start()
    client = flight.connect(server.location)

    def options(catalog: str) -> flight.FlightCallOptions:
        return flight.FlightCallOptions(
            headers=[
                (b"authorization", b"Bearer ann-token"),
                (b"airport-catalog", catalog.encode()),
            ]
        )

    try:
        path = flight.FlightDescriptor.for_path("sales", "orders")
        info = client.get_flight_info(path, options("sales"))
        read = client.do_get(info.endpoints[0].ticket, options("sales")).read_all()
        assert served_rows(read) == spark_rows(spark, sales_ident)
        rows = pa.table(
            {"order_id": pa.array([4], pa.int64()), "customer": ["di"], "amount": [40.0]}
        )
        dml = flight.FlightCallOptions(
            headers=[
                (b"authorization", b"Bearer ann-token"),
                (b"airport-catalog", b"sales"),
                (b"airport-operation", b"insert"),
                (b"airport-flight-path", b"sales/orders"),
                (b"return-chunks", b"0"),
            ]
        )
        writer, answers = client.do_exchange(path, dml)
        writer.begin(rows.schema)
        writer.write_table(rows)
        writer.done_writing()
        for _chunk in answers:  # the output schema, then the final metadata
            pass
        writer.close()
        assert [r["order_id"] for r in spark_rows(spark, sales_ident)] == [1, 2, 3, 4]
        with pytest.raises(flight.FlightError) as refused:
            client.get_flight_info(
                flight.FlightDescriptor.for_path("people", "tracked"), options("hr")
            )
        message = str(refused.value)
        assert 'catalog authorization failed: "ann" has no grant on catalog "hr"' in message
        for leak in ("Traceback", "org.apache", str(tmp_path), ".py"):
            assert leak not in message
        assert len(spark_rows(spark, hr_ident)) == 4  # hr untouched
    finally:
        client.close()
        server.stop(0)
        for backend in backends:
            backend.close()


# Spark writes a TIMESTAMP as Parquet's INT96; read through nanoseconds (delta-rs's and
# pyarrow's way) a value outside 1677–2262 wraps around: 9999-12-31 came back as 1816.
EDGE_TIMESTAMPS = (
    "0001-01-01 00:00:00.000001",
    "1500-06-01 12:00:00",
    "2024-02-29 12:00:00.000005",
    "9999-12-31 23:59:59.999999",
)


@pytest.mark.parametrize("tracked", [False, True], ids=["plain", "row-tracked"])
def test_timestamps_spark_wrote_read_exactly_from_year_1_to_9999(
    spark_backend: Any, fresh_lake: Path, monkeypatch: pytest.MonkeyPatch, tracked: bool
) -> None:
    """A "valid until 9999-12-31" and a year-1 TIMESTAMP, top-level and in a struct, read as
    Spark reads them: whole, split into parts, row-tracked; and filtered by them."""
    import datetime

    from pyairport.backends.scan_parts import SPLIT
    from pyairport.filters import Compare

    spark = spark_backend.spark
    ident = f"delta.`{fresh_lake / 'sales' / 'valid'}`"
    properties = " TBLPROPERTIES ('delta.enableRowTracking' = 'true')" if tracked else ""
    spark.sql(
        f"CREATE TABLE {ident} (id INT, until TIMESTAMP, local TIMESTAMP_NTZ,"
        f" span STRUCT<since: TIMESTAMP>) USING delta{properties}"
    )
    values = ", ".join(
        f"({i}, TIMESTAMP '{t}Z', TIMESTAMP_NTZ '{t}', named_struct('since', TIMESTAMP '{t}Z'))"
        for i, t in enumerate(EDGE_TIMESTAMPS)
    )
    spark.sql(f"INSERT INTO {ident} SELECT /*+ REPARTITION(2) */ * FROM VALUES {values}")
    expected = spark_rows(spark, ident)
    assert [r["until"].year for r in sorted(expected, key=lambda r: r["id"])] == [
        1,
        1500,
        2024,
        9999,
    ]
    with serving_lake(spark, fresh_lake) as client:
        assert served_rows(client.scan("sales", "valid").read_all()) == expected
        for predicate, ids in (
            (Compare("until", ">", datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)), [2, 3]),
            (Compare("local", "<", datetime.datetime(1500, 6, 1, 12)), [0]),
        ):
            kept = client.scan("sales", "valid", ["id"], predicate).read_all()
            assert sorted(kept.column("id").to_pylist()) == ids, predicate
        monkeypatch.setattr(SPLIT, "max_parts", 2)
        monkeypatch.setattr(SPLIT, "rows_per_part", 1)
        assert served_rows(client.scan("sales", "valid").read_all()) == expected


def test_delta_rs_reads_timestamps_only_where_the_log_bounds_them_within_its_years() -> None:
    """Which versions delta-rs still reads (the faster reader) and which go to pyarrow."""
    import datetime

    from pyairport.backends.spark.delta_stats import misread_timestamps

    utc = datetime.UTC
    zoned = pa.timestamp("us", tz="UTC")
    schema = pa.schema([("id", pa.int64()), ("at", zoned), ("wall", pa.timestamp("us"))])

    def files(low: datetime.datetime, high: datetime.datetime) -> pa.Table:
        return pa.table(
            {
                "path": ["a.parquet"],
                "num_records": [1],
                "min.at": pa.array([low], zoned),
                "max.at": pa.array([high], zoned),
            }
        )

    inside = files(
        datetime.datetime(1990, 1, 1, tzinfo=utc), datetime.datetime(2100, 1, 1, tzinfo=utc)
    )
    assert not misread_timestamps(inside, schema)
    assert misread_timestamps(
        files(datetime.datetime(1, 1, 1, tzinfo=utc), inside["max.at"][0].as_py()), schema
    )
    assert misread_timestamps(
        files(inside["min.at"][0].as_py(), datetime.datetime(9999, 12, 31, tzinfo=utc)), schema
    )
    assert misread_timestamps(inside.drop_columns(["max.at"]), schema)  # no bounds in the log
    # TIMESTAMP_NTZ is 64-bit microseconds in Spark's files; a zoned one in a struct has no bounds
    assert not misread_timestamps(inside, pa.schema([("wall", pa.timestamp("us"))]))
    assert misread_timestamps(inside, pa.schema([("span", pa.struct([("since", zoned)]))]))


def test_a_decimal_of_at_most_18_digits_is_served_as_decimal64(
    spark_backend: Any, fresh_lake: Path
) -> None:
    """delta-rs wrote DECIMAL(15,2) and DECIMAL(20,4) columns (stored as decimal128, as Delta
    reads every DECIMAL). The first is served as Arrow's decimal64, DuckDB's own DECIMAL(15,2)
    (stored_types.served_type), the second as decimal128: both read exactly, ends and nulls
    included; a filter on the narrow one is pushed down (the server sends only its rows) and
    its statistics are decimal64; decimal128 rows, as DuckDB sends them, insert exactly, and
    one past the column's digits is refused, changing nothing."""
    import decimal

    from deltalake import DeltaTable, write_deltalake

    from airport_contracts import Context, ScanOptions
    from pyairport import filters
    from pyairport.backends.spark import SparkBackend

    d = decimal.Decimal
    top = d("9999999999999.99")
    narrow, wide = pa.decimal128(15, 2), pa.decimal128(20, 4)
    folder = fresh_lake / "sales" / "priced"
    for ids, prices, bigs in (
        ([1, 2, 3], [top, None, d("-0.01")], [d("1234567890123456.789"), d("1"), None]),
        ([4, 5], [-top, d("100.00")], [d("-0.0001"), d("2")]),
    ):
        rows = {"id": pa.array(ids, pa.int64()), "price": pa.array(prices, narrow)}
        write_deltalake(str(folder), pa.table(rows | {"big": pa.array(bigs, wide)}), mode="append")
    written = DeltaTable(str(folder)).to_pyarrow_table().to_pylist()

    def by_id(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(rows, key=lambda r: r["id"])

    with serving_lake(spark_backend.spark, fresh_lake) as client:
        (info,) = client.list_tables("sales")
        assert info.arrow_schema.field("price").type == pa.decimal64(15, 2)
        assert info.arrow_schema.field("big").type == wide
        read = client.scan("sales", "priced").read_all()
        assert read.schema.field("price").type == pa.decimal64(15, 2)
        assert by_id(read.to_pylist()) == by_id(written)
        sent = pa.table(
            {
                "id": pa.array([6], pa.int64()),
                "price": pa.array([d("-12.34")], narrow),
                "big": pa.array([d("0.5")], wide),
            }
        )
        client.insert("sales", "priced", sent)
        too_long = pa.table(
            {"id": [7], "price": pa.array([d("10000000000000.00")], pa.decimal128(18, 2))}
        )
        with pytest.raises(RemoteError) as refused:
            client.insert("sales", "priced", too_long)
        assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert (
            refused.value.message.startswith("schema mismatch: ")
            and "price" in refused.value.message
        )
    after = DeltaTable(str(folder)).to_pyarrow_table()
    assert after.schema.field("price").type == narrow  # stored as Delta reads it
    assert by_id(after.to_pylist()) == by_id(written + sent.to_pylist())

    backend = SparkBackend(spark_backend.spark, fresh_lake)
    try:
        ctx = Context.background()
        table: Any = backend.catalog.schema(ctx, "sales").table(ctx, "priced")  # type: ignore[union-attr]
        over = filters.Compare("price", ">", d("50.00"))
        predicate = filters.to_json(over, table.arrow_schema())
        options = ScanOptions(columns=["id", "price"], filter=predicate)
        sent_back = table.scan(ctx, options).read_all()
        assert sorted(sent_back["id"].to_pylist()) == [1, 5]  # only the rows it keeps
        stats = table.column_statistics(ctx, "price", "DECIMAL(15,2)")
        assert stats.min.type == pa.decimal64(15, 2)
        assert (stats.min.as_py(), stats.max.as_py()) == (-top, top)
    finally:
        backend.close()


def test_the_log_s_bounds_tell_whether_a_filter_rules_a_file_out_and_either_form_keeps_its_rows(
    tmp_path: Path,
) -> None:
    """delta-rs hands a filter to its Parquet reader split at every AND, each term decoding
    its columns again (direct.read); where no bound shows anything skipped by it, the filter
    runs as one term. delta_stats.rules_out_none holds it against the log's bounds of two
    files delta-rs wrote (ids 1-4 and 11-14): True only where every file is kept, False where
    one is ruled out or the bounds cannot tell. Either form keeps exactly the filter's rows,
    a NULL not kept."""
    from deltalake import DeltaTable, write_deltalake

    from airport_contracts import Context
    from pyairport import filters
    from pyairport.backends.spark import direct
    from pyairport.backends.spark.delta_stats import files_of, rules_out_none
    from pyairport.filters import And, Between, Compare, In, IsNull, Like, Not, Or

    first = pa.table({"id": [1, 2, 3, 4], "v": ["a", None, "c", "d"]})
    second = pa.table({"id": [11, 12, 13, 14], "v": ["x", "y", None, "z"]})
    write_deltalake(str(tmp_path / "t"), first)
    write_deltalake(str(tmp_path / "t"), second, mode="append")
    snapshot = DeltaTable(str(tmp_path / "t"))
    files = files_of(snapshot)
    keeps_both = [
        Compare("id", ">=", 0),
        Between("id", 2, 12, True, True),
        In("id", (3, 12), False),
        IsNull("v", False),
        IsNull("v", True),
        Or((Compare("id", "<", 2), Compare("id", ">", 13))),
        And((Compare("id", ">", 1), Compare("v", "<=", "z"))),
    ]
    rules_one_out = [
        Compare("id", "<", 5),
        Compare("id", "==", 12),
        Between("id", 4, 11, False, False),
        In("id", (1, 2), False),
        IsNull("id", False),  # neither file holds a NULL id
        And((Compare("id", ">", 0), Compare("id", "<", 10))),
        Or((Compare("id", "<", 2), Compare("id", "==", 3))),
    ]
    cannot_tell = [
        Compare("id", "!=", 3),
        Like("v", "a%"),
        Not(Compare("id", "<", 2)),
        In("id", (1,), True),
        In("id", tuple(range(100)), False),  # longer than the bounds are checked against
        And((Compare("id", ">", 0), Like("v", "x%"))),
    ]
    assert [rules_out_none(files, p) for p in keeps_both] == [True] * len(keeps_both)
    assert not any(rules_out_none(files, p) for p in rules_one_out + cannot_tell)
    assert not rules_out_none(files.drop_columns(["max.id"]), Compare("id", ">=", 0))

    schema = first.schema
    every = pa.concat_tables([first, second])
    three_valued = [
        Or((Compare("v", "==", "a"), Compare("id", ">", 12))),
        Not(Compare("v", "==", "c")),
    ]
    for predicate in keeps_both + rules_one_out + three_valued:
        kept = sorted(every.filter(filters.arrow_expression(predicate)).column("id").to_pylist())
        for prunes in (True, False):
            read = direct.read(
                Context.background(), snapshot, schema, ["id", "v"], predicate, 0, prunes
            )
            assert sorted(read.read_all().column("id").to_pylist()) == kept, (predicate, prunes)


def test_a_filter_runs_as_terms_wherever_a_file_or_a_row_group_may_be_skipped_by_it(
    tmp_path: Path,
) -> None:
    """planning.filter_prunes: the log's bounds first, then the files' Parquet footers (a
    file delta-rs wrote in row groups of two rows: ids 1-2 and 3-4, v sorted too); a filter
    that no bound rules anything out by runs as one term, the others as DataFusion's terms."""
    from deltalake import WriterProperties, write_deltalake

    from pyairport.backends.spark import direct, planning
    from pyairport.backends.spark.delta_stats import row_groups_of
    from pyairport.filters import Between, Compare, In

    table = pa.table({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"]})
    properties = WriterProperties(max_row_group_size=2)
    write_deltalake(str(tmp_path / "t"), table, writer_properties=properties)
    snapshots = direct.Snapshots(tmp_path / "t")
    snapshot = snapshots.latest()
    assert snapshot is not None
    files = snapshots.files(snapshot)
    footers = snapshots.footers(snapshot)
    assert footers is not None and [f.num_row_groups for f in footers] == [2]
    groups = row_groups_of(footers, ["id", "v"])
    assert groups is not None and groups.column("max.id").to_pylist() == [2, 4]
    assert row_groups_of(footers, ["missing"]) is None

    def prunes(predicate: Any) -> bool:
        return planning.filter_prunes(snapshots, snapshot, files, predicate)

    assert not prunes(Compare("id", ">=", 1))  # every row group holds a match
    assert not prunes(In("id", (2, 3), False))
    assert prunes(Compare("id", "==", 3))  # the file holds it, its first row group does not
    assert prunes(Between("id", 3, 4, True, True))
    assert prunes(Compare("v", ">", "b"))
    assert prunes(Compare("id", ">", 9))  # the log rules the file out
