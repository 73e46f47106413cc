"""The per-run ``Context`` of the graphs (defined beside the nodes that read it)."""

from nodes.context import Context

__all__ = ["Context"]
