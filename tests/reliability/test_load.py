"""16 concurrent clients x 400 mixed statements (`make soak`: 1,000) on shared tables: the
final state equals a serial model of the statements that reported success; nothing
deadlocks; latency printed."""

from __future__ import annotations

import os
import random
import threading
import time
from typing import Any

import pyarrow as pa

from pyairport.client import AirportClient

from ..protocol.conftest import Running

CLIENTS = 16
STATEMENTS = int(os.environ.get("PYAIRPORT_LOAD_STATEMENTS", "400"))


def _worker(
    location: str,
    k: int,
    model: dict[int, dict[str, Any]],
    latencies: list[float],
    errors: list[BaseException],
) -> None:
    rng = random.Random(k)
    schema = "dml_schema" if k % 2 else "batch_schema"
    try:
        with AirportClient(location) as client:
            for j in range(STATEMENTS):
                choice = rng.random()
                start = time.perf_counter()
                if choice < 0.4 or not model:
                    count = rng.randint(1, 3)
                    names = [f"n{k}-{j}-{i}" for i in range(count)]
                    # id left null: the demo tables set it to the new rowid, so RETURNING id
                    # tells the client its rowids
                    data = pa.table(
                        {"id": pa.nulls(count, pa.int64()), "name": names, "email": ["e"] * count}
                    )
                    answer = client.insert(schema, "users", data, returning=True)
                    assert answer.returning is not None
                    for row in answer.returning.to_pylist():
                        model[row["id"]] = {"schema": schema, **row}
                elif choice < 0.75:
                    rowid = rng.choice(list(model))
                    name = f"u{k}-{j}"
                    client.update(
                        schema,
                        "users",
                        pa.table({"name": [name], "rowid": pa.array([rowid], pa.int64())}),
                    )
                    model[rowid]["name"] = name
                else:
                    rowid = rng.choice(list(model))
                    client.delete(schema, "users", [rowid])
                    del model[rowid]
                latencies.append(time.perf_counter() - start)
    except BaseException as exc:
        errors.append(exc)


def test_sixteen_clients_lose_nothing(srv: Running) -> None:
    models: list[dict[int, dict[str, Any]]] = [{} for _ in range(CLIENTS)]
    latencies: list[float] = []
    errors: list[BaseException] = []
    threads = [
        threading.Thread(
            target=_worker, args=(srv.server.location, k, models[k], latencies, errors)
        )
        for k in range(CLIENTS)
    ]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    elapsed = time.perf_counter() - start
    assert not any(t.is_alive() for t in threads), "a client is stuck: deadlock"
    assert not errors, errors[:3]
    for schema in ("dml_schema", "batch_schema"):
        expected = {
            rowid: {k: v for k, v in row.items() if k != "schema"}
            for m in models
            for rowid, row in m.items()
            if row["schema"] == schema
        }
        actual = {
            r["rowid"]: {"id": r["id"], "name": r["name"], "email": r["email"]}
            for r in srv.rows(schema)
        }
        assert actual == expected
    latencies.sort()
    p50, p99 = latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)]
    print(
        f"\n{len(latencies)} statements from {CLIENTS} clients in {elapsed:.1f} s: p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms"
    )
