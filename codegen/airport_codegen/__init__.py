"""airport_codegen: contracts.yaml → generated/airport_contracts (load, model, render)."""
