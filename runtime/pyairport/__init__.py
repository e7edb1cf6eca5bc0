"""pyairport: an Arrow Flight server for DuckDB's Airport extension and any Flight client,
contract-identical to airport-go (see airport_contracts)."""

__version__ = "0.1.0"
