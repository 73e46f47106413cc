"""What flows through seekgraph: schemas, evidence models, events and reducers (no I/O)."""
