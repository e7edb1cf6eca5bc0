"""The vocabularies of the contract's rows: the values contracts.yaml may give an operation's
or a protocol's fields. The loader accepts exactly these; the dispatch library compares rows
against these members, never against bare strings. (The contract's own vocabularies — its
protocols, operations, rules, headers and actions — are generated: airport_contracts.vocabulary.)
"""

from __future__ import annotations

import enum


class HeaderRole(enum.StrEnum):
    """What a protocol reads a header for."""

    OPERATION = "operation"
    RETURNING = "returning"
    PATH = "path"
    TRANSACTION_ID = "transaction_id"
    CATALOG = "catalog"
    TRACE_ID = "trace_id"  # the call's ContextMeta (Go: EnrichContextMetadata)
    SESSION_ID = "session_id"
    USER_AGENT = "user_agent"


class TableErrors(enum.StrEnum):
    """How a table's exceptions reach the client."""

    WRAP = "wrap"  # any table error becomes operation_failed (DoExchange, as Go does)
    PASS_CONTRACT_ERRORS = "pass_contract_errors"  # a contract error reaches the client as is


class CapabilityCheck(enum.StrEnum):
    """When an operation checks the table's interfaces."""

    UNSET = ""  # an operation without interfaces
    BEFORE_READ = "before_read"
    AFTER_READ = "after_read"
    AFTER_ROWID_CHECK = "after_rowid_check"


class RowidSource(enum.StrEnum):
    """Where an operation's rowids come from."""

    UNSET = ""
    NONE = "none"
    INPUT_ROWID_COLUMN = "input_rowid_column"
    DESCRIPTOR_ROW_IDS = "descriptor_row_ids"


class OutputSchema(enum.StrEnum):
    """The schema a DoExchange operation answers with."""

    UNSET = ""
    INPUT = "input"
    TABLE_PROJECTED_TO_RETURNING_COLUMNS = "table_projected_to_returning_columns"


class TotalChanged(enum.StrEnum):
    """How a DoExchange operation counts total_changed."""

    UNSET = ""
    INPUT_ROWS = "input_rows"
    AFFECTED_ROWS_OR_INPUT_ROWS_WITH_RETURNING = "affected_rows_or_input_rows_with_returning"


class RulePhase(enum.StrEnum):
    """Where in a statement a validation rule is checked."""

    CONSTRUCTION = "construction"  # holds by how the library is built; nothing to check
    INPUT_SCHEMA = "input_schema"  # once the input's schema is known, before anything else
    ROWID_COLUMN = "rowid_column"  # the input's rowid column found: before or after the
    # interface check, as the operation's capability_check says
    ROWID_TYPE = "rowid_type"  # the rowid column's type, after the interface check
    INPUT_BATCHES = "input_batches"  # the input against the table, then each batch as read
    ROW_IDS = "row_ids"  # a spec-002 request's row_ids list, before the statement
    ROWS_READ = "rows_read"  # a spec-002 UPDATE's rows, once all are read
