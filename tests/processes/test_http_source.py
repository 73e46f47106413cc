"""``HttpSource`` against a real search service process on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from seekgraph.graph.context import Context
from seekgraph.sources.base import User
from seekgraph.sources.connectors.http import HttpSource, SourceRequestError, SourceUnavailableError
from seekgraph.sources.indexes.memory import InMemorySource
from tests.conftest import kb_docs, make_services, run_graph
from tests.support.processes import Proc, start_search_server
from tests.support.waiting import await_until

BOB = User("bob", frozenset({"everyone"}))
HR = User("hana", frozenset({"everyone", "hr"}))


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    proc = start_search_server(tmp_path_factory.mktemp("search"))
    yield proc
    proc.stop()


def script(service: Proc, **body: object) -> None:
    httpx.post(service.url + "/script", json=body).raise_for_status()


def calls(service: Proc) -> int:
    return int(httpx.get(service.url + "/calls").json()["calls"])


def source(service: Proc, **kwargs: object) -> HttpSource:
    script(service)
    return HttpSource(
        "wiki",
        "docs",
        service.url + "/search",
        read_url=service.url + "/read",
        timeout=1.0,
        **kwargs,
    )  # type: ignore[arg-type]


async def test_hits_are_filtered_by_acl_and_fail_closed(service) -> None:
    wiki = source(service)
    bob = await wiki.search("wireguard band", BOB, 10)
    assert [h["doc_id"] for h in bob] == ["wiki/vpn"]  # no HR page, no page without an ACL
    hana = await wiki.search("wireguard band", HR, 10)
    assert {h["doc_id"] for h in hana} == {"wiki/vpn", "wiki/salaries"}
    assert bob[0]["source_id"] == "wiki:wiki/vpn#0" and bob[0]["authority"] == 2
    assert (await wiki.read("wiki/vpn", BOB))["title"] == "VPN on the wiki"
    assert await wiki.read("wiki/salaries", BOB) is None
    assert await wiki.read("wiki/missing", BOB) is None
    await wiki.aclose()


async def test_5xx_is_retried_and_4xx_is_not(service) -> None:
    wiki = source(service, retries=2)
    script(service, fail=[503, 500])
    before = calls(service)
    assert await wiki.search("wireguard", BOB, 5)
    assert calls(service) == before + 3
    script(service, fail=[400])
    before = calls(service)
    with pytest.raises(SourceRequestError, match="refused the query \\(400\\)"):
        await wiki.search("wireguard", BOB, 5)
    assert calls(service) == before + 1
    await wiki.aclose()


async def test_timeouts_then_an_open_circuit_stop_calling_a_dead_service(service) -> None:
    wiki = source(service, retries=0, failure_threshold=2, recovery_timeout=1.5)
    script(service, sleep=2.0)
    for _ in range(2):
        with pytest.raises(SourceUnavailableError, match="timed out"):
            await wiki.search("wireguard", BOB, 5)
    before = calls(service)
    with pytest.raises(SourceUnavailableError, match="circuit open"):
        await wiki.search("wireguard", BOB, 5)
    assert calls(service) == before  # not called while the circuit is open
    script(service)

    async def half_open() -> list[Any] | None:  # past its recovery timeout: one call goes
        try:
            return await wiki.search("wireguard", BOB, 5)
        except SourceUnavailableError as e:
            assert "circuit open" in str(e), e
            return None

    assert await await_until(half_open, timeout=10, what="the circuit to half-open")
    assert calls(service) > before  # half-open, then closed again
    await wiki.aclose()


async def test_a_failing_service_is_named_in_the_answer(service, embedder) -> None:
    wiki = source(service, retries=0)
    script(service, fail=[500] * 20)
    sources = [InMemorySource("kb", "kb", kb_docs()), wiki]
    services = make_services(embedder, sources)
    run = await run_graph(
        services, "How do I install the WireGuard VPN client?", Context(user="bob")
    )
    assert any(
        "“wiki” was unavailable (SourceUnavailableError)" in u for u in run.output["unanswered"]
    )
    assert run.output["citations"]
    script(service)
    await wiki.aclose()
