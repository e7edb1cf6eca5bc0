"""What every error of the contract shares: its gRPC status code and its exact message.

The generated errors.py declares one subclass of AirportError per row of the contract's error
table: its id, code, message template and parameter names, as data. Building the message from
the template is this module's. The status codes are gRPC's (google.rpc.Code); the loader
checks the table's codes against them.
"""

from __future__ import annotations

import enum
from typing import ClassVar


class StatusCode(enum.IntEnum):
    """gRPC status codes (google.rpc.Code); names match grpc.StatusCode."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


class AirportError(Exception):
    """An error of the contract: a gRPC status code and an exact message."""

    id: ClassVar[str] = ""
    code: ClassVar[StatusCode] = StatusCode.UNKNOWN
    template: ClassVar[str] = ""
    protocols: ClassVar[tuple[str, ...]] = ()
    from_tables: ClassVar[bool] = False
    """A table may raise it, and the client sees it as it is even where a protocol turns a
    table's other errors into operation_failed."""

    params: ClassVar[tuple[str, ...]] = ()
    """The names the template formats; a row's class is called with exactly these."""

    def __init__(self, **params: object) -> None:
        cls = type(self)
        if set(params) != set(cls.params):
            wanted = ", ".join(cls.params) or "no parameters"
            raise TypeError(f"{cls.__name__} takes {wanted}; got {', '.join(sorted(params))}")
        for name, value in params.items():
            setattr(self, name, value)
        self.message = cls.template.format(**params)
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message
