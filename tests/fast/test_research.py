"""The research flow's paths on in-memory sources: plans, batches, slices, failures, review."""

from __future__ import annotations

import dataclasses
import re

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from seekgraph.graph.context import Context, FilteringKnobs, ResearchKnobs, SearchKnobs
from seekgraph.graph.flows import FLOWS
from seekgraph.graph.run import run, run_config
from seekgraph.nodes.reader.report_plan import topic_headings, topic_words
from seekgraph.nodes.reader.request_parts import named_parts, part_title
from seekgraph.providers import pace
from seekgraph.providers.chat import SERVING
from seekgraph.state.plans import PlanError, checked_plan

PLAN = [
    {"id": "q1", "question": "What is the daily meal allowance?", "intent": "the amount only"},
    {
        "id": "q2",
        "question": "Since when does {q1} apply?",
        "depends_on": ["q1"],
        "intent": "the date the amount changed; not the amount",
    },
    {"id": "q3", "question": "How do I install the WireGuard VPN client?"},
]


def test_a_plan_with_a_cycle_or_a_dangling_reference_is_refused_with_what_to_fix() -> None:
    cycle = [
        {"id": "a", "question": "x", "depends_on": ["b"]},
        {"id": "b", "question": "y", "depends_on": ["a"]},
    ]
    with pytest.raises(PlanError, match=r"cycle: (a → b → a|b → a → b)"):
        checked_plan(cycle)
    with pytest.raises(PlanError, match="q2 depends on unknown q9"):
        checked_plan([{"id": "q2", "question": "x", "depends_on": ["q9"]}])
    with pytest.raises(PlanError, match=r"q2 names \{q1\} without depending on it"):
        checked_plan([{"id": "q1", "question": "a"}, {"id": "q2", "question": "{q1}?"}])
    assert [s["id"] for s in checked_plan(PLAN)] == ["q1", "q2", "q3"]


async def test_a_written_plan_runs_in_batches_and_a_dependent_gets_only_its_slice(
    services,
) -> None:
    graph = FLOWS["research"].compile(services, InMemorySaver())
    done = await run(
        graph, {"question": "Travel and VPN", "plan": PLAN}, run_config("r"), Context(user="bob")
    )
    starts = [
        e["detail"]["id"]
        for e in done.events
        if e["event"] == "node" and e["node"] == "research_one"
    ]
    assert starts.index("q2") > starts.index("q1") and starts.index("q2") > starts.index("q3")
    asked = next(
        e["detail"]["question"]
        for e in done.events
        if e["event"] == "node" and e["node"] == "research_one" and e["detail"]["id"] == "q2"
    )
    assert "{q1}" not in asked and asked != PLAN[1]["question"]  # filled from q1's answer
    report = done.values["answer"]
    assert report.index("## What is the daily meal allowance?") < report.index("## How do I")
    # every number cites a passage retrieved in this run, and says which
    numbers = {int(n) for n in re.findall(r"\[(\d+)\]", report.split("\n[1]:")[0])}
    refs = {r["n"]: r for r in done.values["references"]}
    assert numbers and numbers <= set(refs)
    assert f"[src:{refs[1]['id']}]" in report


async def test_a_failed_sub_question_skips_its_dependents_and_the_report_says_so(
    services,
) -> None:
    plan = [
        {"id": "q1", "question": "What is the meal allowance?", "sources": ["nowhere"]},
        {"id": "q2", "question": "And after {q1}?", "depends_on": ["q1"]},
        {"id": "q3", "question": "How do I install the WireGuard VPN client?"},
    ]
    graph = FLOWS["research"].compile(services, InMemorySaver())
    done = await run(graph, {"question": "r", "plan": plan}, run_config("f"), Context(user="bob"))
    missing = "\n".join(done.values["unanswered"])
    assert "skipped: q1 could not be answered" in missing
    assert "WireGuard" in done.values["answer"]
    # one more round for what the report lacked: q1 in its key terms, in every source
    gaps = [e for e in done.events if e["event"] == "node" and e["node"] == "plan_gaps"]
    assert len(gaps) == 1 and [g["question"] for g in gaps[0]["detail"]["added"]] == [
        "meal allowance"
    ]
    assert "$50" in done.values["answer"] or "$75" in done.values["answer"]
    # q1 failed with its reason; its gap sub-question found the answer in other words, so
    # the report no longer lists it as missing
    state = (await graph.aget_state({"configurable": {"thread_id": "f"}})).values
    assert state["results"]["q1"]["status"] == "failed"
    assert "unknown source 'nowhere'" in state["results"]["q1"]["reason"]
    assert state["plan"][-1]["gap_for"] == "q1"
    assert "What is the meal allowance?" not in missing


