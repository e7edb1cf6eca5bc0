"""Go's formatting of values in the messages the contract copies from airport-go."""

from __future__ import annotations

import json
import re

_SURROGATES = re.compile("[\ud800-\udfff]")


def go_quote(value: str) -> str:
    """Go's %q for the plain names catalogs have."""
    return json.dumps(value, ensure_ascii=False)


def go_string(text: str) -> str:
    """text as a Go string holds it, each lone surrogate as U+FFFD (as Go's JSON decoder reads
    `\\ud800`). Python's json keeps them, so a ticket can bring one into a name and from
    there into a message; gRPC sends a status only as UTF-8, which holds none."""
    return _SURROGATES.sub("\ufffd", text)
