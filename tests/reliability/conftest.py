"""The protocol tests' servers, for the reliability tests."""

from ..protocol.conftest import spark_srv, srv, tx_srv  # noqa: F401
