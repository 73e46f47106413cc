"""The run's knobs, grouped: as JSON (LangGraph Studio, the SDK), as a carried run, as flags."""

from __future__ import annotations

import argparse

import pytest

from seekgraph.graph.context import Context, context_from_dict, context_to_dict
from seekgraph.server.cli.common import add_knobs, knobs_of
from tests.conftest import make_services, run_graph
from tests.factories import single_doc_source


async def test_a_context_sent_as_json_reaches_the_nodes_with_its_groups(embedder) -> None:
    # LangGraph turns the context dict of Studio or the SDK into Context(**dict); a group
    # arrives as a dict and must work as its dataclass does
    services = make_services(embedder, [single_doc_source()])
    sent = {"user": "bob", "search": {"max_variants": 1}, "filtering": {"fastpass_enabled": False}}
    run = await run_graph(services, "WireGuard VPN client", sent)  # type: ignore[arg-type]
    ev = run.state.values["evidence"][0]
    assert ev["kept_by"] == "rerank"  # FastPass off: the hit went through the reranker
    assert len(run.state.values["tried_queries"]) == 1


def test_a_misspelt_knob_in_a_group_says_which_knobs_the_group_has() -> None:
    with pytest.raises(TypeError, match="filtering has no knob 'rerank_enable'; its knobs: .*"):
        Context(filtering={"rerank_enable": False})  # type: ignore[arg-type]


def test_studio_shows_each_group_with_its_knobs_described(services) -> None:
    from seekgraph.graph.flows import FLOWS
    from seekgraph.server.studio import studio_context

    studio = studio_context()  # what ``langgraph dev`` compiles the flows with
    schema = FLOWS["search"].compile(services, context_schema=studio).get_context_jsonschema()
    assert schema is not None
    assert {"user", "mode", "max_rounds", "filtering", "offline", "web", "research"} <= set(
        schema["properties"]
    )
    rerank = schema["$defs"]["FilteringKnobs"]["properties"]["rerank_enabled"]
    assert rerank["default"] is True and rerank["description"] == "Enable the rerank stage."
    assert schema["$defs"]["ResearchKnobs"]["properties"]["report_words"]["minimum"] == 100
    assert studio(user="bob", web={"max_pages": 1}).web.max_pages == 1  # as Studio sends it


def test_a_run_recorded_before_the_grouping_continues_with_its_knobs() -> None:
    # an older instance recorded the flat names; this one continues the run as it was asked
    old = {"user": "bob", "mode": "extractive", "max_rounds": 2, "report_words": 800}
    context = context_from_dict(old)
    assert (context.user, context.max_rounds, context.research.report_words) == ("bob", 2, 800)
    carried = context_to_dict(context)
    assert carried["research"] == {"report_words": 800, "report_max_tokens": 400_000}
    assert context_from_dict(carried) == context


def test_a_knob_given_flat_and_grouped_is_refused_with_the_name_to_keep() -> None:
    with pytest.raises(ValueError, match="send research.report_words only"):
        context_from_dict({"report_words": 800, "research": {"report_words": 900}})


def test_the_command_line_keeps_its_flags_for_grouped_knobs() -> None:
    parser = argparse.ArgumentParser()
    add_knobs(parser)
    args = parser.parse_args(["--report-words", "800", "--max-rounds", "2", "--source", "kb"])
    context = Context(user="bob", **knobs_of(args))
    assert context.research.report_words == 800 and context.max_rounds == 2
    assert context.sources == ("kb",) and context.research.report_max_tokens == 400_000
