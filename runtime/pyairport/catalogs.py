"""The catalogs one server serves, by name, each behind a dispatcher of its own (airport-go's
MultiCatalogServer), and which one a call is for.

A server of one catalog sends every call to it, and that catalog's dispatcher checks the
names the call carries as a single airport-go server does. With several, a call goes to the
catalog its `airport-catalog` header names (DuckDB 1.5 sends it), else to the one its body or
ticket names (DuckDB 1.4 names it only there), else to the default catalog "" (deviation
catalog_not_found_named).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping

import msgpack

from airport_contracts import CatalogNotFound

from .dispatch import Dispatcher, catalog_from_headers
from .dispatch.catalog_actions import go_quote

DEFAULT = ""


class Catalogs:
    """Dispatchers by catalog name; added and removed while serving (a call already routed
    finishes on the catalog it started on)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._dispatchers: dict[str, Dispatcher] = {}
        self.location = ""

    def add(self, name: str, dispatcher: Dispatcher) -> None:
        """Serve dispatcher's catalog as name; a name already served is a ValueError."""
        dispatcher.location = self.location
        with self._lock:
            if name in self._dispatchers:
                raise ValueError(f"catalog {name!r} is already served")
            self._dispatchers[name] = dispatcher

    def remove(self, name: str) -> None:
        """Stop serving the catalog name; a name not served is a KeyError."""
        with self._lock:
            del self._dispatchers[name]

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._dispatchers)

    def get(self, name: str) -> Dispatcher | None:
        with self._lock:
            return self._dispatchers.get(name)

    def set_location(self, location: str) -> None:
        """The address scan endpoints name, for every catalog served now and later."""
        with self._lock:
            self.location = location
            for dispatcher in self._dispatchers.values():
                dispatcher.location = location

    def route(
        self, protocol: str, headers: Mapping[str, str], named: str | None = None
    ) -> Dispatcher:
        """The dispatcher of the call's catalog; named: the catalog the body or ticket names."""
        with self._lock:
            if len(self._dispatchers) == 1:
                return next(iter(self._dispatchers.values()))
            name = catalog_from_headers(protocol, headers)
            if name is None:
                name = named if named is not None else DEFAULT
            dispatcher = self._dispatchers.get(name)
        if dispatcher is None:
            raise CatalogNotFound(catalog=go_quote(name))
        return dispatcher

    def several(self) -> bool:
        with self._lock:
            return len(self._dispatchers) > 1


def catalog_in_body(body: bytes) -> str | None:
    """The catalog an action's msgpack body names (`catalog_name`, or the ALTER actions'
    `catalog`), or None."""
    try:
        request = msgpack.unpackb(body, raw=False, strict_map_key=False)
    except Exception:  # not a msgpack map: the action's own decoding says what is wrong
        return None
    if not isinstance(request, dict):
        return None
    for key in ("catalog_name", "catalog"):
        if isinstance(request.get(key), str):
            return str(request[key])
    return None


def catalog_in_ticket(ticket: bytes) -> str | None:
    """The catalog a DoGet ticket names, or None."""
    try:
        data = json.loads(ticket)
    except (ValueError, UnicodeDecodeError):
        return None
    catalog = data.get("catalog") if isinstance(data, dict) else None
    return catalog if isinstance(catalog, str) else None