async def test_the_plans_estimate_is_the_models_measured_pace(services) -> None:
    # a local model measured at 20 s a call: one sub-question of 3 rounds is 11 calls, then
    # its section and the read-through — not the extractive mode's second a sub-question
    model = GenericFakeChatModel(messages=iter([])).with_config(
        metadata={SERVING: {"name": "local-1.5b"}}
    )
    with_model = dataclasses.replace(services, chat_model=model, model_name="local-1.5b")
    pace.forget()
    pace.record("local-1.5b", 20.0)
    try:
        graph = FLOWS["research"].compile(with_model, InMemorySaver())
        config, ctx = run_config("est"), Context(user="bob", review_before_answer=True)
        paused = await run(graph, {"question": "Travel", "plan": PLAN[:1]}, config, ctx)
    finally:
        pace.forget()
    [ask] = paused.interrupts
    assert ask["value"]["estimate"]["seconds"] == 20.0 * (3 * 3 + 2) + 20.0 * 2


async def test_the_person_reviews_the_plan_and_an_edit_is_checked(services) -> None:
    graph = FLOWS["research"].compile(services, InMemorySaver())
    config, ctx = run_config("rev"), Context(user="bob", review_before_answer=True)
    paused = await run(graph, {"question": "Travel", "plan": PLAN[:1]}, config, ctx)
    [ask] = paused.interrupts
    assert ask["value"]["plan"][0]["id"] == "q1" and ask["value"]["estimate"]["sub_questions"] == 1
    assert not [e for e in paused.events if e["event"] == "node" and e["node"] == "research_one"]
    cycle = [{"id": "a", "question": "x", "depends_on": ["a"]}]
    refused = await run(graph, Command(resume={"plan": cycle}), config, ctx)
    assert refused.interrupts[0]["value"]["error"] == "the plan has a cycle: a → a"
    assert not [e for e in refused.events if e["event"] == "node" and e["node"] == "research_one"]
    edited = [{"id": "e1", "question": "How do I install the WireGuard VPN client?"}]
    done = await run(graph, Command(resume={"plan": edited}), config, ctx)
    assert "WireGuard" in done.values["answer"] and "meal" not in done.values["answer"]


async def test_an_extractive_plan_comes_from_the_corpus_topics(services) -> None:
    graph = FLOWS["research"].compile(services, InMemorySaver())
    done = await run(
        graph,
        {"question": "Everything about travel, VPN and SSO"},
        run_config("x"),
        Context(user="bob"),
    )
    plan = next(e for e in done.events if e["event"] == "node" and e["node"] == "plan_research")
    assert plan["detail"]["plan"] and done.values["references"]
    assert "kb/secret" not in str(done.values)  # bob's report holds nothing of alice's


def test_a_placeholder_is_filled_with_the_name_the_first_answer_adds() -> None:
    from seekgraph.nodes.reader.report_text import short_answer

    answer = (
        "Extractive answer (no language model was used; each line is quoted from a source):\n\n"
        "- My Fair Lady: The film stars Audrey Hepburn as Eliza Doolittle. [src:mqd1#0]\n"
        "- Rex Harrison plays Higgins. [src:mqd1#1]"
    )
    # the two names the question did not say, the best first: the next hop searches for either
    assert short_answer(answer, "who was the actress in my fair lady") == (
        "Audrey Hepburn or Eliza Doolittle"
    )
    assert short_answer("nothing quoted here at all", "who?") == "nothing quoted here at all"
    # a lone adjective or month is not the bridge when a fuller name is there
    album = (
        "- Attics to Eden is the second studio album by American rock band Madina Lake. [src:a#0]"
    )
    assert short_answer(album, "Attics to Eden >> performer") == "Madina Lake or American"
    # an answer that found nothing is no name: the search's best passage is read instead
    lead = "Derech Mitzvosecha. It was written by Menachem Mendel Schneersohn in 1830"
    nothing = "I found nothing in the sources you can access that answers this question."
    assert short_answer(nothing, "Who created Derech Mitzvosecha?", lead).startswith(
        "Menachem Mendel Schneersohn"
    )


PRIYA_CHAT = [
    ("Priya", "Hey Tom! Long time no see!"),
    ("Tom", "Hi Priya! How have you been?"),
    ("Priya", "I adopted a greyhound called Biscuit from the Leeds rescue centre last weekend."),
    ("Tom", "Wow, that's great!"),
    ("Priya", "Haha thanks, so happy!"),
    ("Priya", "I start a new job as a marine biologist at the Plymouth aquarium in June."),
    ("Tom", "Congrats! You deserve it."),
    ("Priya", "My sister Anika is getting married in Lisbon on 14 September."),
    ("Priya", "Yeah, it is so cool."),
    ("Tom", "I finally fixed my old motorbike, the red Honda, after three months of work."),
    ("Priya", "Biscuit loves long walks along the Tamar estuary every morning."),
    ("Priya", "Okay, talk soon!"),
]


