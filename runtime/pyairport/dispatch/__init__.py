"""The dispatch library: runs any operation of the contract from its row.

The generated package says what each operation is (`airport_contracts.dispatch`: its row,
its stub); this package does it, written once: read the request, look the table up, pick
the interface (batch first), apply the validation rules, run the table inside a statement
scope and a transaction, shape the answer, commit or roll back. It knows nothing of gRPC; a
transport hands it decoded requests and input streams and sends what it returns.
"""

from .dispatcher import Dispatcher
from .events import (
    ExchangeEvent,
    ExchangeInput,
    ExchangeRequest,
    OutputBatch,
    OutputFinal,
    OutputSchema,
    StaticInput,
    final_metadata,
)
from .headers import (
    catalog_from_headers,
    context_meta,
    parse_exchange_headers,
    transaction_id_from_headers,
)
from .served_scan import ProgressReport, ServedScan

__all__ = [
    "Dispatcher",
    "ExchangeEvent",
    "ExchangeInput",
    "ExchangeRequest",
    "OutputBatch",
    "OutputFinal",
    "OutputSchema",
    "ProgressReport",
    "ServedScan",
    "StaticInput",
    "final_metadata",
    "parse_exchange_headers",
    "transaction_id_from_headers",
    "catalog_from_headers",
    "context_meta",
]
