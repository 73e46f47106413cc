"""The HTTP API in process (httpx's ASGI transport): flows, admission, the thread's state.

Beside the real-process server tests: the same app, its lifespan run here, the bundled demo
workspace on SQLite checkpoints.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from seekgraph.server.auth import add_key_to_file
from seekgraph.server.http.app import create_app
from seekgraph.server.settings import Settings
from tests.support import RESTRICTED_MARKERS

FLOWS_PAGE = (Path(__file__).resolve().parents[2] / "docs" / "flows.md").read_text()


def frames(body: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for raw in body.split("\n\n"):
        event = re.search(r"^event: (.+)$", raw, re.M)
        data = re.search(r"^data: (.+)$", raw, re.M)
        if event and data:
            out.append((event.group(1), json.loads(data.group(1))))
    return out


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One data folder (the demo indexed once) and one API key for the module."""
    tmp = tmp_path_factory.mktemp("inprocess")
    return tmp, add_key_to_file(tmp / "keys.json", "bob")


@asynccontextmanager
async def serving(workdir: tuple[Path, str]) -> AsyncIterator[httpx.AsyncClient]:
    """The app, its lifespan entered and left in the test's own task (anyio asks it)."""
    tmp, key = workdir
    settings = Settings(
        data_dir=tmp / "data",
        api_keys_file=tmp / "keys.json",
        redis_url=None,
        max_question_chars=5000,
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(
            transport=transport, base_url="http://test", headers=headers, timeout=120
        ) as client:
            yield client


async def thread(api: httpx.AsyncClient) -> str:
    return str((await api.post("/threads")).json()["thread_id"])


async def test_the_flows_are_listed_and_a_run_chooses_one(workdir) -> None:
    async with serving(workdir) as api:
        names = [f["name"] for f in (await api.get("/flows")).json()]
        assert names == ["search", "quick", "reviewed", "research"]
        t = await thread(api)
        body = {"question": "How do I connect to the VPN from a new laptop?", "flow": "quick"}
        done = frames((await api.post(f"/threads/{t}/runs", json=body)).text)
        nodes = [d["node"] for kind, d in done if kind == "node"]
        assert nodes.count("expand_query") == 1 and "read_documents" not in nodes
        assert done[-2][0] == "answer" and "[src:" in done[-2][1]["answer"]
        assert done[-2][1]["status"] in ("answered", "passages")  # how far the answer goes
        assert ended(done) == "done"
        state = (await api.get(f"/threads/{t}/state")).json()["values"]
        assert state["budget"]["rounds"] == 1 and state["evidence"]  # the search's own state
        again = await api.post(f"/threads/{t}/runs", json={**body, "flow": "search"})
        assert again.status_code == 422
        assert "this thread runs the 'quick' flow" in again.json()["detail"]
        fresh = await thread(api)
        unknown = await api.post(f"/threads/{fresh}/runs", json={**body, "flow": "x"})
        assert (
            unknown.status_code == 422
            and "flows: search, quick, reviewed, research" in unknown.text
        )


async def test_what_the_route_admits_the_graph_runs(workdir) -> None:
    async with serving(workdir) as api:
        # The limit is the configured one (5000) in the route and in the graph alike: the graph's
        # old hard-coded 4000 stopped such a run after its stream and lock had started.
        question = "How do I connect to the VPN from a new laptop? " + "Thanks. " * 520
        assert 4000 < len(question.strip()) <= 5000
        done = frames(
            (await api.post(f"/threads/{await thread(api)}/runs", json={"question": question})).text
        )
        assert [k for k, _ in done if k == "error"] == [] and done[-1][1]["status"] == "done"
        longer = {"question": question + "x" * 1000}
        refused = await api.post(f"/threads/{await thread(api)}/runs", json=longer)
        assert refused.status_code == 422 and "the limit is 5000" in refused.json()["detail"]
        asked = {"question": "vpn?", "mode": "llm"}  # no chat model is configured here
        refused = await api.post(f"/threads/{await thread(api)}/runs", json=asked)
        assert refused.status_code == 422 and "needs a configured chat model" in refused.text


async def test_the_history_shows_the_searchs_own_steps(workdir) -> None:
    async with serving(workdir) as api:
        t = await thread(api)
        await api.post(f"/threads/{t}/runs", json={"question": "What is the daily meal allowance?"})
        history = (await api.get(f"/threads/{t}/history")).json()
        wrote = [n for item in history for n in item["wrote"]]
        assert wrote.index("prepare") < wrote.index("check_answer") < wrote.index("remember")
        assert {"search", "remember", "filter_results", "evaluate", "integrate"} <= set(wrote)


def test_the_docs_flow_example_runs(tmp_path, monkeypatch) -> None:
    import asyncio

    code = FLOWS_PAGE.split("```python", 1)[1].split("```")[0]
    monkeypatch.setenv("SEEKGRAPH_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("SEEKGRAPH_LLM_MODEL", raising=False)
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/flows.md", "exec"), namespace)
    printed: list[str] = []
    namespace["print"] = printed.append
    asyncio.run(namespace["main"]())
    assert "vpn" in printed[0].lower() and "[src:" in printed[0]


async def test_a_research_report_runs_through_the_api(workdir) -> None:
    async with serving(workdir) as api:
        t = await thread(api)
        body = {"question": "Everything about the VPN and single sign-on", "flow": "research"}
        done = frames((await api.post(f"/threads/{t}/runs", json=body)).text)
        nodes = [d["node"] for kind, d in done if kind == "node"]
        assert nodes[0] == "plan_research" and nodes[-1] == "check_report"
        assert "research_one" in nodes and "prepare" in nodes  # the search's own steps stream
        [answer] = [d for kind, d in done if kind == "answer"]
        assert "## Contents" in answer["answer"] and "[1]" in answer["answer"]
        assert ended(done) == "done"
        state = (await api.get(f"/threads/{t}/state")).json()["values"]
        assert state["plan"] and state["references"]
        seen = json.dumps([done, state])
        assert not [m for m in RESTRICTED_MARKERS if m in seen]  # bob's report


async def test_a_research_run_takes_your_plan_checked_and_traces_it(workdir) -> None:
    async with serving(workdir) as api:
        cycle = [
            {"id": "a", "question": "What does {b} cost?", "depends_on": ["b"]},
            {"id": "b", "question": "Which VPN does {a} use?", "depends_on": ["a"]},
        ]
        body = {"question": "VPN costs", "flow": "research", "plan": cycle}
        refused = await api.post(f"/threads/{await thread(api)}/runs", json=body)
        assert refused.status_code == 422 and "cycle: a → b → a" in refused.json()["detail"]
        not_research = {**body, "flow": "search"}
        refused = await api.post(f"/threads/{await thread(api)}/runs", json=not_research)
        assert refused.status_code == 422 and "for the research flow" in refused.text
        t = await thread(api)
        plan = [{"id": "vpn", "question": "How do I connect to the VPN?", "title": "The VPN"}]
        response = await api.post(
            f"/threads/{t}/runs", json={**body, "plan": plan, "question": "The VPN"}
        )
        done = frames(response.text)
        [answer] = [d for kind, d in done if kind == "answer"]
        assert "## The VPN" in answer["answer"]
        traces = {
            d["detail"].get("trace_id")
            for kind, d in done
            if kind == "node" and d["node"] in ("plan_research", "research_one", "check_report")
        }
        assert len(traces) == 1 and traces.pop()  # one trace id, the run's
        state = (await api.get(f"/threads/{t}/state")).json()["values"]
        assert state["plan_status"] == "written" and state["plan"][0]["id"] == "vpn"
        history = (await api.get(f"/threads/{t}/history")).json()
        assert history[-1]["summary"]["results"] == {"vpn": {"status": "done", "reason": ""}}


async def test_a_plan_under_review_is_edited_through_the_api_and_a_bad_edit_is_a_422(
    workdir,
) -> None:
    async with serving(workdir) as api:
        t = await thread(api)
        body = {"question": "The VPN", "flow": "research", "review_before_answer": True}
        paused = frames((await api.post(f"/threads/{t}/runs", json=body)).text)
        [waiting] = [d for kind, d in paused if kind == "waiting"]
        assert waiting["interrupts"][0]["value"]["plan"]
        assert ended(paused) == "waiting"
        cycle = [{"id": "a", "question": "x", "depends_on": ["a"]}]
        refused = await api.post(f"/threads/{t}/resume", json={"resume": {"plan": cycle}})
        assert refused.status_code == 422 and "cycle: a → a" in refused.json()["detail"]
        edit = [{"id": "vpn", "question": "How do I connect to the VPN from a new laptop?"}]
        done = frames(
            (await api.post(f"/threads/{t}/resume", json={"resume": {"plan": edit}})).text
        )
        [answer] = [d for kind, d in done if kind == "answer"]
        assert "vpn2.fernhill.example" in answer["answer"] and answer["references"]
        assert ended(done) == "done"
        nothing = await api.post(f"/threads/{t}/resume", json={"resume": {"approve": True}})
        assert nothing.status_code == 422 and "nothing on this thread waits" in nothing.text


async def test_run_knobs_are_grouped_and_the_flat_names_of_before_are_still_read(
    workdir,
) -> None:
    too_short = "research.report_words: Input should be greater than or equal to 100"
    async with serving(workdir) as api:
        t = await thread(api)
        for knobs, said in [
            ({"research": {"report_words": 50}}, too_short),
            ({"report_words": 50}, too_short),  # the flat name is read as its group's knob
            (
                {"report_words": 800, "research": {"report_words": 900}},
                "research.report_words only",
            ),
            ({"research": {"report_word": 800}}, "research.report_word: Extra inputs"),
        ]:
            body = {"question": "The VPN", "flow": "research", **knobs}
            refused = await api.post(f"/threads/{t}/runs", json=body)
            assert refused.status_code == 422 and said in refused.json()["detail"], knobs
        # the LangGraph door's context takes them alike
        lg = await api.post("/langgraph/threads", json={})
        door = f"/langgraph/threads/{lg.json()['thread_id']}/runs/stream"
        asked = {"assistant_id": "research", "input": {"question": "The VPN"}}
        for context in ({"research": {"report_words": 50}}, {"report_words": 50}):
            refused = await api.post(door, json={**asked, "context": context})
            assert refused.status_code == 422 and too_short in refused.json()["detail"], context
        body = {"question": "How do I connect to the VPN?", "flow": "quick", "report_words": 800}
        done = frames((await api.post(f"/threads/{t}/runs", json=body)).text)
        assert ended(done) == "done"


def ended(events: list[tuple[str, dict[str, Any]]]) -> str:
    """The status of a run's last event, which must be its ``end`` (with the run's usage)."""
    kind, data = events[-1]
    assert kind == "end" and data["usage"]["tokens"] >= 0, events[-1]
    return str(data["status"])


async def test_a_follow_up_asked_the_moment_an_answer_ends_is_taken_not_refused_as_busy(
    workdir,
) -> None:
    """A client that asks again right after ``end`` finds the thread free (no 409)."""
    async with serving(workdir) as api:
        t = await thread(api)
        for question in ("How do I connect to the VPN?", "Which VPN host?", "And the VPN port?"):
            body = {"question": question, "flow": "quick"}
            response = await api.post(f"/threads/{t}/runs", json=body)
            assert response.status_code == 200, response.text
            assert ended(frames(response.text)) == "done"


async def test_without_redis_background_runs_queue_in_the_process_and_can_be_stopped(
    workdir,
) -> None:
    """One instance on SQLite: its in-process worker takes background runs."""
    async with serving(workdir) as api:
        t = await thread(api)
        body = {"question": "How do I connect to the VPN from a new laptop?", "stream": False}
        accepted = await api.post(f"/threads/{t}/runs", json=body)
        assert accepted.status_code == 202, accepted.text
        run = accepted.json()["run_id"]
        joined = (await api.post(f"/threads/{t}/runs/{run}/join")).json()
        assert joined["run"]["status"] == "success" and "[src:" in joined["values"]["answer"]
        research = {"question": "VPN, SSO and meals", "flow": "research", "stream": False}
        other = await thread(api)
        second = (await api.post(f"/threads/{other}/runs", json=research)).json()["run_id"]
        stopped = await api.post(f"/threads/{other}/runs/{second}/cancel", params={"wait": True})
        assert stopped.json()["status"] == "cancelled", stopped.text
        listed = (await api.get(f"/threads/{other}/runs")).json()
        assert [(r["run_id"], r["status"]) for r in listed] == [(second, "cancelled")]
        assert (await api.get(f"/threads/{other}/runs/nope")).status_code == 404
