"""What the five specs and protocol.md define, listed by hand from reading them.

The contract must hold every item here; a dropped or renamed item fails
test_spec_inventory. Keep this list independent of contracts.yaml: it is the check on it.
"""

INTERFACES = {
    # name: Go methods
    "Table": {"Name", "Comment", "ArrowSchema", "Scan"},  # base every spec extends
    "InsertableTable": {"Insert"},  # 001 §1, 003, 004
    "UpdatableTable": {"Update"},  # 001 §1, 003, 004
    "DeletableTable": {"Delete"},  # 001 §1, 003, 004
    "UpdatableBatchTable": {"Update"},  # 000 §1, 001 §2
    "DeletableBatchTable": {"Delete"},  # 000 §2, 001 §2
    "TransactionManager": {
        "BeginTransaction",
        "CommitTransaction",
        "RollbackTransaction",
        "GetTransactionStatus",
    },  # 004
}

TYPES = {
    "DMLOptions": {"returning", "returning_columns"},  # 003
    "DMLResult": {"affected_rows", "returning_data"},  # 004
    "UpdateError": {"row_id", "cause"},  # 000 §5
}

ENUMS = {"TransactionState": {"active", "committed", "aborted"}}  # 004

HELPERS = {"FindRowIDColumn", "WithTransactionID", "TransactionIDFromContext"}  # 000 §3, 004

PAYLOADS = {
    "InsertDescriptor": {"operation", "schema_name", "table_name", "returning"},  # 004
    "UpdateDescriptor": {"operation", "schema_name", "table_name", "row_ids", "returning"},  # 004
    "DeleteAction": {"schema_name", "table_name", "row_ids", "returning"},  # 004
    "DMLResponse": {"status", "affected_rows", "returning_data", "error_message"},  # 004
    "DeleteActionResult": {"status", "affected_rows", "returning_data"},  # 002 DELETE response
    "FinalMetadata": {"total_changed"},  # protocol §1.4
    "CreateTransactionRequest": {"catalog_name"},  # protocol §2.2
    "CreateTransactionResponse": {"identifier"},  # protocol §2.2
    "GetTransactionStatusRequest": {"transaction_id"},  # protocol §2.3
    "GetTransactionStatusResponse": {"status", "exists"},  # protocol §2.3
}

VALIDATION_RULES = {"VR-001", "VR-002", "VR-003", "VR-004"}  # 001 §8
MATRIX_ROWS = 7  # 001 §10

