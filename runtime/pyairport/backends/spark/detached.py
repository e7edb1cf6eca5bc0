"""A part of a Delta table's scan as a plan another process reads without Spark or the
catalog (a data worker, server/data_worker.py): the layout the catalog serves the table with,
the part's token (the version it pins, its files: planning.py), the columns filled and the
pushed-down filter. The worker reads it as the catalog's own DoGet would (planning.read_part),
so both give the same rows; the plan travels sealed (server/ticket_seal.py), since it names
the table's folder.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import msgpack
import pyarrow as pa

from airport_contracts import Context, ScanFailed

from ... import filters
from .direct import Snapshots
from .layout import Layout
from .planning import PartGone, pushable, read_part

_OPEN_TABLES = 64  # tables whose delta-rs views a worker keeps between scans


@dataclass(frozen=True)
class DetachedPart:
    layout: Layout
    token: str
    wanted: list[str]
    filter: bytes | None  # DuckDB's JSON filter, parsed against the layout where read

    def encode(self) -> bytes:
        layout = self.layout
        assert layout.location is not None  # only a folder this host sees is detached
        packed: bytes = msgpack.packb(
            {
                "location": str(layout.location),
                "rowids": layout.rowids,
                "schema": layout.schema.serialize().to_pybytes(),
                "partitions": list(layout.partitions),
                "features": sorted(layout.features),
                "retyped": sorted(layout.retyped),
                "token": self.token,
                "wanted": self.wanted,
                "filter": self.filter,
            }
        )
        return packed

    @staticmethod
    def decode(plan: bytes) -> DetachedPart:
        fields = msgpack.unpackb(plan)
        schema = pa.ipc.read_schema(pa.py_buffer(fields["schema"]))
        layout = Layout(
            ident="",  # never used: no Spark reads a detached part
            location=Path(fields["location"]),
            rowids=fields["rowids"],
            schema=schema,
            stored=schema,
            partitions=tuple(fields["partitions"]),
            computed=frozenset(),
            features=frozenset(fields["features"]),
            retyped=frozenset(fields["retyped"]),
        )
        return DetachedPart(layout, fields["token"], list(fields["wanted"]), fields["filter"])


class DetachedReader:
    """Reads detached parts, keeping the delta-rs views of the tables it read last (a part's
    version opens from the table's last checkpoint, not the whole log, each time)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshots: OrderedDict[Path, Snapshots] = OrderedDict()

    def read(self, ctx: Context, plan: bytes) -> pa.RecordBatchReader:
        """The part's rows, full width; a part that can no longer be read as planned is the
        contract's ScanFailed, as at the catalog."""
        part = DetachedPart.decode(plan)
        layout = part.layout
        predicate = filters.parse(part.filter, pushable(layout)) if part.filter else None
        snapshots = self._of(layout.location)
        try:
            return read_part(ctx, snapshots, layout, part.token, part.wanted, predicate, 0)
        except PartGone as exc:
            raise ScanFailed(error=str(exc)) from None

    def _of(self, location: Path | None) -> Snapshots:
        assert location is not None
        with self._lock:
            snapshots = self._snapshots.pop(location, None) or Snapshots(location)
            self._snapshots[location] = snapshots
            while len(self._snapshots) > _OPEN_TABLES:
                self._snapshots.popitem(last=False)
            return snapshots
