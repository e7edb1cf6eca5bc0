"""Starting Spark fails in one line: here the check a Spark Connect server must pass (the
client cannot hand it jars). The other failures are tested through the CLI (test_cli.py)."""

from __future__ import annotations

import subprocess

import pytest

from pyairport.backends.spark.session import SparkSetupError, _require_delta


class _Session:
    def __init__(self, extensions: str | None) -> None:
        self.conf = self
        self.extensions = extensions

    def get(self, key: str, default: str | None = None) -> str | None:
        assert key == "spark.sql.extensions"
        return self.extensions if self.extensions is not None else default


def test_a_connect_server_without_delta_is_one_line() -> None:
    for extensions in (None, "", "org.example.OtherExtension"):
        with pytest.raises(SparkSetupError) as err:
            _require_delta(_Session(extensions), "sc://spark.example:15002")
        assert str(err.value).startswith(
            "the Spark Connect server at sc://spark.example:15002 has no Delta Lake: start it"
        )
        assert "\n" not in str(err.value)
    _require_delta(_Session("io.delta.sql.DeltaSparkSessionExtension"), "sc://h:1")


class _Process:
    """A JVM's process: exited with status, or (status None) exiting with `exits` once waited
    for, or running on (exits None: the wait times out)."""

    def __init__(self, status: int | None, exits: int | None = None) -> None:
        self.status = status
        self.exits = exits

    def poll(self) -> int | None:
        return self.status

    def wait(self, timeout: float) -> int:
        if self.status is None and self.exits is None:
            raise subprocess.TimeoutExpired("java", timeout)
        self.status = self.status if self.status is not None else self.exits
        return self.status  # type: ignore[return-value]


class _Gateway:
    def __init__(self, status: int | None, exits: int | None = None) -> None:
        self.proc = _Process(status, exits)


@pytest.mark.spark
def test_a_call_that_raced_the_jvms_death_is_the_engine_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """py4j words a call cut off by the JVM's death in more ways than one (a class lookup with
    no answer says "PythonUtils does not exist in the JVM"): whether the JVM has exited decides,
    so the statement fails UNAVAILABLE and the server restarts rather than going on INTERNAL."""
    from py4j.protocol import Py4JError, Py4JNetworkError
    from pyspark import SparkContext

    from pyairport.backends.spark.session import engine_lost

    raced = Py4JError("PythonUtils does not exist in the JVM")
    monkeypatch.setattr(SparkContext, "_gateway", _Gateway(-9))
    assert engine_lost(raced)
    assert engine_lost(Py4JNetworkError("Answer from Java side is empty"))
    assert not engine_lost(ValueError("a client's own mistake"))
    monkeypatch.setattr(SparkContext, "_gateway", _Gateway(None, exits=-9))
    assert engine_lost(raced)  # not yet exited when the call failed, a moment later
    monkeypatch.setattr(SparkContext, "_gateway", _Gateway(None))
    assert not engine_lost(raced)
    assert engine_lost(Py4JError("An error occurred: Connection refused"))
    monkeypatch.setattr(SparkContext, "_gateway", None)
    assert not engine_lost(raced)
