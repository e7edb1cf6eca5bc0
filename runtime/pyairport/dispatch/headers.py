"""Reading a call's headers as its protocol's row describes them (protocol §1.1)."""

from __future__ import annotations

from collections.abc import Mapping

from airport_contracts import ContextMeta
from airport_contracts.dispatch import PROTOCOLS, ROUTES
from airport_contracts.vocabulary import Protocol
from airport_support.rows import FunctionKindRow
from airport_support.vocabulary import HeaderRole

from .events import ExchangeRequest

_EXCHANGE = PROTOCOLS[Protocol.DOEXCHANGE]


# Headers the call was routed by (catalogs.py) or that fill its ContextMeta: optional, and
# nothing an operation reads.
_ROUTING_AND_CONTEXT = (
    HeaderRole.CATALOG,
    HeaderRole.TRACE_ID,
    HeaderRole.SESSION_ID,
    HeaderRole.USER_AGENT,
)


def parse_exchange_headers(metadata: Mapping[str, str] | None) -> ExchangeRequest:
    """A DoExchange call's headers, checked in the order of the protocol's row; the first
    problem is the answer. metadata maps lower-case names to their first value; None (or
    empty) means the call carried no metadata at all."""
    if not metadata:
        assert _EXCHANGE.no_metadata is not None
        raise _EXCHANGE.no_metadata()
    operation, path, returning, transaction_id = "", ("", ""), False, ""
    for header in _EXCHANGE.headers:
        value = metadata.get(header.name)
        if header.role is HeaderRole.TRANSACTION_ID:
            transaction_id = transaction_id or value or ""
        elif header.role in _ROUTING_AND_CONTEXT:
            continue
        elif header.role is HeaderRole.RETURNING:
            returning = value == header.true_value
        elif value is None:
            assert header.missing is not None
            raise header.missing()
        elif header.role is HeaderRole.OPERATION:
            operation = value
        elif header.role is HeaderRole.PATH:
            parts = value.split("/")
            if len(parts) != 2:
                assert header.invalid is not None
                raise header.invalid(path=value)
            path = (parts[0], parts[1])
    route = ROUTES.get((_EXCHANGE.id, operation))
    if route is None:
        assert _EXCHANGE.unknown_operation is not None
        raise _EXCHANGE.unknown_operation(operation=operation)
    if isinstance(route.row, FunctionKindRow) and not returning:
        # a function always answers (protocol §6.3)
        assert route.row.no_return_chunks is not None
        raise route.row.no_return_chunks()
    return ExchangeRequest(operation, path[0], path[1], returning, transaction_id)


def transaction_id_from_headers(protocol: str, metadata: Mapping[str, str]) -> str:
    """The first non-empty transaction header of the protocol, or ""."""
    for header in PROTOCOLS[protocol].headers:
        if header.role is HeaderRole.TRANSACTION_ID and metadata.get(header.name):
            return metadata[header.name]
    return ""


def catalog_from_headers(protocol: str, metadata: Mapping[str, str]) -> str | None:
    """The catalog the call's header names, or None without one."""
    for header in PROTOCOLS[protocol].headers:
        if header.role is HeaderRole.CATALOG and header.name in metadata:
            return metadata[header.name]
    return None


def context_meta(protocol: str, metadata: Mapping[str, str], authorization: str) -> ContextMeta:
    """What the call's headers say of its client (Go's EnrichContextMetadata); authorization:
    the name of the authorization header."""
    by_role = {h.role: metadata.get(h.name, "") for h in reversed(PROTOCOLS[protocol].headers)}
    return ContextMeta(
        authorization=metadata.get(authorization, ""),
        trace_id=by_role.get(HeaderRole.TRACE_ID, ""),
        session_id=by_role.get(HeaderRole.SESSION_ID, ""),
        catalog_name=by_role.get(HeaderRole.CATALOG, ""),
        user_agent=by_role.get(HeaderRole.USER_AGENT, ""),
    )
