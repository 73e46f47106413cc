"""seekgraph: a composite retrieval agent that answers with citations it can prove."""
