"""Wiring only: graph builders, pure routers and the per-run Context."""
