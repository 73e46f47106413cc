"""The web as a source, against a real web server on loopback (search engine and pages).

The engine and the pages are ``tests/fakes/web_server.py`` (SearxNG's and Brave's documented
JSON shapes); it is reached as ``localhost``, the one host these tests allow although it is
loopback — so a redirect to ``127.0.0.1`` is a redirect to a private address like any other.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator

import httpx
import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from seekgraph.graph.context import Context
from seekgraph.graph.flows import FLOWS
from seekgraph.graph.run import run, run_config
from seekgraph.sources.indexes.memory import InMemorySource
from seekgraph.sources.resilient import ResilientClient, SourceRequestError, SourceUnavailableError
from seekgraph.sources.web import (
    FetchFailedError,
    FetchRefusedError,
    WebFirewallError,
    WebSource,
    outgoing_from,
    web_source,
)
from seekgraph.sources.web.engines import BraveEngine, SearxngEngine
from seekgraph.sources.web.fetch import FetchPolicy, PageFetcher
from tests.conftest import ALICE, BOB, kb_docs, make_services, run_graph
from tests.support.processes import Proc, start_fake

QUESTION = "How often does WireGuard do a handshake?"


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    proc = start_fake(tmp_path_factory.mktemp("web"), "web_server", ready="/calls")
    proc.url = proc.url.replace("127.0.0.1", "localhost")
    yield proc
    proc.stop()


def reset(web: Proc, fail: list[int] | None = None) -> None:
    httpx.post(f"{web.url}/script", json={"reset": True, "fail": fail or []}).raise_for_status()


def sent(web: Proc) -> list[str]:
    return list(httpx.get(f"{web.url}/queries").json())


def fetcher(**policy: object) -> PageFetcher:
    return PageFetcher(FetchPolicy(allow_hosts=frozenset({"localhost"}), **policy))  # type: ignore[arg-type]


def source(web: Proc, users: list[str] | None = None) -> WebSource:
    reset(web)
    return web_source(
        engine="searxng", searxng_url=web.url, fetcher=fetcher(), users=users, per_second=None
    )


async def test_search_then_read_a_page_through_the_engine(web) -> None:
    src = source(web)
    with outgoing_from(QUESTION):
        hits = await src.search(QUESTION, BOB, 5)
    top = hits[0]
    assert top["url"] == f"{web.url}/p/wireguard-handshake" and top["kind"] == "web"
    assert top["authority"] < 1 and top["rank"] == 1 and top["fetched_at"].startswith("20")
    page = await src.read(top["doc_id"], BOB)
    assert page is not None and "every two minutes" in page["text"]
    assert "Cookie settings" not in page["text"] and "Sign in" not in page["text"]  # main text
    assert page["chunks"][0]["chunk_id"].startswith(f"web:{web.url}/p/wireguard-handshake#")
    assert sent(web) == [QUESTION]
    await src.aclose()


async def test_a_query_with_words_that_are_not_the_persons_is_never_sent(web) -> None:
    src = source(web)
    with outgoing_from(QUESTION), pytest.raises(WebFirewallError, match="not the person's"):
        await src.search(f"{QUESTION} orchid-42", ALICE, 5)
    with pytest.raises(WebFirewallError):  # no public text set: nothing may go out
        await src.search("WireGuard handshake", ALICE, 5)
    assert sent(web) == []
    await src.aclose()


async def test_a_user_without_web_permission_gets_no_hits_and_sends_nothing(web) -> None:
    src = source(web, users=["group:security"])
    with outgoing_from(QUESTION):
        assert await src.search(QUESTION, BOB, 5) == []
        assert await src.search(QUESTION, ALICE, 5)
    assert sent(web) == [QUESTION]  # alice's only
    assert await src.read(f"{web.url}/p/noise-protocol", BOB) is None
    await src.aclose()


@pytest.mark.parametrize(
    "path",
    ["/redirect/local", "/redirect/metadata"],
)
async def test_a_redirect_to_a_private_or_metadata_address_is_refused(web, path) -> None:
    pages = fetcher()
    with pytest.raises(FetchRefusedError, match="private or reserved|not fetched"):
        await pages.fetch(f"{web.url}{path}")
    await pages.aclose()


async def test_only_the_allowed_host_name_reaches_loopback(web) -> None:
    pages = fetcher()
    loopback = web.url.replace("localhost", "127.0.0.1")
    with pytest.raises(FetchRefusedError):
        await pages.fetch(f"{loopback}/p/noise-protocol")
    with pytest.raises(FetchRefusedError, match="only http"):
        await pages.fetch("file:///etc/passwd")
    strict = PageFetcher(FetchPolicy())  # nothing allowed: localhost itself is refused
    with pytest.raises(FetchRefusedError):
        await strict.fetch(f"{web.url}/p/noise-protocol")
    denied = fetcher(deny_domains=frozenset({"localhost"}))
    with pytest.raises(FetchRefusedError, match="deny list"):
        await denied.fetch(f"{web.url}/p/noise-protocol")
    for f in (pages, strict, denied):
        await f.aclose()


async def test_robots_txt_is_honoured(web) -> None:
    reset(web)
    pages = fetcher()
    with pytest.raises(FetchRefusedError, match="robots.txt"):
        await pages.fetch(f"{web.url}/private/plans")
    assert httpx.get(f"{web.url}/calls").json()["reads"] == 0  # never even asked for
    assert (await pages.fetch(f"{web.url}/doc.txt")).text.startswith("A plain text page")
    await pages.aclose()


async def test_a_slow_or_huge_page_is_cut_at_its_caps_and_other_types_are_not_read(web) -> None:
    pages = fetcher(timeout=2.0, max_bytes=100_000)
    started = time.perf_counter()
    slow = await pages.fetch(f"{web.url}/slow")
    assert slow.cut and "first paragraph arrives" in slow.text
    assert time.perf_counter() - started < 4.0
    huge = await pages.fetch(f"{web.url}/huge")
    assert huge.cut and huge.bytes == 100_000
    with pytest.raises(FetchFailedError, match="image/png"):
        await pages.fetch(f"{web.url}/image")
    await pages.aclose()


async def test_a_page_is_read_once_then_revalidated_by_its_etag(web) -> None:
    pages = fetcher()
    first = await pages.fetch(f"{web.url}/p/noise-protocol#history")
    again = await pages.fetch(f"{web.url}/p/noise-protocol/")
    assert again is first and first.etag  # the same canonical URL, a 304 from the server
    await pages.aclose()


async def test_failures_trip_the_breaker_and_a_429_is_retried_after_its_delay(web) -> None:
    reset(web, fail=[429])
    http = ResilientClient("web", timeout=2.0, retries=1, failure_threshold=2)
    engine = SearxngEngine(web.url, http)
    assert (await engine.search("WireGuard", 5))[0].url.endswith("/p/wireguard-handshake")
    assert sent(web) == ["WireGuard", "WireGuard"]  # the 429, then the retry that answered
    reset(web, fail=[500] * 4)
    for _ in range(2):
        with pytest.raises(SourceUnavailableError, match="answered 500"):
            await engine.search("WireGuard", 5)
    calls = httpx.get(f"{web.url}/calls").json()["calls"]
    with pytest.raises(SourceUnavailableError, match="circuit open"):
        await engine.search("WireGuard", 5)
    assert httpx.get(f"{web.url}/calls").json()["calls"] == calls  # not called while open
    await http.aclose()


async def test_the_brave_adapter_reads_the_same_results_and_says_what_to_fix(web) -> None:
    reset(web)
    brave = BraveEngine("test-key", ResilientClient("brave"), base_url=web.url)
    results = await brave.search("Noise protocol designer", 3)
    assert results[0].url.endswith("/p/noise-protocol") and "Trevor Perrin" in results[0].snippet
    wrong = BraveEngine("expired", ResilientClient("brave"), base_url=web.url)
    with pytest.raises(SourceRequestError, match="SEEKGRAPH_BRAVE_API_KEY"):
        await wrong.search("Noise", 3)
    await brave.aclose()
    await wrong.aclose()


async def test_restricted_evidence_never_reaches_an_outgoing_query(web, embedder) -> None:
    """alice reads the restricted Nightjar page; no word of it that she did not type leaves."""
    secret = next(d for d in kb_docs() if d.doc_id == "kb/secret")
    services = make_services(embedder, [InMemorySource("kb", "kb", kb_docs()), source(web)])
    questions = [
        "What is the Nightjar console password?",
        "What did the security team find in Nightjar?",
        "Which password should I use for the console?",
    ]
    for question in questions:
        done = await run_graph(services, question, Context(user="alice", max_rounds=3))
        found = [ev["snippet"] for ev in done.output["evidence"] if ev["kept_by"] != "none"]
        assert any("orchid-42" in f for f in found)  # she may read it, and it was found
        outbound = [e["query"] for e in done.events if e.get("outbound")]
        assert outbound and set(outbound) <= set(sent(web))  # she sees every query that left
    private = {w.lower() for w in secret.text.replace(".", " ").split()}
    for query in sent(web):
        words = {w.lower().strip("?") for w in query.split()}
        asked = {w.lower().strip("?") for q in questions for w in q.split()}
        assert not (words - asked) & private, query
    await services.registry.get("web").aclose()  # type: ignore[attr-defined]


async def test_research_with_web_and_private_sources_cites_both(web, embedder) -> None:
    services = make_services(embedder, [InMemorySource("kb", "kb", kb_docs()), source(web)])
    graph = FLOWS["research"].compile(services, InMemorySaver())
    plan = [
        {"id": "q1", "question": "How do I connect to the VPN with WireGuard?"},
        {"id": "q2", "question": "How often does WireGuard do a handshake?"},
    ]
    done = await run(
        graph,
        {
            "question": "WireGuard for new staff: connecting, and how its handshake works",
            "plan": plan,
        },
        run_config("web-research"),
        Context(user="bob"),
    )
    kinds = {r["kind"] for r in done.values["references"]}
    assert {"kb", "web"} <= kinds, done.values["references"]
    web_refs = [r for r in done.values["references"] if r["kind"] == "web"]
    assert all(r["url"].startswith(web.url) for r in web_refs)
    assert "Nightjar" not in str(done.values)  # bob's report holds nothing of alice's
    await services.registry.get("web").aclose()  # type: ignore[attr-defined]


async def test_research_plans_over_every_source_with_the_web_on_and_no_private_word_leaves(
    web, embedder
) -> None:
    """The offline plan searches every source, the web too, with the person's words only.

    It used to call the web without the firewall's public text: the run failed with
    ``WebFirewallError`` whenever a search engine was configured.
    """
    secret = next(d for d in kb_docs() if d.doc_id == "kb/secret")
    services = make_services(embedder, [InMemorySource("kb", "kb", kb_docs()), source(web)])
    graph = FLOWS["research"].compile(services, InMemorySaver())
    request = "WireGuard for new staff: the VPN, its handshake, and the Nightjar console"
    done = await run(graph, {"question": request}, run_config("web-plan"), Context(user="alice"))
    assert done.values["plan_status"] == "planned" and len(done.values["plan"]) >= 2
    assert done.values["answer"] and done.values["references"]
    queries = sent(web)
    assert request in queries  # the plan's broad search reached the web
    asked = {w.lower().strip("?:,") for w in request.split()}
    private = {w.lower().strip(".,") for w in secret.text.split()} - asked
    for query in queries:
        assert not {w.lower().strip("?:,") for w in query.split()} & private, query
    await services.registry.get("web").aclose()  # type: ignore[attr-defined]


def test_settings_turn_the_web_on_and_a_bad_workspace_entry_says_what_to_fix(tmp_path) -> None:
    from seekgraph.server.bootstrap import configured_web
    from seekgraph.server.settings import Settings
    from seekgraph.sources.ingestion.workspace import WorkspaceError, demo_workspace

    assert configured_web(Settings(data_dir=tmp_path), demo_workspace()) is None
    on = configured_web(
        Settings(data_dir=tmp_path, searxng_url="http://localhost:1"), demo_workspace()
    )
    assert isinstance(on, WebSource) and on.users is None  # the demo says nothing: everyone
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "workspace.json").write_text('{"sources": [], "users": {}, "web": "all"}')
    with pytest.raises(WorkspaceError, match="'web' must be a list of principals"):
        configured_web(Settings(data_dir=tmp_path, searxng_url="http://x"), tmp_path / "ws")


async def test_a_model_that_copies_private_evidence_into_its_queries_cannot_send_it(
    web, embedder
) -> None:
    """LLM mode: the model's variants and gap questions quote the restricted passage."""
    leaky = json.dumps(
        {
            "queries": ["Nightjar console password orchid-42"],
            "grades": [],
            "action": "search",
            "reason": "more",
            "read_doc_ids": [],
            "gap_questions": ["orchid-42 console password rotation"],
            "supported": True,
            "definitive": True,
            "problems": [],
        }
    )
    model = GenericFakeChatModel(messages=itertools.cycle([AIMessage(content=leaky)]))
    services = make_services(
        embedder, [InMemorySource("kb", "kb", kb_docs()), source(web)], chat_model=model
    )
    question = "What is the Nightjar console password?"
    done = await run_graph(services, question, Context(user="alice", max_rounds=3, mode="llm"))
    variants = [q for e in done.node_events("expand_query") for q in e["detail"]["queries"]]
    assert any("orchid-42" in v for v in variants)  # the private search did use them
    assert sent(web) and not any("orchid" in q or "42" in q for q in sent(web)), sent(web)
    await services.registry.get("web").aclose()  # type: ignore[attr-defined]


