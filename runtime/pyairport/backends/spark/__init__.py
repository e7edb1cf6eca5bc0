"""The Spark backend: Delta tables, read and changed by Flight clients.

session.py starts Spark with Delta; backend.py finds the tables (a warehouse folder or the
session's catalog); layout.py reads how a table is stored and its rows addressed; table.py
serves one table (scans.py reads it, staging.py holds a statement's changes until its commit);
sql.py builds Spark SQL text and reads Spark's answers.
"""

import os

# delta-rs' errors carry a backtrace (frames, and the C library's source paths) wherever
# RUST_BACKTRACE is set, as on many a developer's machine, and their text reaches clients'
# error messages. An operator who wants them sets RUST_LIB_BACKTRACE=1.
os.environ.setdefault("RUST_LIB_BACKTRACE", "0")

from .backend import SparkBackend
from .table import SparkTable

__all__ = ["SparkBackend", "SparkTable"]
