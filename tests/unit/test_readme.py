"""The README documents what the code does: its diagram and its knobs stay current."""

from dataclasses import fields
from pathlib import Path

from graph.search import build_search_graph
from nodes.context import Context
from server.settings import Settings

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_readme_diagram_is_the_graph() -> None:
    diagram = build_search_graph(None).compile().get_graph().draw_mermaid().strip()
    assert diagram in README, "regenerate the README diagram with `seekgraph diagram`"


def test_readme_lists_every_context_field_and_setting() -> None:
    for f in fields(Context):
        assert f"`{f.name}`" in README, f.name
    for name in Settings.model_fields:
        assert f"SEEKGRAPH_{name.upper()}" in README, name
