"""The search graph for LangGraph Studio / ``langgraph dev`` (services built from settings).

A run without a user in its context acts as ``SEEKGRAPH_USER``; ``langgraph.json`` sets it
to ``bob``, the demo workspace's least-privileged user, so a first run in Studio works and
shows nothing restricted. Set it (or the run's context) to a user of your own workspace.
"""

from dataclasses import dataclass, field

from graph.context import Context
from graph.search import build_search_graph
from nodes.services import set_services
from server.bootstrap import build_services
from server.settings import Settings

settings = Settings()
set_services(build_services(settings)[0])


@dataclass(frozen=True, kw_only=True)
class StudioContext(Context):
    """``Context`` whose user defaults to ``SEEKGRAPH_USER``."""

    user: str = field(
        default=settings.user or "",
        metadata={"description": "Who asks; the permission context of the run."},
    )


graph = build_search_graph(context_schema=StudioContext).compile(name="seekgraph-search")