async def test_a_page_the_question_names_is_read_and_a_private_one_refused(web, embedder) -> None:
    services = make_services(embedder, [InMemorySource("kb", "kb", kb_docs()), source(web)])
    question = f"Who designed the framework described at {web.url}/p/noise-protocol ?"
    done = await run_graph(services, question, Context(user="bob"))
    [read] = done.node_events("read_documents")[:1]
    assert read["detail"]["read"] == [f"{web.url}/p/noise-protocol"]
    assert "Trevor Perrin" in done.output["answer"]
    [cited] = [c for c in done.output["citations"] if "noise-protocol" in (c["url"] or "")]
    # the citation links to the passage itself: a text fragment of its first words
    assert cited["url"].startswith(f"{web.url}/p/noise-protocol#:~:text=")
    private = web.url.replace("localhost", "127.0.0.1")
    done = await run_graph(
        services, f"What is on {private}/p/noise-protocol ?", Context(user="bob")
    )
    [refused] = done.node_events("read_documents")[:1]
    assert (
        refused["detail"]["read"] == []
        and "private or reserved" in refused["detail"]["not_read"][0]
    )
    await services.registry.get("web").aclose()  # type: ignore[attr-defined]


async def test_a_web_snippet_without_the_fact_leads_to_its_page_being_read(web, embedder) -> None:
    # the engine's snippet of the library's page ends before the year: the page is read,
    # and the answer cites the page's own passage, never the snippet
    services = make_services(embedder, [InMemorySource("kb", "kb", kb_docs()), source(web)])
    done = await run_graph(
        services, "When did the Harbour Street Library first open?", Context(user="bob")
    )
    reads = [r for e in done.node_events("read_documents") for r in e["detail"]["read"]]
    assert f"{web.url}/p/harbour-street-library" in reads
    out = done.output
    assert "1887" in out["answer"]
    cited = [c["id"] for c in out["citations"]]
    assert cited and not any(c.endswith("#result") for c in cited)
    await services.registry.get("web").aclose()  # type: ignore[attr-defined]


