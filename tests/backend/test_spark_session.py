"""Starting Spark fails in one line: here the check a Spark Connect server must pass (the
client cannot hand it jars). The other failures are tested through the CLI (test_cli.py)."""

from __future__ import annotations

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
