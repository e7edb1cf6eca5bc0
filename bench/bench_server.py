"""The server the benchmarks talk to, in its own process: a no-op sink (the transport's
ceiling: it counts what INSERTs, UPDATEs and DELETEs send) and an echo (RETURNING that costs the table nothing) beside memory tables, plus a
`bench_reset` action that refills a table and a `bench_first_touch` action that times
writing into fresh memory."""

from __future__ import annotations

import mmap
import sys
import time
from collections.abc import Callable

import pyarrow as pa

from airport_contracts import Context, DMLOptions, DMLResult, project_schema
from pyairport.backends.memory import memory_table
from pyairport.backends.memory.compaction import COMPACTOR
from pyairport.catalog import CatalogSchema, MutableCatalog
from pyairport.server import AirportServer, ServerConfig

COLUMNS = pa.schema(
    [("id", pa.int64()), ("value", pa.float64()), ("category", pa.int32()), ("name", pa.string())]
)


def rows(n: int, start: int = 0) -> pa.Table:
    import pyarrow.compute as pc

    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table(
        {
            "id": ids,
            "value": pc.multiply(ids.cast(pa.float64()), 1.5),
            "category": pc.cast(pc.bit_wise_and(ids, 127), pa.int32()),
            "name": pc.binary_join_element_wise("item_", pc.cast(ids, pa.string()), ""),
        },
        schema=COLUMNS,
    )


class Sink:
    """Reads every batch and keeps nothing: what the transport costs without a table."""

    def name(self) -> str:
        return "sink"

    def comment(self) -> str:
        return ""

    def arrow_schema(self, columns: list[str] | None = None) -> pa.Schema:
        return project_schema(COLUMNS, columns or [])

    def scan(self, ctx: Context, opts: object = None) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(COLUMNS, [])

    def insert(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        return DMLResult(affected_rows=sum(b.num_rows for b in rows))

    def update_batch(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        return DMLResult(affected_rows=sum(b.num_rows for b in rows))

    def delete_batch(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        return DMLResult(affected_rows=sum(b.num_rows for b in rows))


class Echo(Sink):
    """Keeps nothing and returns the rows it was sent as RETURNING rows: a table whose
    RETURNING is free, so what RETURNING costs here is the transport's alone."""

    def name(self) -> str:
        return "echo"

    def insert(
        self, ctx: Context, rows: pa.RecordBatchReader, opts: DMLOptions | None
    ) -> DMLResult:
        batches = list(rows)
        returned = None
        if opts is not None and opts.returning:
            returned = pa.RecordBatchReader.from_batches(COLUMNS, batches)
        return DMLResult(affected_rows=sum(b.num_rows for b in batches), returning_data=returned)


def main() -> None:
    tables = [Sink(), Echo(), memory_table("target", COLUMNS)]
    schema = CatalogSchema("bench", tables=tables)  # type: ignore[arg-type]
    catalog = MutableCatalog("", [schema])

    def reset(ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        name, count = body.decode().split(":")
        schema.add(memory_table(name, COLUMNS, rows=rows(int(count))))
        return [b"ok"]

    def first_touch(ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        """Seconds to write this many bytes into memory new to the process (a fresh mapping,
        whatever malloc keeps), 2 MiB at a time: what keeping received data costs at least."""
        total, piece = int(body), b"\x01" * (2 * 1024 * 1024)
        memory = mmap.mmap(-1, total, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        start = time.perf_counter()
        for offset in range(0, total - len(piece) + 1, len(piece)):
            memory[offset : offset + len(piece)] = piece
        seconds = time.perf_counter() - start
        memory.close()
        return [repr(seconds).encode()]

    def settle(ctx: Context, body: bytes, headers: dict[str, str]) -> list[bytes]:
        """Wait until the memory tables' compaction thread is idle (see bench_settle)."""
        return [b"ok" if COMPACTOR.wait_idle(60.0) else b"busy"]

    serve_until_stdin_closes(
        catalog,
        {"bench_reset": reset, "bench_first_touch": first_touch, "bench_settle": settle},
    )


def serve_until_stdin_closes(
    catalog: MutableCatalog, actions: dict[str, Callable[..., list[bytes]]]
) -> None:
    """Serve catalog (with the bench actions), print the address for the benchmark, and
    stop when the benchmark closes our stdin."""
    config = ServerConfig(port=0, max_message_bytes=256 * 1024 * 1024)
    server = AirportServer(catalog, None, config, extra_actions=actions).start()
    print(server.location, flush=True)
    sys.stdin.read()
    server.stop(0)


if __name__ == "__main__":
    main()
