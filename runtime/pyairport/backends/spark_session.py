"""Starting Spark with Delta Lake: local (embedded), a cluster master, or Spark Connect.

The Delta jars come from Maven Central into a local folder (`make jars`); a missing JDK or
missing jars is one clear line (SparkSetupError), not a JVM stack trace.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

DEFAULT_JARS_DIR = Path(os.environ.get("PYAIRPORT_JARS", ".cache/jars"))
JAR_PATTERNS = ("delta-spark_*.jar", "delta-storage-*.jar")

# Tuned for a small local machine: Delta's defaults (50 snapshot partitions, 200 shuffle
# partitions) make every statement schedule hundreds of tiny tasks.
LOCAL_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.databricks.delta.snapshotPartitions": "1",
    "spark.sql.session.timeZone": "UTC",
}


class SparkSetupError(RuntimeError):
    """Spark cannot start here; the message says what to install or run."""


def delta_jars(jars_dir: Path = DEFAULT_JARS_DIR) -> list[str]:
    found = []
    for pattern in JAR_PATTERNS:
        matches = sorted(jars_dir.glob(pattern))
        if not matches:
            raise SparkSetupError(
                f"Delta Lake jars not found in {jars_dir}/ ({pattern}): run `make jars` (uses Maven)"
            )
        found.append(str(matches[-1].resolve()))
    return found


def check_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return
    if shutil.which("java") is None:
        raise SparkSetupError(
            "Java not found: Spark needs a JDK (17 or newer) on PATH or in JAVA_HOME"
        )


def spark_session(
    *,
    master: str = "local[*]",
    remote: str | None = None,
    warehouse: Path = Path("warehouse"),
    jars_dir: Path = DEFAULT_JARS_DIR,
    app_name: str = "pyairport",
    conf: dict[str, str] | None = None,
) -> Any:
    """A SparkSession with Delta: embedded/cluster (master) or Spark Connect (remote)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this Python (pyarrow)
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkSetupError("pyspark is not installed: pip install 'pyairport[spark]'") from None
    if remote:
        # The Connect server must have Delta configured itself; the client only talks to it.
        # Its own builder: the generic one refuses Connect while a classic session is active.
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        return ConnectSession.builder.remote(remote).appName(app_name).getOrCreate()
    check_java()
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {
        **LOCAL_CONF,
        "spark.jars": ",".join(delta_jars(jars_dir)),
        "spark.sql.warehouse.dir": str(warehouse.resolve()),
    }
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def is_connect(session: Any) -> bool:
    """True for a Spark Connect session (no local JVM: files must travel as data)."""
    return type(session).__module__.startswith("pyspark.sql.connect")