# Error messages as the specs word them, after the contract's choice where two differ.
# (code, message with {placeholders} as in contracts.yaml)
ERRORS = {
    # 000 §5
    ("INVALID_ARGUMENT", "UPDATE requires rowid column in input schema"),
    ("INVALID_ARGUMENT", "rowid column must be Int64, Int32, or Uint64"),
    ("FAILED_PRECONDITION", "table '{table}' does not support UPDATE operations"),
    ("FAILED_PRECONDITION", "table '{table}' does not support DELETE operations"),
    # 001 §8 VR-001 for DELETE
    ("INVALID_ARGUMENT", "DELETE requires rowid column"),
    # 002 INSERT
    ("NOT_FOUND", "schema '{schema}' not found"),
    ("NOT_FOUND", "table '{schema}.{table}' not found"),
    ("FAILED_PRECONDITION", "table '{table}' does not support INSERT operations"),
    (
        "INVALID_ARGUMENT",
        "column mismatch: table has {table_columns} columns, input has {input_columns}",
    ),
    # 002 UPDATE
    ("INVALID_ARGUMENT", "row_ids cannot be empty for UPDATE"),
    ("INVALID_ARGUMENT", "row_ids count ({row_ids}) does not match input rows ({rows})"),
    ("FAILED_PRECONDITION", "table '{table}' does not support UPDATE (no rowid)"),
    ("NOT_FOUND", "row_id {row_id} not found in table"),
    # 002 DELETE
    ("INVALID_ARGUMENT", "row_ids cannot be empty for DELETE"),
    ("FAILED_PRECONDITION", "table '{table}' does not support DELETE (no rowid)"),
    # 004 (rows not already above)
    ("INVALID_ARGUMENT", "schema mismatch: {details}"),
    ("FAILED_PRECONDITION", "transaction {tx_id} is not active (state: {state})"),
    ("UNIMPLEMENTED", "transaction manager not configured"),
    # protocol §1.11
    ("INVALID_ARGUMENT", "missing metadata"),
    ("INVALID_ARGUMENT", "missing airport-operation header"),
    ("INVALID_ARGUMENT", "missing airport-flight-path in metadata"),
    ("INVALID_ARGUMENT", "invalid flight path format: {path}"),
    (
        "INVALID_ARGUMENT",
        "invalid airport-operation: {operation} (expected scalar_function, table_function, table_function_in_out, insert, update, or delete)",
    ),
    ("INTERNAL", "failed to get schema: {error}"),
    ("INTERNAL", "failed to get table: {error}"),
    ("INTERNAL", "failed to create input record reader: {error}"),
    ("INTERNAL", "failed to send output schema: {error}"),
    ("INTERNAL", "{operation} failed: {error}"),
    ("INTERNAL", "failed to encode final metadata: {error}"),
    # protocol §1.8 (arrive as "<OP> failed: ...")
    ("INTERNAL", "{operation} failed: cannot convert type {source} to {target}"),
    (
        "INTERNAL",
        "{operation} failed: column type mismatch and transformation not implemented: {source} -> {target}",
    ),
    # protocol §2.1-2.3
    ("UNIMPLEMENTED", "unknown action type: {type}"),
    ("INVALID_ARGUMENT", "invalid parameters: failed to decode MessagePack: {error}"),
    ("INTERNAL", "failed to create transaction: {error}"),
    ("INTERNAL", "failed to encode response: {error}"),
}

DEVIATIONS = {  # protocol.md "How pyairport uses this"
    "statement_atomic",
    "answer_every_batch",
    "null_rowid_rejected",
    "transaction_header_aliases",
}

# Spec 000's "Contract Tests" (§1-3) and the Python test that runs each.
CONTRACT_TESTS = {
    "TestUpdatableBatchTable_Update_Basic": "test_updatable_batch_table_update_basic",
    "TestUpdatableBatchTable_Update_Returning": "test_updatable_batch_table_update_returning",
    "TestUpdatableBatchTable_Update_NoRowidColumn": "test_updatable_batch_table_update_no_rowid_column",
    "TestUpdatableBatchTable_Update_EmptyReader": "test_updatable_batch_table_update_empty_reader",
    "TestUpdatableBatchTable_Update_ContextCancellation": "test_updatable_batch_table_update_context_cancellation",
    "TestDeletableBatchTable_Delete_Basic": "test_deletable_batch_table_delete_basic",
    "TestDeletableBatchTable_Delete_Returning": "test_deletable_batch_table_delete_returning",
    "TestDeletableBatchTable_Delete_NoRowidColumn": "test_deletable_batch_table_delete_no_rowid_column",
    "TestDeletableBatchTable_Delete_EmptyReader": "test_deletable_batch_table_delete_empty_reader",
    "TestDeletableBatchTable_Delete_ContextCancellation": "test_deletable_batch_table_delete_context_cancellation",
    # the table-driven test_find_rowid_column has one case per Go test, plus the nil case
    "TestFindRowIDColumn_ByName": "test_find_rowid_column",
    "TestFindRowIDColumn_ByMetadata": "test_find_rowid_column",
    "TestFindRowIDColumn_NameTakesPrecedence": "test_find_rowid_column",
    "TestFindRowIDColumn_NotFound": "test_find_rowid_column",
    "TestFindRowIDColumn_NilSchema": "test_find_rowid_column_nil_schema",
}
