"""What server and client both put on the wire: Arrow IPC framing, DuckDB's column ids and Go's
quoting of names in messages."""
