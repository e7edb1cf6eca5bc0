"""Table backends: memory (the reference) and spark (Delta tables)."""
