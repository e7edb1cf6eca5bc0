"""Who may do what where: grants of read, write and ddl on the schemas of each catalog, from
a TOML file (`pyairport serve --policy`), re-read on reload() (SIGHUP).

    [[grant]]
    identity = "alice"            # "*": every authenticated identity
    catalog = "sales"             # "*": every catalog
    schemas = ["*"]               # default ["*"]
    rights = ["read", "write"]    # of read, write, ddl

write and ddl include read: a statement that changes a table reads it first (DuckDB's
UPDATE and DELETE scan for the rowids), and DDL answers with the table's description.

The policy is also the server's CatalogAuthorizer: an identity with no grant on a catalog is
refused every call to it (PERMISSION_DENIED `catalog authorization failed: …`), whether the
catalog exists or not.
"""

from __future__ import annotations

import os
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airport_contracts import Context, identity_from_context

from ..wire.go_text import go_quote
from .grants import Right

ANY = "*"
_IMPLIED = {
    Right.READ: {Right.READ},
    Right.WRITE: {Right.WRITE, Right.READ},
    Right.DDL: {Right.DDL, Right.READ},
}


class PolicyError(ValueError):
    """A policy file that cannot be used; says the file and the grant."""


@dataclass(frozen=True)
class Grant:
    identity: str
    catalog: str
    schemas: frozenset[str]
    rights: frozenset[Right]

    def covers(self, identity: str, catalog: str) -> bool:
        return self.identity in (ANY, identity) and self.catalog in (ANY, catalog)


class Policy:
    """Grants; an identity may do what any grant that covers it allows, nothing else."""

    def __init__(self, grants: list[Grant], path: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._grants = list(grants)
        self.path = path

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Policy:
        policy = cls([], Path(path))
        policy.reload()
        return policy

    def reload(self) -> None:
        """Read the file again; a file that does not parse keeps the grants in force and
        raises PolicyError."""
        if self.path is None:
            return
        grants = parse_policy(self.path)
        with self._lock:
            self._grants = grants

    def allows(self, identity: str, catalog: str, schema: str, right: Right) -> bool:
        with self._lock:
            grants = self._grants
        return any(
            g.covers(identity, catalog)
            and (ANY in g.schemas or schema in g.schemas)
            and any(right in _IMPLIED[r] for r in g.rights)
            for g in grants
        )

    def may_use_catalog(self, identity: str, catalog: str) -> bool:
        with self._lock:
            grants = self._grants
        return any(g.covers(identity, catalog) for g in grants)

    def authorize_catalog(self, ctx: Context, catalog: str) -> Context:
        """CatalogAuthorizer: ctx, or a refusal naming what the identity lacks."""
        identity = identity_from_context(ctx)
        if not self.may_use_catalog(identity, catalog):
            raise PermissionError(
                f"{go_quote(identity)} has no grant on catalog {go_quote(catalog)}"
            )
        return ctx


def parse_policy(path: Path) -> list[Grant]:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"{path}: {exc}") from None
    unknown = set(document) - {"grant"}
    if unknown:
        raise PolicyError(f"{path}: unknown table {sorted(unknown)[0]!r} (expected [[grant]])")
    entries = document.get("grant", [])
    if not isinstance(entries, list):
        raise PolicyError(f"{path}: grant must be an array of tables ([[grant]])")
    return [_grant(entry, f"{path}: grant {i + 1}") for i, entry in enumerate(entries)]


def _grant(entry: Any, where: str) -> Grant:
    if not isinstance(entry, dict):
        raise PolicyError(f"{where}: expected a table")
    unknown = set(entry) - {"identity", "catalog", "schemas", "rights"}
    if unknown:
        raise PolicyError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    identity, catalog = entry.get("identity"), entry.get("catalog")
    if not isinstance(identity, str) or not identity:
        raise PolicyError(f'{where}: identity is required (a name, or "*")')
    if not isinstance(catalog, str):
        raise PolicyError(f'{where}: catalog is required (a name, "" for the default, or "*")')
    schemas = entry.get("schemas", [ANY])
    rights = entry.get("rights")
    if not isinstance(schemas, list) or not all(isinstance(s, str) and s for s in schemas):
        raise PolicyError(f'{where}: schemas must be a list of schema names (or ["*"])')
    if not isinstance(rights, list) or not rights:
        raise PolicyError(f"{where}: rights is required: a list of read, write, ddl")
    try:
        parsed = frozenset(Right(r) for r in rights)
    except ValueError:
        raise PolicyError(f"{where}: rights are read, write and ddl; got {rights}") from None
    return Grant(identity, catalog, frozenset(schemas), parsed)
