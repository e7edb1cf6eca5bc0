"""Tables' layouts as Spark reads them (layout.read_layout), kept by the shape of the version
read, so that a table of a shape already read is laid out without asking Spark again.

Reading a layout costs Spark a DESCRIBE DETAIL and a query's planning: most of a second on a
busy session, for every table a server finds in its warehouse and every table a client makes.
Tables made alike share a shape (direct.shape: columns, partitioning, properties, protocol,
comment), and everything a layout holds but the table's name and folder follows from it.
Only tables named by their folder are kept: a metastore's table may carry column metadata its
folder's log does not."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import direct
from .layout import Layout, read_layout
from .scans import log_version
from .sql import path_ident

KEPT_SHAPES = 1024
"""Layouts kept, the least recently used dropped first: a layout is a few kilobytes."""


class Layouts:
    """One backend's layouts: read by Spark once per shape, for tables named by folder."""

    def __init__(self, spark: Any, shares_files: bool) -> None:
        self.spark = spark
        self.shares_files = shares_files  # delta-rs reads the folders Spark names
        self._by_shape: OrderedDict[str, Layout] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, ident: str, folder: Path | None = None) -> Layout:
        """The layout of the table Spark SQL names ident; folder: where it is stored, when it
        is named by its folder (else Spark reads it every time)."""
        if folder is None or not self._by_folder(ident, folder):
            return read_layout(self.spark, ident)
        version = log_version(folder / "_delta_log")
        shape = direct.Snapshots(folder).shape_at(version)
        if shape is not None:
            with self._lock:
                known = self._by_shape.get(shape)
                if known is not None:
                    self._by_shape.move_to_end(shape)
                    return replace(known, ident=ident, location=folder)
        layout = read_layout(self.spark, ident)
        read_at_version = log_version(folder / "_delta_log") == version
        if shape is not None and layout.location == folder and read_at_version:
            with self._lock:
                self._by_shape[shape] = layout
                while len(self._by_shape) > KEPT_SHAPES:
                    self._by_shape.popitem(last=False)
        return layout

    def _by_folder(self, ident: str, folder: Path) -> bool:
        """Whether ident names the table by folder, an absolute folder written as Spark gives
        its location back (no `..`, no `//`), that this process reads too."""
        return (
            self.shares_files
            and folder.is_absolute()
            and os.path.normpath(folder) == str(folder)
            and ident == path_ident(str(folder))
        )
