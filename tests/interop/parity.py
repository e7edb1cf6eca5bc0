"""The differences between pyairport and airport-go that are expected, each tied to a
deviation of contracts.yaml (the reason) and limited to the scenario steps it explains.
Any other difference between the two servers' answers is a conformance failure."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from airport_contracts.contract import DEVIATIONS

from .scenarios import SCENARIOS
from .wire import Wire

DEVIATION_DOCS = {d.id: d.doc for d in DEVIATIONS}

# {scenario: {step: (deviation id, what the difference is)}}
EXPECTED: dict[str, dict[str, tuple[str, str]]] = {
    "delete_returning_matches_nothing": {
        "delete": ("answer_every_batch", "pyairport answers the batch with 0 rows; Go sends none"),
    },
    "null_rowid": {
        "legacy_update": (
            "null_rowid_rejected",
            "Go updates rowid 0 (none) and row 1; pyairport refuses",
        ),
        "legacy_table": ("null_rowid_rejected", "so Go changed row 1 and pyairport nothing"),
        "batch_update": (
            "null_rowid_rejected",
            "INVALID_ARGUMENT vs Go's INTERNAL 'UPDATE failed: …'",
        ),
        "batch_delete": (
            "null_rowid_rejected",
            "INVALID_ARGUMENT vs Go's INTERNAL 'DELETE failed: …'",
        ),
    },
    "rowid_of_wrong_type": {
        "update": ("rowid_errors_are_invalid_argument", "refused before the schema message"),
        "delete": ("rowid_errors_are_invalid_argument", "refused before the schema message"),
    },
    "delete_column_not_named_rowid": {
        "delete": ("delete_rowid_validated", "Go deletes by column 0 (id); pyairport refuses"),
        "table": ("delete_rowid_validated", "so Go removed a row and pyairport none"),
    },
    "failure_after_a_returning_batch": {
        "update": ("null_rowid_rejected", "the failing batch's status"),
        "table": ("statement_atomic", "Go kept the first batch's change; pyairport none"),
    },
    "insert_unknown_column": {
        "insert": (
            "client_input_is_invalid_argument",
            "INVALID_ARGUMENT schema mismatch before the schema message vs Go's INTERNAL",
        ),
    },
    "transaction_of_several_statements": {
        "failing": ("client_input_is_invalid_argument", "INVALID_ARGUMENT vs Go's INTERNAL"),
        "after_failure": (
            "transaction_spans_statements",
            "refused: the transaction is aborted; Go runs it",
        ),
        "table": ("transaction_spans_statements", "so Go inserted a row and pyairport none"),
    },
    "transaction_rolls_back_a_failed_statement": {
        "update": ("null_rowid_rejected", "INVALID_ARGUMENT vs Go's INTERNAL"),
    },
    "transaction_header_x_transaction_id": {
        "status": ("transaction_header_aliases", "Go ignores x-transaction-id: tx stays active"),
    },
    "transaction_unknown_id": {
        "insert": ("transaction_validated", "NOT_FOUND up front vs Go failing at commit"),
        "table": ("transaction_validated", "Go's rows were written before its commit failed"),
    },
    "ddl_session": {
        "add column if not exists": ("rowid_served_last", "the rowid last in the answered schema"),
        "add column": ("rowid_served_last", "the rowid last in the answered schema"),
        "add field": ("rowid_served_last", "the rowid last in the answered schema"),
        "change type": ("rowid_served_last", "the rowid last in the answered schema"),
        "create table if not exists": (
            "rowid_served_last",
            "the rowid last in the answered schema",
        ),
        "create table": ("rowid_served_last", "the rowid last in the answered schema"),
        "remove column": ("rowid_served_last", "the rowid last in the answered schema"),
        "remove field": ("rowid_served_last", "the rowid last in the answered schema"),
        "remove missing column if exists": (
            "rowid_served_last",
            "the rowid last in the answered schema",
        ),
        "rename column": ("rowid_served_last", "the rowid last in the answered schema"),
        "rename field": ("rowid_served_last", "the rowid last in the answered schema"),
        "rename table": ("rowid_served_last", "the rowid last in the answered schema"),
        "set default": (
            "alter_answers_flight_info",
            "a FlightInfo (rowid last) where Go answers nothing",
        ),
        "set not null": (
            "alter_answers_flight_info",
            "a FlightInfo (rowid last) where Go answers nothing",
        ),
        "drop not null": (
            "alter_answers_flight_info",
            "a FlightInfo (rowid last) where Go answers nothing",
        ),
    },
    "scan_tickets_and_rows": {
        "ticket": (
            "column_ids_as_duckdb_counts",
            "Go's ticket names id, the column before the name DuckDB asked for",
        ),
        "columns": ("rowid_served_last", "DoGet's schema has the rowid last"),
    },
    "attach_catalog": {
        "version_info": ("catalog_versioned", "is_fixed=false and a change counter"),
        "schemas": ("rowid_served_last", "the tables' FlightInfo schemas have the rowid last"),
    },
    "catalog_version": {
        "version": ("catalog_versioned", "is_fixed=false and a change counter"),
    },
    "plain_flight_calls": {
        "listed": ("list_flights_per_table", "one FlightInfo per table vs one catalog blob"),
        "info": ("rowid_served_last", "the FlightInfo schema has the rowid last"),
    },
    "spec002_protocols": {
        "put": ("spec002_protocols_served", "DoPut INSERT served; Go: UNIMPLEMENTED"),
        "delete_action": ("spec002_protocols_served", "delete action served; Go: UNIMPLEMENTED"),
    },
}

ServerFactory = Callable[[], AbstractContextManager[str]]


def observe(factory: ServerFactory, name: str) -> dict[str, Any]:
    """Run one scenario against a fresh server; what the client saw, step by step."""
    with factory() as location:
        wire = Wire(location)
        try:
            return SCENARIOS[name](wire)
        finally:
            wire.close()


def differing_steps(go: dict[str, Any], py: dict[str, Any]) -> set[str]:
    return {step for step in go.keys() | py.keys() if go.get(step) != py.get(step)}
