"""The research flow in LLM mode, against the project's OpenAI-compatible test model server.

The model plans (a DAG with a dependency), writes each section from its own passages and
edits the report in one coherence pass; a malformed plan is repaired once, then degraded to
the extractive plan.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from seekgraph.graph.context import Context, ResearchKnobs
from seekgraph.graph.flows import FLOWS
from seekgraph.graph.run import run, run_config
from seekgraph.providers.chat import ChatModelConfig, load_chat_model
from tests.conftest import make_services
from tests.support.processes import Proc, script_model, start_model_server

REQUEST = "Everything about the VPN, travel and single sign-on"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    server = start_model_server(tmp_path_factory.mktemp("research-llm"), delay=0.0, tokens=12)
    try:
        yield server
    finally:
        server.stop()


async def research(embedder, model: Proc, thread: str, **knobs):
    chat = load_chat_model(ChatModelConfig(model="m", base_url=model.url + "/v1", api_key="k"))
    graph = FLOWS["research"].compile(make_services(embedder, chat_model=chat), InMemorySaver())
    context = Context(user="bob", **knobs)
    done = await run(graph, {"question": REQUEST}, run_config(thread), context)
    state = (await graph.aget_state({"configurable": {"thread_id": thread}})).values
    return done, state


async def test_the_model_plans_writes_each_section_and_edits_the_report(embedder, model) -> None:
    script_model(model)
    done, state = await research(embedder, model, "llm-1")
    plan_event = next(
        e for e in done.events if e["event"] == "node" and e["node"] == "plan_research"
    )
    assert plan_event["detail"]["planned_by"] == "llm"
    assert [s["id"] for s in state["plan"]][:3] == ["q1", "q2", "q3"]
    assert state["plan"][2]["depends_on"] == ["q1"]
    # q3's placeholder was filled with q1's answer before it was searched
    assert "{q1}" not in state["results"]["q3"]["question"]
    report = done.values["answer"]
    assert done.values["mode"] == "llm"
    headings = re.findall(r"^## (.+)$", report, re.M)
    titles = [s["title"] for s in state["sections"]]
    assert headings[1 : 1 + len(titles)] == titles  # the coherence pass's order
    assert [s["id"] for s in state["sections"]] == sorted(
        (s["id"] for s in state["sections"]), reverse=True
    )
    body = re.split(r"\n## (?:Sources disagree|What could not be found)|\n\[1\]:", report)[0]
    assert "The sources say:" in body and not re.search(r"^- ", body, re.M)  # prose
    refs = {r["id"] for r in done.values["references"]}
    assert refs and refs <= set(state["ledger"])  # every citation is this run's evidence
    cited = re.findall(r"\[(\d+)\]", body)
    assert len(cited) == len(set(cited))  # the repeated citation was edited out
    outcomes = [(c["node"], c["outcome"]) for c in state["model_calls"]]
    assert outcomes[0] == ("plan_research", "ok")
    writes = [o for n, o in outcomes if n == "write_report"]
    assert writes and set(writes) == {"ok"}  # sections and coherence, all by the model
    # what the first report lacked was asked again, in the model's words, once
    assert state["gap_round"] == 1 and ("plan_gaps", "ok") in outcomes
    assert state["results"]["g1"]["question"].startswith("Which sources mention")
    # the request's third part, which the model's plan left out, is planned all the same
    assert [s["id"] for s in state["plan"]] == ["q1", "q2", "q3", "q4", "g1"]  # one round only
    assert state["plan"][3]["title"] == "Single sign-on"
    assert "kb/secret" not in json.dumps([done.values, state])  # bob's report


async def test_the_parts_a_request_names_keep_their_sub_questions_and_headings(
    embedder, model
) -> None:
    # Qwen 1.5B planned "…IT access: VPN, SSO, and expenses?" with its keyword queries as
    # titles ("Fernhill purpose VPN context access employee"), which became the headings
    drafted = {
        "sub_questions": [
            {"id": "q1", "question": "VPN access employee", "title": "Fernhill VPN context access"},
            {"id": "q2", "question": "costs of travel", "title": "Common travel costs associated"},
            {"id": "q3", "question": "Which laptops are handed out?", "title": "Laptops"},
        ]
    }
    script_model(model, {"content": json.dumps(drafted)})
    done, state = await research(embedder, model, "llm-parts")
    plan_event = next(
        e for e in done.events if e["event"] == "node" and e["node"] == "plan_research"
    )
    assert plan_event["detail"]["planned_by"] == "llm"
    titles = [s.get("title") for s in state["plan"] if not s.get("gap_for")]
    assert titles == ["VPN", "Travel", "Laptops", "Single sign-on"]
    assert state["plan"][0]["question"] == "VPN access employee"  # the model's search stays
    headings = re.findall(r"^## (.+)$", done.values["answer"], re.M)
    assert "Fernhill VPN context access" not in headings
    assert {"VPN", "Single sign-on"} <= set(headings)


async def test_a_malformed_plan_is_repaired_once_then_degraded(embedder, model) -> None:
    cycle = {
        "sub_questions": [
            {"id": "a", "question": "What does {b} cost?", "depends_on": ["b"]},
            {"id": "b", "question": "Which VPN does {a} use?", "depends_on": ["a"]},
        ]
    }
    script_model(model, {"content": json.dumps(cycle)})
    done, state = await research(embedder, model, "llm-2")
    assert state["model_calls"][0]["outcome"] == "repaired"
    assert [s["id"] for s in state["plan"]][:3] == ["q1", "q2", "q3"]

    script_model(model, {"content": json.dumps(cycle)}, {"content": "a plan, in prose"})
    done, state = await research(embedder, model, "llm-3")
    first = state["model_calls"][0]
    assert first["node"] == "plan_research" and first["outcome"] == "degraded"
    plan_event = next(
        e for e in done.events if e["event"] == "node" and e["node"] == "plan_research"
    )
    assert "planned_by" not in plan_event["detail"]  # the corpus's topics planned it
    assert state["plan"] and done.values["references"]


async def test_spent_tokens_stop_the_next_batch_and_the_report_says_so(embedder, model) -> None:
    script_model(model)
    _, free = await research(embedder, model, "llm-4")
    plan_tokens = free["model_calls"][0]["tokens"]
    assert plan_tokens and all(free["results"][i]["tokens"] > 1000 for i in ("q1", "q2"))
    # enough for the plan and the first batch to start, not for the second
    done, state = await research(
        embedder, model, "llm-5", research=ResearchKnobs(report_max_tokens=plan_tokens + 1000)
    )
    status = {i: r["status"] for i, r in state["results"].items()}
    # the first batch: the model's q1, q2 and the request's part it left out (q4)
    assert status == {"q1": "done", "q2": "done", "q4": "done", "q3": "skipped"}
    assert "token budget was spent" in state["results"]["q3"]["reason"]
    missing = done.values["answer"].split("## What could not be found")[1]
    assert "token budget was spent" in missing
