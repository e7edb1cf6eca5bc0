"""A geometry column (geoarrow.wkb, airport-go's GeometryExtensionType) round trip, on memory
and on Delta: DuckDB 1.5 creates it (its GEOMETRY, with a CRS), writes and reads it back as
GEOMETRY; over the wire the field keeps its extension name and CRS metadata. pyarrow knows no
geoarrow type, so it sees binary with that metadata: a Delta table stores the bytes as BINARY
and keeps the field in its pyairport.served_types property."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from ..protocol.conftest import Running
from .sqllogic.clients import CLIENTS
from .test_airport_suite import _client, run_suite_file

pytestmark = pytest.mark.duckdb

CRS84 = json.dumps({"crs": "OGC:CRS84"}).encode()
GEOMETRY = pa.field(
    "g",
    pa.binary(),
    metadata={b"ARROW:extension:name": b"geoarrow.wkb", b"ARROW:extension:metadata": CRS84},
)
POINT_1_2 = bytes.fromhex("0101000000000000000000f03f0000000000000040")  # POINT(1 2), WKB

SESSION = """require airport

require-env AIRPORT_TEST_SERVER

statement ok
ATTACH '' AS lake (TYPE AIRPORT, location '${AIRPORT_TEST_SERVER}');

statement ok
CREATE SCHEMA lake.geometry_sql;

statement ok
CREATE TABLE lake.geometry_sql.places (id INTEGER, g GEOMETRY, c GEOMETRY('OGC:CRS84'));

statement ok
INSERT INTO lake.geometry_sql.places VALUES (1, 'POINT(1 2)'::GEOMETRY, 'POINT(3 4)'::GEOMETRY('OGC:CRS84')), (2, NULL, NULL);

query ITTTT
SELECT id, ST_AsText(g), typeof(g), ST_AsText(c), typeof(c) FROM lake.geometry_sql.places ORDER BY id
----
1	POINT (1 2)	GEOMETRY	POINT (3 4)	GEOMETRY('OGC:CRS84')
2	NULL	GEOMETRY	NULL	GEOMETRY('OGC:CRS84')

query I
SELECT count(*) FROM lake.geometry_sql.places WHERE g IS NOT NULL
----
1
"""


def test_duckdb_15_geometry_round_trip(lake: Running, tmp_path: Path) -> None:
    client = _client(CLIENTS[1])  # DuckDB 1.5: GEOMETRY is a type of its own there
    file = tmp_path / "geometry.test"
    file.write_text(SESSION)
    result = run_suite_file(client, file, lake.server.location)
    assert result["failures"] == [] and result["passed"] == result["run"] > 0, result


def test_a_geoarrow_field_keeps_its_name_and_crs(lake: Running) -> None:
    """From pyarrow: CREATE TABLE with the field as DuckDB sends it, INSERT, SELECT."""
    columns = pa.schema([pa.field("id", pa.int64()), GEOMETRY])
    lake.client.create_schema("geometry_wire")
    lake.client.create_table("geometry_wire", "places", columns)
    rows = pa.table(
        {"id": pa.array([1, 2], pa.int64()), "g": pa.array([POINT_1_2, None], pa.binary())},
        schema=columns,
    )
    lake.client.insert("geometry_wire", "places", rows)
    read = lake.client.scan("geometry_wire", "places", ["id", "g"]).read_all()
    assert read.schema.field("g").metadata == GEOMETRY.metadata
    assert read.select(["id", "g"]).sort_by("id").to_pylist() == [
        {"id": 1, "g": POINT_1_2},
        {"id": 2, "g": None},
    ]
    (listed,) = [t for t in lake.client.list_tables("geometry_wire") if t.name == "places"]
    assert listed.arrow_schema.field("g").metadata == GEOMETRY.metadata