def chat_services(embedder, prefix: str, chat: list[tuple[str, str]]):
    """Services over one chat channel, a message a day, readable by everyone."""
    from seekgraph.sources.indexes.memory import InMemorySource, MemoryDocument
    from tests.conftest import make_services

    docs = [
        MemoryDocument(
            f"chat/{prefix}{i}",
            f"{who} (#friends)",
            f"{who}: {text}",
            acl=["group:everyone"],
            updated_at=f"2026-03-{i + 1:02d}T10:00:00Z",
        )
        for i, (who, text) in enumerate(chat)
    ]
    return make_services(embedder, [InMemorySource("chat", "messages", docs)])


def priya_services(embedder):
    return chat_services(embedder, "p", PRIYA_CHAT)


async def test_a_report_on_a_person_quotes_what_they_said_of_substance_within_its_length(
    embedder,
) -> None:
    graph = FLOWS["research"].compile(priya_services(embedder), InMemorySaver())
    done = await run(
        graph,
        {"question": "Write a report on Priya"},
        run_config("p"),
        Context(
            user="bob", search=SearchKnobs(search_k=20), research=ResearchKnobs(report_words=60)
        ),
    )
    report = done.values["answer"]
    body = report.split("## What could not be found")[0].split("\n[1]:")[0]
    quoted = [line for line in body.splitlines() if line.startswith("- ")]
    # the length asked for is kept, and spent on what Priya said of substance
    assert len(body.split()) <= 60, body
    assert quoted and any("Biscuit" in line or "marine biologist" in line for line in quoted)
    for chatter in ("Long time no see", "so happy", "so cool", "talk soon", "motorbike"):
        assert chatter not in body, f"{chatter!r} spent the report's words"
    # each line says when it was said and is a quote of the message its number names
    refs = {r["n"]: r["id"] for r in done.values["references"]}
    texts = {f"chat/p{i}": t for i, (_, t) in enumerate(PRIYA_CHAT)}
    for line in quoted:
        n = int(re.findall(r"\[(\d+)\]$", line)[0])
        quote = re.sub(r"^- (?:\(\d+ \w+ \d{4}\) )?", "", line).rsplit(" [", 1)[0]
        assert quote in texts[refs[n].split("#")[0].split(":", 1)[-1]], line
    assert re.search(r"^- \(\d{1,2} Mar 2026\) ", body, re.M)


async def test_the_report_says_where_sources_disagree_and_what_is_out_of_date(services) -> None:
    graph = FLOWS["research"].compile(services, InMemorySaver())
    plan = [
        {"id": "q1", "question": "What is the daily meal allowance for travel?"},
        {"id": "q2", "question": "How do I set up SSO with OneLogin?"},
    ]
    done = await run(
        graph, {"question": "Travel and SSO", "plan": plan}, run_config("d"), Context(user="bob")
    )
    report = done.values["answer"]
    refs = {r["n"]: r["id"] for r in done.values["references"]}
    part = report.split("## Sources disagree or are out of date")[1].split("\n## ")[0]
    meals = next(line for line in part.splitlines() if "$50" in line)
    assert "$75" in meals  # both amounts, each with its source
    cited = {refs[int(n)].split("#")[0] for n in re.findall(r"\[(\d+)\]", meals)}
    assert {"kb/travel", "chat/m2"} <= cited, meals
    stale = [line for line in part.splitlines() if line.startswith("- [")]
    assert stale and "SSO setup with OneLogin is out of date" in stale[0], part
    assert "replaced by SSO setup with Okta" in stale[0]