def test_the_issues_research_request_over_http_runs_with_the_web_on(tmp_path) -> None:
    """``POST /threads/{t}/runs {"flow": "research"}`` with a search engine configured.

    It ended ``error: the run failed (WebFirewallError)``; now it reports, and every query
    that left is made of the person's words.
    """
    from seekgraph.server.auth import add_key_to_file
    from tests.support.processes import auth, start_app

    procs: list[Proc] = []
    try:
        engine = start_fake(tmp_path, "web_server", ready="/calls")
        procs.append(engine)
        engine_url = engine.url.replace("127.0.0.1", "localhost")
        keys = tmp_path / "keys.json"
        key = add_key_to_file(keys, "alice")
        env = {"SEEKGRAPH_API_KEYS_FILE": keys, "SEEKGRAPH_SEARXNG_URL": engine_url,
               "SEEKGRAPH_WEB_ALLOW_HOSTS": "localhost"}  # fmt: skip
        app = start_app(tmp_path, "web-research", env)
        procs.append(app)
        question = "How do I connect to the VPN and set up SSO?"
        with httpx.Client(base_url=app.url, headers=auth(key), timeout=180) as client:
            thread = client.post("/threads").json()["thread_id"]
            body = {"question": question, "flow": "research", "stream": False}
            accepted = client.post(f"/threads/{thread}/runs", json=body)
            assert accepted.status_code == 202, accepted.text
            run = accepted.json()["run_id"]
            joined = client.post(f"/threads/{thread}/runs/{run}/join").json()
        assert joined["run"]["status"] == "success", joined["run"]
        assert joined["values"]["answer"] and joined["values"]["references"]
        queries = list(httpx.get(f"{engine.url}/queries").json())
        assert question in queries  # the plan searched the web, with the person's words
        asked = {w.lower().strip("?") for w in question.split()}
        for query in queries:
            assert {w.lower().strip("?") for w in query.split()} <= asked, query
    finally:
        for proc in reversed(procs):
            proc.stop()
