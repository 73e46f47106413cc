"""Where knowledge comes from: the Source protocol, registry, indexes, ingestion and ACLs."""
