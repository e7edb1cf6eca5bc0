"""Starting Spark with Delta Lake: local (embedded), a cluster master, or Spark Connect.

By default the session gets Delta the way delta-spark sets it up
(`configure_spark_with_delta_pip`): Spark resolves the jars that match the installed
delta-spark and pyspark from Maven Central, caches them (Ivy), and ships them to a cluster's
executors. On a machine without Maven Central, a folder of the jars (`make jars`,
`--jars-dir`) is used instead. A missing JDK, missing jars, jars that cannot be fetched or a
Spark Connect server without Delta is one clear line (SparkSetupError), not a JVM stack trace.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

JARS_DIR_VARIABLE = "PYAIRPORT_JARS"  # a jars folder to use when none is passed
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


def delta_jars(jars_dir: Path) -> list[str]:
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
    warehouse: Path | None = Path("warehouse"),
    jars_dir: Path | None = None,
    app_name: str = "pyairport",
    conf: dict[str, str] | None = None,
) -> Any:
    """A SparkSession with Delta: embedded/cluster (master) or Spark Connect (remote).

    warehouse: spark.sql.warehouse.dir (None: Spark's own setting).
    jars_dir: take the Delta jars from this folder (default: $PYAIRPORT_JARS if set, else
    fetched by Spark from Maven Central)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this Python (pyarrow)
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkSetupError("pyspark is not installed: pip install 'pyairport[spark]'") from None
    if remote:
        # The Connect server must have Delta configured itself; the client only talks to it.
        # Its own builder: the generic one refuses Connect while a classic session is active.
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        connect = ConnectSession.builder.remote(remote).appName(app_name).getOrCreate()
        _require_delta(connect, remote)
        return connect
    check_java()
    if jars_dir is None and os.environ.get(JARS_DIR_VARIABLE):
        jars_dir = Path(os.environ[JARS_DIR_VARIABLE])
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = dict(LOCAL_CONF)
    if warehouse is not None:  # else Spark's own setting (spark-defaults.conf) stands
        settings["spark.sql.warehouse.dir"] = str(warehouse.resolve())
    if jars_dir is not None:
        settings["spark.jars"] = ",".join(delta_jars(jars_dir))
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    if jars_dir is None:
        from delta import configure_spark_with_delta_pip

        builder = configure_spark_with_delta_pip(builder)
    # The JVM's start-up chatter (log4j warnings, Ivy's resolution) is held back and shown
    # only if the start fails.
    with _jvm_output_held() as start:
        try:
            session = builder.getOrCreate()
            start.started()
        except Exception as exc:
            failure = exc
    if not start.up:
        raise _start_failure(failure, start.dropped) from None
    session.sparkContext.setLogLevel("ERROR")
    return session


class _JvmStart:
    def __init__(self) -> None:
        self.up = False
        self.dropped = ""

    def started(self) -> None:
        self.up = True


class _HeldOutput:
    """One of this process's output fds, pointed at a pipe whose contents are held until
    release() says whether to show them; then the pipe is forwarded as it comes."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        read_end, write_end = os.pipe()
        self.real = os.dup(fd)
        os.dup2(write_end, fd)
        os.close(write_end)
        self.held: list[bytes] = []
        self.decided = self.show = False
        self.lock = threading.Lock()
        self.reader = threading.Thread(
            target=self._forward, args=(read_end,), name=f"spark-jvm-fd{fd}", daemon=True
        )
        self.reader.start()

    def _forward(self, read_end: int) -> None:
        while chunk := os.read(read_end, 65536):
            with self.lock:
                if not self.decided:
                    self.held.append(chunk)
                elif self.show:
                    os.write(self.real, chunk)
        os.close(read_end)

    def release(self, show: bool) -> bytes:
        """Show what was held (and forward from now on), or drop it; returns it either way."""
        os.dup2(self.real, self.fd)  # this process writes to the real fd again
        if not show:
            # The JVM is gone and this process no longer writes to the pipe: read it to its
            # end, so that what the JVM said last is there to tell why.
            self.reader.join(timeout=10)
        with self.lock:
            self.decided, self.show = True, show
            held = b"".join(self.held)
            self.held.clear()
            if show:
                os.write(self.real, held)
        if not show:
            os.close(self.real)
        return held


@contextlib.contextmanager
def _jvm_output_held() -> Iterator[Any]:
    """Spark's JVM inherits this process's stdout and stderr when it starts. Hand it pipes
    instead and hold what it writes until it is known whether Spark started: replayed when
    it did, dropped when it did not (a failed start becomes one line, not Ivy's report and a
    JVM stack trace). Yields a _JvmStart: call started() once Spark is up; after a failed
    start its dropped output is there to tell why."""
    sys.stdout.flush()
    sys.stderr.flush()
    outputs = [_HeldOutput(1), _HeldOutput(2)]
    start = _JvmStart()
    try:
        yield start
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        start.dropped = b"".join(output.release(show=start.up) for output in outputs).decode(
            errors="replace"
        )


def _start_failure(exc: Exception, jvm_output: str) -> SparkSetupError:
    """One line for a Spark that did not start while fetching Delta through Ivy."""
    if "unresolved dependency" in jvm_output.lower():
        from importlib.metadata import version

        return SparkSetupError(
            f"Spark could not fetch Delta Lake {version('delta-spark')} for Spark"
            f" {version('pyspark')} from Maven Central: run `make jars` and pass"
            " --jars-dir .cache/jars"
        )
    exceptions = [
        line.strip()
        for line in jvm_output.splitlines()
        if "Exception" in line or line.startswith("Error")
    ]
    reason = exceptions[-1] if exceptions else (str(exc).splitlines() or [type(exc).__name__])[0]
    return SparkSetupError(f"Spark did not start: {reason[:300]}")


def _require_delta(session: Any, remote: str) -> None:
    """A Spark Connect server brings its own jars: without Delta, say so in one line."""
    extensions = session.conf.get("spark.sql.extensions", "") or ""
    if "DeltaSparkSessionExtension" not in extensions:
        raise SparkSetupError(
            f"the Spark Connect server at {remote} has no Delta Lake: start it with"
            " --packages io.delta:delta-spark_<spark>_2.13:<delta> (or --jars) and"
            " spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension"
        )


def is_connect(session: Any) -> bool:
    """True for a Spark Connect session (no local JVM: files must travel as data)."""
    return type(session).__module__.startswith("pyspark.sql.connect")


def functions_for(frame: Any) -> Any:
    """The `functions` module that builds Columns of frame's kind: pyspark.sql.functions
    serves Spark Connect only where an environment variable says the process uses nothing
    else, and otherwise asserts a local SparkContext."""
    if type(frame).__module__.startswith("pyspark.sql.connect"):
        from pyspark.sql.connect import functions as connect_functions

        return connect_functions
    from pyspark.sql import functions

    return functions


def jvm_exit_code(spark: Any) -> int | None:
    """The exit status of the JVM this process started for spark once it has stopped; None
    while it runs, and for a session whose JVM is not this process's (Spark Connect)."""
    if is_connect(spark):
        return None
    process = _local_jvm()
    return None if process is None else process.poll()


SPARK_STOPPED = "Spark's JVM has stopped; the server is restarting"
DYING_SECONDS = 5  # how long a JVM being killed may take to exit


def engine_lost(exc: BaseException) -> bool:
    """Whether exc says the session's JVM is gone (py4j cannot reach it), rather than that a
    statement failed."""
    from py4j.protocol import Py4JError, Py4JNetworkError  # type: ignore[import-untyped]

    if isinstance(exc, (Py4JNetworkError, ConnectionError)):
        return True
    if not isinstance(exc, Py4JError):
        return False
    text = str(exc)
    if "Answer from Java side is empty" in text or "Connection refused" in text:
        return True
    # A call that raced the JVM's death can fail in other words ("PythonUtils does not exist
    # in the JVM" when a class lookup got no answer): the process's own state decides, and a
    # lookup that failed so is given a moment for a dying JVM to exit (it had not, once, when
    # asked at once).
    process = _local_jvm()
    if process is None:
        return False
    if "does not exist in the JVM" in text:
        try:
            process.wait(timeout=DYING_SECONDS)
        except subprocess.TimeoutExpired:
            return False
    return process.poll() is not None


def _local_jvm() -> Any:
    """The JVM process this process started for Spark (a Popen), or None."""
    from pyspark import SparkContext

    return getattr(SparkContext._gateway, "proc", None)


def default_driver_memory(total_bytes: int | None = None) -> str:
    """The driver heap `pyairport serve` gives local Spark when nothing says otherwise: a
    quarter of the machine's memory, 1 to 16 GiB (Spark's own 1 GiB dies on a scan of a
    6M-row table that Spark must read, and in local mode that takes the whole JVM down)."""
    if total_bytes is None:
        total_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    gib = max(1, min(16, total_bytes // 4 // (1 << 30)))
    return f"{gib}g"