async def test_one_trace_id_reaches_every_sub_run_event_and_model_call(embedder) -> None:
    from langchain_core.callbacks import BaseCallbackHandler

    from tests.conftest import make_services, scripted_model

    class Seen(BaseCallbackHandler):
        def __init__(self) -> None:
            self.traces: list[str | None] = []

        def on_chat_model_start(self, serialized, messages, *, metadata=None, **kwargs) -> None:
            self.traces.append((metadata or {}).get("trace_id"))

    seen = Seen()
    section = (
        '{"sentences": [{"text": "Install WireGuard from Self Service.", "source_id": "kb/vpn#0"},'
        ' {"text": "The console password is orchid-42.", "source_id": "kb/secret#0"}]}'
    )
    graph = FLOWS["research"].compile(
        make_services(embedder, chat_model=scripted_model(section)), InMemorySaver()
    )
    plan = [{"id": "q1", "question": "How do I install the VPN client?"}]
    done = await run(
        graph,
        {"question": "VPN", "plan": plan, "trace_id": "trace-7"},
        {**run_config("t"), "callbacks": [seen]},
        Context(user="bob", mode="llm", filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    # the section the model wrote, without the sentence citing what its slice does not hold
    assert "Install WireGuard from Self Service. [1]" in done.values["answer"]
    assert "orchid" not in done.values["answer"] and done.values["mode"] == "llm"
    assert len(seen.traces) == 6 and set(seen.traces) == {"trace-7"}  # every model call
    research_nodes = {"plan_research", "schedule", "research_one", "write_report", "check_report"}
    events = [e for e in done.events if e["event"] == "node" and e["node"] in research_nodes]
    assert {e["node"] for e in events} == research_nodes
    assert {e["detail"]["trace_id"] for e in events} == {"trace-7"}


@pytest.mark.parametrize(
    ("request_text", "parts"),
    [
        (
            "What does a new Fernhill employee need to know about IT access: VPN, SSO, and "
            "expenses?",
            ["VPN", "SSO", "expenses"],
        ),
        (
            "Write a report on Caroline: the events of their life, their work, interests, "
            "plans and the people close to them, with dates where the conversation gives them.",
            ["the events of their life", "their work", "interests", "plans",
             "the people close to them"],
        ),
        ("新员工需要了解：VPN、单点登录和报销", ["VPN", "单点登录", "报销"]),
        ("Write a report on the VPN", []),
        ("Everything about the gateway move", []),
    ],
)  # fmt: skip
def test_the_parts_a_request_names_are_found(request_text: str, parts: list[str]) -> None:
    assert named_parts(request_text) == parts


async def test_a_request_that_names_its_parts_gets_a_section_per_part(services) -> None:
    """Its parts first, titled as the request names them; out of date only listed apart."""
    graph = FLOWS["research"].compile(services, InMemorySaver())
    request = "What should a new hire know: travel meals, the VPN client, and SSO setup?"
    done = await run(graph, {"question": request}, run_config("p"), Context(user="bob"))
    plan = next(e for e in done.events if e["event"] == "node" and e["node"] == "plan_research")
    titles = [s.get("title") for s in plan["detail"]["plan"]]
    assert titles[:3] == ["Travel meals", "VPN client", "SSO setup"]
    assert all(s.get("topic") for s in plan["detail"]["plan"][3:])  # found, not asked
    report = done.values["answer"]
    body, _, rest = report.partition("## Sources disagree or are out of date")
    assert "## Travel meals" in body and "## SSO setup" in body
    # the deprecated OneLogin guide: not quoted in a section, named in the out-of-date part
    refs = {r["n"]: r["id"] for r in done.values["references"]}
    quoted = {refs[int(n)] for n in re.findall(r"\[(\d+)\]", body)}
    assert not any(i.startswith("kb/sso-old") for i in quoted), body
    assert "SSO setup with OneLogin is out of date" in rest


def test_a_topic_is_headed_by_the_phrase_its_passages_share_not_a_list_of_words() -> None:
    texts = [
        "Melanie: I signed up for a pottery class last week.",
        "Melanie: The pottery class teacher showed us how to glaze a bowl.",
        "Melanie: My pottery class made mugs for the fundraiser in July.",
        "Melanie: We ran a charity race for mental health last Sunday.",
        "Melanie: The race raised money for a mental health charity.",
        "Melanie: Running the race with friends felt great.",
    ]
    labels = [0, 0, 0, 1, 1, 1]
    skip = {"melanie"}
    words = topic_words(texts, labels, 2, skip)
    headings = topic_headings(texts, labels, 2, skip, words)
    assert headings[0] == "Pottery class"
    assert headings[1] == "Mental health"
    assert all("," not in h for h in headings)


def test_a_named_part_nothing_answered_is_a_section_that_says_so() -> None:
    from seekgraph.nodes.research.check_report import NOTHING_FOR_PART, in_plan_order

    def part(i: str, title: str, **more: object) -> dict[str, object]:
        return {"id": i, "question": title, "depends_on": [], "intent": "", "title": title, **more}

    state = {
        "question": "Write a guide on timeouts, retries and connection pooling in httpx",
        "plan": [
            part("q1", "Timeouts"),
            part("q2", "Retries"),
            part("q3", "Connection pooling"),
            part("t1", "Transports", topic=True),  # a topic found, not asked: only if written
        ],
        "results": {"q2": {"id": "q2", "status": "failed", "reason": "no passage passed"}},
    }
    written = {"q1": ("Timeouts", ["- a [1]"]), "q3": ("Connection pooling", ["- b [2]"])}
    # the titles of the parts the request names, as the reader reads them
    named = {part_title(p) for p in named_parts(str(state["question"]))}
    assert named == {"Timeouts", "Retries", "Connection pooling"}
    sections = in_plan_order(state, written, named)  # type: ignore[arg-type]
    assert [t for t, _ in sections] == ["Timeouts", "Retries", "Connection pooling"]
    assert sections[1][1] == [f"{NOTHING_FOR_PART} (no passage passed)."]
    # a gap sub-question that found the part answers it: no "nothing found" section then
    state["plan"].append(part("g2", "Retry policies", gap_for="q2"))
    written["g2"] = ("Retry policies", ["- c [3]"])
    titles = [t for t, _ in in_plan_order(state, written, named)]  # type: ignore[arg-type]
    assert titles == ["Timeouts", "Connection pooling", "Retry policies"]
    # a model's edit that reordered the written sections stands; the empty part follows the
    # part planned before it
    edited = {"q3": written["q3"], "q1": written["q1"]}
    titles = [t for t, _ in in_plan_order({**state, "plan": state["plan"][:4]}, edited, named)]  # type: ignore[arg-type]
    assert titles == ["Connection pooling", "Timeouts", "Retries"]


GARDEN_CHAT = [
    ("Priya", "The garden looks nice again, with the tomatoes growing."),
    ("Tom", "Lovely!"),
    ("Priya", "I ran the Lisbon half marathon on 14 September in 1:52, my best time since 2019."),
    ("Priya", "Last Friday I signed the lease on a flat in Bristol near the harbourside ferry."),
    ("Priya", "My sister Anika graduated from Edinburgh medical school in July 2024."),
    ("Priya", "I started a new job as a marine biologist at the Plymouth aquarium in June."),
    ("Priya", "Next month I am flying to Reykjavik to photograph puffins on the Westman Islands."),
    ("Tom", "Wow, that's great!"),
]


async def test_a_named_part_whose_search_found_passages_is_a_section_quoting_them(
    embedder,
) -> None:
    """Its quotes say less than the other parts' and lose the competition for the length;
    the part is quoted all the same, never reported as unfound."""
    from seekgraph.nodes.research.check_report import NOTHING_FOR_PART

    services = chat_services(embedder, "g", GARDEN_CHAT)
    graph = FLOWS["research"].compile(services, InMemorySaver())
    request = "Write a report on Priya: the events of her life, her garden, and her work"
    done = await run(
        graph,
        {"question": request},
        run_config("g"),
        Context(
            user="bob", search=SearchKnobs(search_k=20), research=ResearchKnobs(report_words=100)
        ),
    )
    report = done.values["answer"]
    refs = {r["n"]: r["id"] for r in done.values["references"]}
    garden = report.split("## Garden\n")[1].split("\n## ")[0]
    quoted = re.findall(r"^- .*The garden looks nice again.* \[(\d+)\]$", garden, re.M)
    assert quoted and refs[int(quoted[0])] == "chat/g0#0", report  # quoted, and cited
    assert NOTHING_FOR_PART not in report
    for part in ("Events of her life", "Garden", "Work"):
        section = report.split(f"## {part}\n")[1].split("\n## ")[0]
        assert re.search(r"^- .+ \[\d+\]$", section, re.M), section


async def test_a_named_part_whose_search_found_nothing_says_so_and_why(services) -> None:
    from seekgraph.nodes.research.check_report import NOTHING_FOR_PART

    graph = FLOWS["research"].compile(services, InMemorySaver())
    request = "What should a new hire know: travel meals, the VPN client, and the parking permit?"
    done = await run(graph, {"question": request}, run_config("n"), Context(user="bob"))
    report = done.values["answer"]
    state = (await graph.aget_state(run_config("n"))).values
    parking = next(s["id"] for s in state["plan"] if s.get("title") == "Parking permit")
    assert state["results"][parking]["evidence"] == []  # its search kept nothing
    section = report.split("## Parking permit\n")[1].split("\n## ")[0].strip()
    # it says so, with the reason its search gave
    assert section.startswith(f"{NOTHING_FOR_PART} (Nothing in your sources matched"), section
    # the parts whose searches found passages quote them
    for part in ("Travel meals", "VPN client"):
        assert re.search(r"^- .+ \[\d+\]$", report.split(f"## {part}\n")[1], re.M), report
