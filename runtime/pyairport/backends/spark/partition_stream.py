"""A classic Spark DataFrame's rows brought to this process as Arrow, one Spark partition at a
time: a job per partition, the next one computed while the last one's batches are read
(PySpark's own local iterator, over the Arrow batches its `toArrow()` collects all at once).

Why not what Spark offers: `toArrow()` holds the whole result in the driver and in Python, and
its job's results are capped by spark.driver.maxResultSize (a scan of TPC-H SF 1's `lineitem`
failed TaskResultLost, then killed the JVM). Splitting the scan by data files instead
(`_metadata.file_path IN (…)`) bounds the memory but not the time: Delta's file index prunes
no file by that filter, so each group read the whole table again (a one-file sum over a
ten-file table took 0.59 s, the whole table's 0.42 s), and a scan cost its groups times the
table. Here each file is read once, and what is held at a time is two partitions, the one
read and the next (Spark splits files into partitions of at most
spark.sql.files.maxPartitionBytes, 128 MB, of Parquet).

The Arrow schema is the JVM's own (ArrowUtils, the same arguments as the batches'), so every
batch is read exactly as it was written. Spark Connect sessions have no such iterator here:
scans.py streams them by groups of files, each confined by a column's range (file_pieces.py).
A result known to be small (a LIMIT, RETURNING's rows, a piece of a table's changes) is
`collected` in one job instead, also in the JVM's own schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from .session import is_connect

_TIME_ZONE = "UTC"  # a TIMESTAMP's zone, as toArrow() gives it
_DUPLICATE_FIELDS_FAIL = True  # a struct with two fields of one name is an error, as in toArrow()
_LARGE_TYPES = False  # strings and binaries with 32-bit offsets, as the served schema has them
_PREFETCH = True  # one partition's job runs while the last one is read: both cores at work


def collected(frame: Any) -> pa.Table:
    """frame's rows, all at once (a result known to be small), in the schema Spark's JVM
    wrote them in. Not PySpark's toArrow(): it casts them to a schema of its own, which
    declares a VARIANT never null, so a null VARIANT failed the read ("nulls in input cannot
    be viewed as non-nullable"), classic and Spark Connect alike."""
    if is_connect(frame.sparkSession):
        return frame._to_table()[0]
    return pa.Table.from_batches(frame._collect_as_arrow(empty_list_if_zero_records=False))


def arrow_partitions(frame: Any, batch_rows: int) -> pa.RecordBatchReader:
    """frame's rows in batches of at most batch_rows, read one partition at a time."""
    from pyspark.serializers import NoOpSerializer
    from pyspark.util import _local_iterator_from_socket

    jvm = frame.sparkSession._jvm
    arrow_schema = jvm.org.apache.spark.sql.util.ArrowUtils.toArrowSchema(
        frame._jdf.schema(), _TIME_ZONE, _DUPLICATE_FIELDS_FAIL, _LARGE_TYPES
    )
    schema = pa.ipc.read_schema(pa.py_buffer(bytes(arrow_schema.serializeAsMessage())))
    batches = frame._jdf.toArrowBatchRdd(
        batch_rows, _TIME_ZONE, _DUPLICATE_FIELDS_FAIL, _LARGE_TYPES
    )
    served = jvm.org.apache.spark.api.python.PythonRDD.toLocalIteratorAndServe(batches, _PREFETCH)

    def read() -> Iterator[pa.RecordBatch]:
        for payload in _local_iterator_from_socket(served, NoOpSerializer()):
            yield pa.ipc.read_record_batch(pa.py_buffer(payload), schema)

    return pa.RecordBatchReader.from_batches(schema, read())
