"""The search graph for LangGraph Studio / ``langgraph dev`` (services built from settings)."""

from graph.search import build_search_graph
from nodes.services import set_services
from server.bootstrap import build_services
from server.settings import Settings

set_services(build_services(Settings())[0])

graph = build_search_graph().compile(name="seekgraph-search")
