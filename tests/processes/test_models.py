"""The model layer against real HTTP servers on loopback (the remote LLM is the only fake).

Failover between two OpenAI-compatible endpoints, structured output from misbehaving
models, images and the vision model, and Cohere reranking with its fallback.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph.checkpoint.memory import InMemorySaver

from seekgraph.graph.context import BudgetKnobs, Context, FilteringKnobs
from seekgraph.graph.inspect import question_state
from seekgraph.graph.search import search_flow
from seekgraph.nodes.plumbing.decisions import EvaluateDecision
from seekgraph.nodes.plumbing.services import Services
from seekgraph.nodes.plumbing.writing import stream_answer
from seekgraph.providers import pace
from seekgraph.providers.chat import (
    AnswerInterruptedError,
    ChatModelConfig,
    ModelClientError,
    ModelUnavailableError,
    ainvoke_structured,
    load_chat_model,
)
from seekgraph.providers.cohere_rerank import CohereReranker
from seekgraph.providers.rerank import LocalReranker
from seekgraph.state.models import ModelCall
from seekgraph.state.schemas import OutputState
from tests.conftest import run_graph
from tests.support.processes import Proc, script_model, start_cohere_server, start_model_server

VERDICT = '{"action": "answer", "reason": "enough", "read_doc_ids": [], "gap_questions": []}'
PROMPT = "<role>You decide whether the evidence is enough to answer a question.</role>"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proc]]:
    tmp = tmp_path_factory.mktemp("models")
    procs: dict[str, Proc] = {}
    try:
        procs["primary"] = start_model_server(tmp, delay=0.0, tokens=20)
        procs["backup"] = start_model_server(tmp, delay=0.0, tokens=20)
        procs["cohere"] = start_cohere_server(tmp)
        yield procs
    finally:
        for p in procs.values():
            p.stop()


def calls(server: Proc) -> int:
    return int(httpx.get(server.url + "/calls").json()["calls"])


def config(server: Proc, name: str, timeout: float = 2.0) -> ChatModelConfig:
    return ChatModelConfig(model=name, base_url=server.url + "/v1", api_key="k", timeout=timeout)


def pair(servers: dict[str, Proc]) -> Any:
    script_model(servers["primary"])
    script_model(servers["backup"])
    return load_chat_model(
        config(servers["primary"], "primary-model"), config(servers["backup"], "backup-model")
    )


@pytest.mark.parametrize(
    "failure",
    [{"status": 500}, {"status": 503}, {"status": 429}, {"sleep": 3}, {"drop": True}],
    ids=["500", "503", "429", "timeout", "dropped"],
)
async def test_retryable_failures_switch_to_the_backup(servers, failure) -> None:
    model = pair(servers)
    script_model(servers["primary"], failure)
    before = calls(servers["backup"])
    decision, _, served, repaired = await ainvoke_structured(model, PROMPT, EvaluateDecision)
    assert decision.action == "answer" and not repaired
    assert served == "backup-model"
    assert calls(servers["backup"]) == before + 1


@pytest.mark.parametrize("status", [400, 401, 422])
async def test_client_errors_do_not_switch_and_say_what_to_fix(servers, status) -> None:
    model = pair(servers)
    script_model(servers["primary"], {"status": status})
    before = calls(servers["backup"])
    with pytest.raises(
        ModelClientError, match=rf"refused the request \({status}\).*check the model"
    ):
        await ainvoke_structured(model, PROMPT, EvaluateDecision)
    assert calls(servers["backup"]) == before


async def test_both_models_down_is_unavailable(servers) -> None:
    model = pair(servers)
    script_model(servers["primary"], {"status": 503})
    script_model(servers["backup"], {"status": 503})
    with pytest.raises(ModelUnavailableError):
        await ainvoke_structured(model, PROMPT, EvaluateDecision)


class Writer:
    def __init__(self) -> None:
        self.tokens: list[str] = []

    def __call__(self, event: dict[str, Any]) -> None:
        if event.get("event") == "token":
            self.tokens.append(event["text"])


async def test_no_switch_once_answer_tokens_were_streamed(servers) -> None:
    from langgraph.runtime import Runtime

    model = pair(servers)
    script_model(servers["primary"], {"fail_after": 4})
    writer = Writer()
    before = calls(servers["backup"])
    with pytest.raises(AnswerInterruptedError, match="after 4 answer tokens"):
        await stream_answer(
            model,
            '<role>You answer questions</role> <source id="kb/a#0">',
            Runtime(context=Context(user="bob"), stream_writer=writer),
        )
    assert len(writer.tokens) == 4
    assert calls(servers["backup"]) == before  # no second answer from another model
    # a failure before the first token does switch
    script_model(servers["primary"], {"status": 503})
    writer = Writer()
    text, _, served = await stream_answer(
        model,
        "<role>You answer questions</role>",
        Runtime(context=Context(user="bob"), stream_writer=writer),
    )
    assert served == "backup-model" and text.startswith("Answer w0")


@pytest.mark.parametrize(
    "reply",
    [
        f"```json\n{VERDICT}\n```",
        f"<think>The user wants a verdict. Let me consider {{not json}}.</think>\n{VERDICT}",
        f"Sure! Here is the verdict:\n{VERDICT}\nHope this helps.",
    ],
    ids=["fenced", "think-block", "chatty"],
)
async def test_wrapped_json_is_parsed(servers, reply) -> None:
    model = pair(servers)
    script_model(servers["primary"], {"content": reply})
    decision, _, served, repaired = await ainvoke_structured(model, PROMPT, EvaluateDecision)
    assert decision.action == "answer" and not repaired and served == "primary-model"


async def test_invalid_output_is_repaired_once(servers) -> None:
    model = pair(servers)
    script_model(servers["primary"], {"content": '{"action": "maybe"}'}, {"content": VERDICT})
    before = calls(servers["primary"])
    decision, tokens, _, repaired = await ainvoke_structured(model, PROMPT, EvaluateDecision)
    assert repaired and decision.action == "answer"
    assert calls(servers["primary"]) == before + 2
    assert tokens > 0


def graph_services(embedder, servers, **extra: Any) -> Services:
    from tests.conftest import make_services

    services = make_services(embedder, chat_model=pair(servers))
    services.model_name = "primary-model"
    for key, value in extra.items():
        setattr(services, key, value)
    return services


async def run(services: Services, question: str, ctx: Context, *where: Any) -> Any:
    """(the answer's keys, the question's whole state) of a search-flow run."""
    done = await run_graph(services, question, ctx, *where)
    return {k: done.output.get(k) for k in OutputState.__annotations__}, done.state.values


async def answered_with(servers, embedder, step: dict[str, Any]) -> tuple[Any, ModelCall]:
    """The answer to the VPN install question when the model's answer is ``step``, and
    integrate's call (expand, grade and evaluate get the fake's default replies)."""
    services = graph_services(embedder, servers)  # (resets the script)
    script_model(servers["primary"], {}, {}, {}, step)
    out, values = await run(
        services,
        "How do I install the WireGuard VPN client?",
        Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    [call] = [c for c in values["model_calls"] if c["node"] == "integrate"]
    script_model(servers["primary"])
    return out, call


async def test_malformed_output_twice_degrades_that_node_and_the_state_says_so(
    servers, embedder
) -> None:
    services = graph_services(embedder, servers)
    script_model(servers["primary"], {"content": "no json here"}, {"content": "still none"})
    out, values = await run(
        services,
        "How do I install the WireGuard VPN client?",
        Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    [degraded] = [c for c in values["model_calls"] if c["outcome"] == "degraded"]
    assert degraded["node"] == "expand_query"
    assert "not valid QueryVariants JSON twice" in degraded["detail"]
    assert out["mode"] == "llm" and out["citations"]


async def test_an_answer_that_cites_nothing_becomes_the_sources_quotes(servers, embedder) -> None:
    # a small local model answers in prose without a single [src:…], from what it knows:
    # the person gets quotes they can check, and the run says why
    prose = "Ask your manager for approval, then reboot twice before the first connection."
    out, degraded = await answered_with(servers, embedder, {"content": prose})
    assert out["mode"] == "extractive" and "[src:kb/vpn#0]" in out["answer"]
    assert "reboot" not in out["answer"]
    assert degraded["outcome"] == "degraded" and "cited none" in degraded["detail"]
    # what the model wrote is on record, so an operator can see why it was not shown
    assert "began 'Ask your manager for approval, then reboot twice" in degraded["detail"]


SAID = "Install the WireGuard client from Self Service and import your profile."


@pytest.mark.parametrize(
    ("reply", "mended"),
    [
        # Qwen 1.5B answered right and cited nothing (13 of its held-out and dev replies)…
        (SAID, "cited none of its sources; the passages holding its lines were cited"),
        # (spacing around it is no copy of the prompt)
        (f"  {SAID}\n\n\n", "cited none of its sources; the passages holding its lines"),
        # …or cited in a form that names no source
        (f"[docs:7] {SAID}", "cited none of its sources; the passages holding its lines"),
        # …or cited a passage it was shown that does not say it ("`bytes`", orjson#10 for #5)
        (f"{SAID} [src:kb/vpn#1]", "a line cited a passage that does not hold it; the passages"),
        # Qwen 0.5B wrapped its answer in a block of its prompt ("<needs> - an amount: …")…
        (f"<needs>\n- the steps: {SAID} [src:kb/vpn#0]\n</needs>", "copied parts of its prompt"),
        # …or copied its prompt's question, needs and a rule before answering
        (
            "<question>How do I install the WireGuard VPN client?</question>\n<needs>\n- the "
            "steps: How do I install the WireGuard VPN client?\n</needs>\n- Use only the sources. "
            "After every claim write its citation as [src:ID] with the source id.\n"
            f"{SAID} [src:kb/vpn#0]",
            "copied parts of its prompt; they were left out",
        ),
        # Qwen 1.5B answered right, then wrote code and a claim of its own (uncited or cited)
        (
            f"{SAID}\n\n```bash\nsudo wg-quick up fernhill\n```\nThe tunnel comes up within "
            "5 minutes on every laptop.",
            "sentences no shown passage holds were left out",
        ),
        (
            f"{SAID} [src:kb/vpn#0] The tunnel comes up within 5 minutes on every laptop.",
            "dropped what its passages do not say: a statement naming 5",
        ),
    ],
    ids=[
        "uncited", "spaced", "no-source-named", "another-passage", "in-a-prompt-block",
        "after-its-prompt", "its-own-code-and-claim", "its-own-claim-cited",
    ],
)  # fmt: skip
async def test_an_answer_its_passages_hold_is_shown_citing_them(
    servers, embedder, reply: str, mended: str
) -> None:
    out, call = await answered_with(servers, embedder, {"content": reply})
    assert out["mode"] == "llm"
    assert out["answer"].startswith(f"{SAID} [src:kb/vpn#0]")
    assert "5 minutes" not in out["answer"] and "wg-quick" not in out["answer"]
    assert [c["id"] for c in out["citations"]] == ["kb/vpn#0"]
    assert call["outcome"] == "ok" and mended in call["detail"]
    assert ("copied parts of its prompt" in call["detail"]) == ("<" in reply)


async def test_citations_in_a_models_own_form_are_kept_as_citations(servers, embedder) -> None:
    # Qwen2.5 1.5B through llama.cpp wrote "[docs/sales/pricing-2026#1] says: …": the answer
    # was right, cited nothing the checker could read and was shown without a source
    services = graph_services(embedder, servers)
    # …and Qwen 1.5B over the READMEs "[docs:orjson#37]" for docs/orjson#37
    answer = "Install the client from Self Service [kb/vpn#0] (source: kb/vpn#0) [kb:vpn#0]."
    script_model(servers["primary"], {}, {}, {}, {"content": answer})
    out, values = await run(
        services,
        "How do I install the WireGuard VPN client?",
        Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    assert out["mode"] == "llm"
    assert out["answer"].count("[src:kb/vpn#0]") == 3 and "[kb/vpn#0]" not in out["answer"]
    assert [c["id"] for c in out["citations"]] == ["kb/vpn#0"]
    script_model(servers["primary"])


async def test_an_answer_stating_a_number_no_source_gives_becomes_the_quotes(
    servers, embedder
) -> None:
    # Qwen2.5 1.5B, asked for a deadline its sources did not hold, answered "by 1 November
    # 2026" and cited a price list; a number the model states must be one a source gives
    services = graph_services(embedder, servers)
    made_up = "Install the client from Self Service [src:kb/vpn#0] within 14 days of 3 May 2031."
    script_model(servers["primary"], {}, {}, {}, {"content": made_up})
    out, values = await run(
        services,
        "How do I install the WireGuard VPN client?",
        Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    assert out["mode"] == "extractive" and "2031" not in out["answer"]
    assert "[src:kb/vpn#0]" in out["answer"]
    [degraded] = [c for c in values["model_calls"] if c["node"] == "integrate"]
    assert degraded["outcome"] == "degraded"
    assert "stated only what its passages do not say" in degraded["detail"]
    assert "14, 2031" in degraded["detail"]
    script_model(servers["primary"])


async def test_a_models_answer_laid_out_like_its_prompt_is_shown(servers, embedder) -> None:
    # Qwen 1.5B heads its reply with the prompt's sections ("Sources", "Needs"), titles it
    # in title case and opens list items after a colon: none of it is a name its passages
    # must hold
    services = graph_services(embedder, servers)
    laid_out = (
        "### Setting Up Your Workstation\nCertainly! I'll answer from the Sources.\n"
        "**Needs:** - steps: - Install the client from Self Service [src:kb/vpn#0]."
    )
    script_model(servers["primary"], {}, {}, {}, {"content": laid_out})
    out, values = await run(
        services,
        "How do I install the WireGuard VPN client?",
        Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    assert out["mode"] == "llm" and "Install the client from Self Service" in out["answer"]
    [call] = [c for c in values["model_calls"] if c["node"] == "integrate"]
    assert call["outcome"] == "ok", call
    script_model(servers["primary"])


async def test_a_models_not_found_stands_in_its_own_words(servers, embedder) -> None:
    # the model decides: its "the sources do not say" is the answer, not a rule's verdict
    services = graph_services(embedder, servers)
    refusal = (
        "Based on the information provided in the sources, there is no clear statement "
        "regarding the parking allowance for visitors. [src:kb/travel#0]"
    )
    script_model(servers["primary"], {}, {}, {}, {"content": refusal})
    out, values = await run(
        services,
        "What is the parking allowance for visitors?",
        Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    assert out["mode"] == "llm" and out["status"] == "not_found"
    assert out["answer"] == refusal
    [call] = [c for c in values["model_calls"] if c["node"] == "integrate"]
    assert call["outcome"] == "ok"
    script_model(servers["primary"])


@pytest.mark.parametrize(
    ("question", "reply"),
    [
        # a three-word answer naming the value, citing the passage that gives it
        ("Which VPN client do I need?", "It is WireGuard [src:kb/vpn#0]."),
        # the question's verb where the passage has another ("get" for "request")
        ("How do I get a VPN profile?", "You ask for it in the IT portal [src:kb/vpn#1]."),
        # a right answer that says nothing of a word of the question ("laptop")
        ("What must I install on my new laptop for the VPN?",
         "The WireGuard client, from Self Service [src:kb/vpn#0]."),
    ],
    ids=["three-words", "other-verb", "not-every-word"],
)  # fmt: skip
async def test_a_models_right_answer_stands_as_written(
    servers, embedder, question: str, reply: str
) -> None:
    # no lexical judgement of what the question "needs" overrules the model
    services = graph_services(embedder, servers)
    script_model(servers["primary"], {}, {}, {}, {"content": reply})
    out, values = await run(
        services, question, Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False))
    )
    assert out["mode"] == "llm" and out["status"] == "answered"
    assert out["answer"] == reply
    [call] = [c for c in values["model_calls"] if c["node"] == "integrate"]
    assert call["outcome"] == "ok" and call["detail"] == ""
    script_model(servers["primary"])


async def test_a_models_answer_naming_what_its_passage_does_not_becomes_the_quotes(
    servers, embedder
) -> None:
    # Qwen 1.5B: "laptops that are compatible with Windows [src:…incident…]"
    services = graph_services(embedder, servers)
    made_up = "Install the WireGuard client from the Microsoft Store [src:kb/vpn#0]."
    script_model(servers["primary"], {}, {}, {}, {"content": made_up})
    out, values = await run(
        services,
        "How do I install the WireGuard VPN client?",
        Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    assert out["mode"] == "extractive" and "Microsoft" not in out["answer"]
    assert "Self Service" in out["answer"] and "[src:kb/vpn#0]" in out["answer"]
    [degraded] = [c for c in values["model_calls"] if c["node"] == "integrate"]
    assert "stated only what its passages do not say" in degraded["detail"]
    assert "Microsoft, Store" in degraded["detail"]
    script_model(servers["primary"])


async def test_a_models_decision_to_search_again_stands(servers, embedder) -> None:
    # the model decides whether its evidence answers: a second round, bounded by the budget
    services = graph_services(embedder, servers)
    again = json.dumps({"action": "search", "reason": "more detail", "gap_questions": ["vpn"]})
    script_model(servers["primary"], {}, {}, {"content": again})
    out, values = await run(
        services,
        "How do I install the WireGuard VPN client?",
        Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False), max_rounds=2),
    )
    assert values["budget"]["rounds"] == 2
    assert out["mode"] == "llm"
    script_model(servers["primary"])


async def test_a_slow_models_grading_gets_the_time_its_measured_pace_needs(
    servers, embedder
) -> None:
    # Qwen 1.5B on two cores grades a batch in about a minute: a fixed 30 s timed out every
    # grading (7 of 17 calls on the README questions). Here grading takes 1 s, its timeout
    # is 0.4 s, and the model is known to take about 3 s a call (the fast expand call pulls
    # the running mean to about 2 s: the grading gets 1.5 times that)
    services = graph_services(embedder, servers)
    question = "How do I install the WireGuard VPN client?"

    async def grading(**knobs: Any) -> dict[str, Any]:
        pace.forget()
        pace.record("primary-model", 3.0)
        script_model(servers["primary"], {}, {"sleep": 1.0})  # expand, then grade
        ctx = Context(
            user="bob",
            filtering=FilteringKnobs(grading_timeout=0.4, fastpass_enabled=False),
            **knobs,
        )
        _, values = await run(services, question, ctx)
        return next(c for c in values["model_calls"] if c["node"] == "filter_results")

    fitted = await grading()
    fixed = await grading(budget=BudgetKnobs(fit_seconds_to_model=False))
    assert fitted["outcome"] == "ok", fitted
    assert fixed["outcome"] == "degraded" and "grading timed out after 0.4 s" in fixed["detail"]
    script_model(servers["primary"])
    pace.forget()


async def test_grading_learns_its_own_pace_from_a_timeout(servers, embedder) -> None:
    # the model's other calls are quick (0.1 s) and a grading call reads ten passages
    # (0.5 s here): the model's pace alone would time every grading out; a timeout says
    # grading takes at least that long, and the next one gets half as much again
    services = graph_services(embedder, servers)
    pace.forget()
    pace.record("primary-model", 0.1)

    async def grading() -> dict[str, Any]:
        script_model(servers["primary"], {}, {"sleep": 0.5})  # expand, then grade
        ctx = Context(
            user="bob", filtering=FilteringKnobs(grading_timeout=0.4, fastpass_enabled=False)
        )
        _, values = await run(services, "How do I install the WireGuard VPN client?", ctx)
        return next(c for c in values["model_calls"] if c["node"] == "filter_results")

    first, second = await grading(), await grading()
    assert first["outcome"] == "degraded" and "timed out after 0.4 s" in first["detail"]
    assert second["outcome"] == "ok", second
    assert pace.seconds_per_call("primary-model", "filter_results") == pytest.approx(0.5, abs=0.1)
    assert pace.seconds_per_call("primary-model") < 0.3  # the model's own pace is its own
    script_model(servers["primary"])
    pace.forget()


async def test_a_slow_models_run_gets_the_time_its_measured_pace_needs(servers, embedder) -> None:
    # a 1.5B model on two cores takes 15-60 s a call: a 120 s run ended after one round.
    # Each call here takes 0.3 s and the run is allowed 1 s (2 rounds): once the model's
    # pace is measured, a run's budget is what its rounds take at that pace
    pace.forget()
    services = graph_services(embedder, servers)
    question = "How do I install the WireGuard VPN client?"

    async def budget_of(fit: bool = True) -> tuple[float, str]:
        script_model(servers["primary"], *[{"sleep": 0.3}] * 8)
        ctx = Context(
            user="bob",
            budget=BudgetKnobs(max_seconds=1.0, fit_seconds_to_model=fit),
            max_rounds=2,
            filtering=FilteringKnobs(fastpass_enabled=False),
        )
        done = await run_graph(services, question, ctx)
        budget = done.state.values["budget"]
        prepared = next(e for e in done.events if e.get("node") == "prepare" and "summary" in e)
        return budget["deadline"] - budget["started_at"], prepared["summary"]

    first, _ = await budget_of()  # nothing measured yet: max_seconds
    fitted, said = await budget_of()
    kept, _ = await budget_of(fit=False)
    assert first == pytest.approx(1.0)
    assert fitted == pytest.approx(0.3 * (3 * 2 + 2), rel=0.5) and fitted > 2.0
    assert "primary-model takes 0.3 s a call here, so this run has" in said
    assert kept == pytest.approx(1.0)
    script_model(servers["primary"])
    pace.forget()


async def test_a_full_run_answers_while_the_primary_fails_half_its_calls(servers, embedder) -> None:
    services = graph_services(embedder, servers)
    script_model(servers["primary"], {"alternate": 503})
    out, values = await run(
        services,
        "How do I install the WireGuard VPN client?",
        Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    assert out["mode"] == "llm"
    assert out["citations"] and "[src:" in out["answer"]
    served = [c["model"] for c in values["model_calls"]]
    assert "backup-model" in served and "primary-model" in served, served
    assert all(c["outcome"] == "ok" for c in values["model_calls"])
    script_model(servers["primary"])


async def test_a_reply_the_server_cuts_off_is_never_shown_as_the_answer(servers, embedder) -> None:
    # llama.cpp's Python server ends a streamed reply, with a normal end of stream and no
    # finish reason, when another request arrives (its default): Qwen 1.5B's replies came
    # back empty, and each fell back as "cited none of its sources"
    from langgraph.runtime import Runtime

    model = pair(servers)
    script_model(servers["primary"], {"cut_after": 3})
    with pytest.raises(AnswerInterruptedError, match="--interrupt_requests False"):
        await stream_answer(
            model,
            "<role>You answer questions</role>",
            Runtime(context=Context(user="bob"), stream_writer=Writer()),
        )
    out, degraded = await answered_with(servers, embedder, {"cut_after": 0})
    assert out["mode"] == "extractive" and "[src:kb/vpn#0]" in out["answer"]
    assert "ended the reply before it finished" in degraded["detail"]
    assert "cited none" not in degraded["detail"]


async def test_answer_interrupted_mid_stream_fails_the_step_and_resumes(servers, embedder) -> None:
    saver = InMemorySaver()
    services = graph_services(embedder, servers)
    script_model(
        servers["primary"], {}, {}, {}, {"fail_after": 3}
    )  # expand, grade, evaluate, answer
    with pytest.raises(AnswerInterruptedError):
        await run(
            services,
            "How do I install the WireGuard VPN client?",
            Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False)),
            "t-int",
            saver,
        )
    graph = search_flow(services, saver)
    config = {"configurable": {"thread_id": "t-int"}}
    stopped = await graph.aget_state(config, subgraphs=True)
    assert stopped.next == ("search",) and stopped.tasks[0].state.next == ("integrate",)
    out = await graph.ainvoke(None, config, context=Context(user="bob"))
    assert out["answer"].startswith("Answer w0") and out["citations"]


async def test_cohere_rerank_is_used_and_its_failure_falls_back(servers, embedder) -> None:
    local = LocalReranker(embedder)
    cohere = CohereReranker("test-key", fallback=local, base_url=servers["cohere"].url, timeout=1.0)
    httpx.post(servers["cohere"].url + "/script", json={})
    before = calls(servers["cohere"])
    scores, served = await cohere.rerank_detailed(
        "wireguard vpn client", ["Install the WireGuard VPN client.", "The cafeteria is closed."]
    )
    assert calls(servers["cohere"]) == before + 1
    assert scores[0] > scores[1] and served == "cohere"
    for failure in ({"status": 500}, {"sleep": 3}):
        httpx.post(servers["cohere"].url + "/script", json=failure)
        fallback, served = await cohere.rerank_detailed(
            "wireguard vpn client", ["Install the WireGuard VPN client."]
        )
        assert fallback == await local.rerank(
            "wireguard vpn client", ["Install the WireGuard VPN client."]
        )
        assert served.startswith("local (cohere failed")  # this call's fact, not the object's
    httpx.post(servers["cohere"].url + "/script", json={})
    # in a graph run, the filter log says which reranker served
    services = graph_services(embedder, servers, reranker=cohere)
    httpx.post(servers["cohere"].url + "/script", json={"status": 503})
    _, values = await run(
        services,
        "WireGuard VPN client",
        Context(user="bob", mode="extractive", filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    assert values["filter_log"][0]["reranker"].startswith("local (cohere failed")
    httpx.post(servers["cohere"].url + "/script", json={})
    await cohere.aclose()


def tiny_png() -> bytes:
    """A real 2×2 PNG (images are decoded before they are accepted)."""
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (2, 2), "teal").save(out, format="PNG")
    return out.getvalue()


PNG = tiny_png()


async def test_images_use_the_vision_model_even_from_history_and_stay_with_their_owner(
    servers, embedder, tmp_path: Path
) -> None:
    from seekgraph.server.images import accept_images, load_image

    store = tmp_path / "images"
    refs = accept_images([base64.b64encode(PNG).decode()], store, "bob", 6, 1000)
    assert load_image(store, "bob", refs[0]) == PNG
    assert load_image(store, "alice", refs[0]) is None  # never visible to another user
    vision = load_chat_model(config(servers["backup"], "vision-model"))
    services = graph_services(
        embedder,
        servers,
        vision_model=vision,
        vision_model_name="vision-model",
        image_loader=lambda user, ref: load_image(store, user, ref),
    )
    saver = InMemorySaver()
    graph = search_flow(services, saver)
    cfg = {"configurable": {"thread_id": "img"}}
    ctx = Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False))
    script_model(servers["backup"])
    await graph.ainvoke(
        {"question": "How do I install the VPN client?", "images": refs}, cfg, context=ctx
    )
    first = await question_state(graph, "img")
    # a later question without images: the thread still holds one (in its turns)
    await graph.ainvoke({"question": "And the WireGuard profile?"}, cfg, context=ctx)
    second = await question_state(graph, "img")
    assert not second.get("images") and second["turns"][0]["images"] == refs
    with pytest.raises(ValueError, match="holds images and model 'primary-model' cannot"):
        await graph.ainvoke(
            {"question": "again?"}, cfg, context=Context(user="bob", model="primary-model")
        )
    for values in (first, second):
        assert values["model"] == "vision-model"
        assert {c["model"] for c in values["model_calls"]} == {"vision-model"}
    sent = httpx.get(servers["backup"].url + "/calls").json()["requests"]
    assert any(r["images"] == 1 for r in sent)  # the image reached the vision model
    assert "data:image" not in str(second)  # checkpoints hold references, not bytes


def test_image_size_limit(tmp_path: Path) -> None:
    from seekgraph.server.images import ImageError, accept_images

    with pytest.raises(ImageError, match=f"image 1 has {len(PNG)} bytes; the limit is 50"):
        accept_images([base64.b64encode(PNG).decode()], tmp_path, "bob", 6, 50)
    assert not any(tmp_path.rglob("*")), "nothing is stored when an image is refused"
    total = 100 + len(PNG)
    with pytest.raises(
        ImageError, match=f"thread would hold {total} bytes of images; the limit is 150"
    ):
        accept_images(
            [base64.b64encode(PNG).decode()],
            tmp_path,
            "bob",
            6,
            1000,
            thread_bytes=100,
            max_thread_bytes=150,
        )
    assert not any(tmp_path.rglob("*"))


def test_a_new_process_starts_from_the_pace_an_earlier_one_measured(servers, tmp_path) -> None:
    # a fresh `seekgraph ask` gave a slow model the budget of a fast one until its own
    # first calls were measured; the pace measured by earlier processes is kept beside
    # the index and read at start
    import os
    import subprocess

    from tests.support import BIN, REPO

    saved = tmp_path / "model_pace.json"
    saved.write_text(json.dumps({"primary-model": 40.0}))
    env = {
        **os.environ,
        "SEEKGRAPH_DATA_DIR": str(tmp_path),
        "SEEKGRAPH_LLM_MODEL": "primary-model",
        "SEEKGRAPH_LLM_BASE_URL": servers["primary"].url + "/v1",
        "SEEKGRAPH_LLM_API_KEY": "unused",
    }
    done = subprocess.run(
        [str(BIN / "seekgraph"), "ask", "How do I install the VPN client?", "--user", "bob"],
        capture_output=True, text=True, env=env, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "primary-model takes 40.0 s a call here, so this run has" in done.stderr
    # this process's own calls (fast) are saved for the next one
    assert 0 < json.loads(saved.read_text())["primary-model"] < 40.0


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        # Qwen 0.5B copied the prompt's needs block as its whole answer
        (
            "<needs>\n- a date or time: By when must I have requested my VPN profile?\n</needs>",
            "repeated its instructions",
        ),
        # …and answered a question no source answers without citing anything
        ("It will be available on December 4th.", "cited none of its sources"),
        # Qwen 1.5B over a README: a citation and nothing else
        ("[src:kb/vpn#1]", "stated nothing but citations"),
    ],
)
async def test_a_small_models_non_answer_becomes_the_closest_passages(
    servers, embedder, reply: str, why: str
) -> None:
    services = graph_services(embedder, servers)
    script_model(servers["primary"], {}, {}, {}, {"content": reply})
    out, values = await run(
        services,
        "By when must I have requested my VPN profile?",
        Context(user="bob", filtering=FilteringKnobs(fastpass_enabled=False)),
    )
    assert out["mode"] == "extractive" and out["status"] == "passages"
    assert not out["answer"].startswith("I found nothing")
    assert "<needs>" not in out["answer"] and "December 4th" not in out["answer"]
    [degraded] = [c for c in values["model_calls"] if c["node"] == "integrate"]
    assert why in degraded["detail"]
    script_model(servers["primary"])
