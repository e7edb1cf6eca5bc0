"""Go's formatting of values in the messages the contract copies from airport-go."""

from __future__ import annotations

import json


def go_quote(value: str) -> str:
    """Go's %q for the plain names catalogs have."""
    return json.dumps(value, ensure_ascii=False)
