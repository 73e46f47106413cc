"""The README's picture of the flows is the graph the code builds."""

from pathlib import Path

from seekgraph.graph.search import build_search_graph

REPO = Path(__file__).resolve().parents[2]


def test_readme_diagram_is_the_graph() -> None:
    diagram = build_search_graph(None).compile().get_graph().draw_mermaid().strip()
    for page in ("README.md", "docs/concepts.md"):
        text = (REPO / page).read_text()
        assert diagram in text, f"regenerate the diagram in {page} with `seekgraph diagram`"
