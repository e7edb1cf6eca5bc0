"""Per-schema rights (deviation schema_grants): what a call needs, checked where the dispatcher
looks a schema up, before any of its tables is touched.

The transport puts the call's access in its Context (with_access: the grants in force, the
identity, the catalog); each dispatcher entry point states the right its call needs
(needing); require() then refuses a schema the identity may not use that way, may_read()
says whether it may read one schema and readable() filters a listing. A Context without
access (a server without a policy) is never refused here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Protocol, TypeVar

from airport_contracts import Context, PermissionDenied

from ..names import check_name
from ..wire.go_text import go_quote
from .audit import audit

_ACCESS = "pyairport.access"  # the key the call's access is kept under

T = TypeVar("T")


class Right(StrEnum):
    READ = "read"
    WRITE = "write"
    DDL = "ddl"


class Grants(Protocol):
    """Who may do what where (pyairport.access.policy.Policy)."""

    def allows(self, identity: str, catalog: str, schema: str, right: Right) -> bool:
        """Whether identity holds right on catalog.schema."""
        ...


@dataclass(frozen=True)
class CallAccess:
    grants: Grants
    identity: str
    catalog: str
    right: Right | None = None  # None: the call names no schema (transactions)


def with_access(ctx: Context, grants: Grants, identity: str, catalog: str) -> Context:
    """ctx carrying the call's access: identity, in catalog, under grants."""
    return ctx.with_value(_ACCESS, CallAccess(grants, identity, catalog))


def needing(ctx: Context, right: Right | None) -> Context:
    """ctx for a call that needs right on every schema it names."""
    access = ctx.value(_ACCESS)
    if not isinstance(access, CallAccess):
        return ctx
    return ctx.with_value(_ACCESS, replace(access, right=right))


def require(ctx: Context, schema: str, right: Right | None = None) -> None:
    """PermissionDenied unless the call's identity holds right (default: the one the call
    needs) on schema."""
    access = ctx.value(_ACCESS)
    if not isinstance(access, CallAccess):
        return
    right = right or access.right
    if right is None:
        return
    if not access.grants.allows(access.identity, access.catalog, schema, right):
        raise PermissionDenied(
            identity=go_quote(access.identity),
            right=right.value,
            catalog=go_quote(access.catalog),
            schema=go_quote(schema),
        )


def admit_schema(ctx: Context, name: str) -> None:
    """A schema name a call may look up: one the name rule allows, on which the call's
    identity holds the right the call needs."""
    check_name("schema", name)
    require(ctx, name)


def authorize_table_read(ctx: Context, schema: str, table: str) -> None:
    """Refuse, as a scan of it would be refused, a read of schema.table by the call ctx
    belongs to: for functions that read a table they are given by name (the lake's history
    and table_changes), whatever schema the function itself is served in."""
    check_name("schema", schema)
    check_name("table", table)
    access = ctx.value(_ACCESS)
    where = (access.catalog if isinstance(access, CallAccess) else "", schema, table)
    try:
        require(ctx, schema, Right.READ)
    except PermissionDenied as exc:
        audit(ctx, "read", where, None, exc)
        raise
    audit(ctx, "read", where, None)


def may_read(ctx: Context, schema: str) -> bool:
    """Whether the call's identity may read schema (what a look into it, by a name another
    case finds, needs before it lists the schema's contents)."""
    access = ctx.value(_ACCESS)
    if not isinstance(access, CallAccess):
        return True
    return access.grants.allows(access.identity, access.catalog, schema, Right.READ)


def readable(ctx: Context, items: Iterable[T], name: Callable[[T], str]) -> list[T]:
    """The items (schemas, FlightInfos) whose schema name the call's identity may read."""
    return [item for item in items if may_read(ctx, name(item))]
