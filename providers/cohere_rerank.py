"""Cohere reranking through the official client, falling back to the local reranker."""

from __future__ import annotations

import asyncio
import logging

import cohere
import httpx

from seekgraph.providers.rerank import Reranked, Reranker

log = logging.getLogger("seekgraph.rerank")


class CohereReranker:
    """Scores with Cohere's rerank endpoint; on any failure, with ``fallback`` (and says so)."""

    name = "cohere"

    def __init__(
        self,
        api_key: str,
        fallback: Reranker,
        model: str = "rerank-v3.5",
        base_url: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.http = httpx.AsyncClient(timeout=timeout)
        self.client = cohere.AsyncClientV2(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            httpx_client=self.http,
        )
        self.fallback = fallback
        self.model = model
        self.timeout = timeout
        self.failures = 0

    async def rerank(self, query: str, passages: list[str]) -> list[float]:
        """Relevance in [0, 1] per passage, from Cohere (or the fallback on failure)."""
        return (await self.rerank_detailed(query, passages)).scores

    async def rerank_detailed(self, query: str, passages: list[str]) -> Reranked:
        """The scores and which reranker served them (this call's fact, not the object's)."""
        if not passages:
            return Reranked([], self.name)
        try:
            response = await asyncio.wait_for(
                self.client.rerank(model=self.model, query=query, documents=passages),
                timeout=self.timeout,
            )
            scores = [0.0] * len(passages)
            for result in response.results:
                scores[result.index] = round(float(result.relevance_score), 4)
            return Reranked(scores, self.name)
        except Exception as exc:  # noqa: BLE001 - any failure: the local reranker takes over
            self.failures += 1
            log.warning("Cohere rerank failed (%s); using the local reranker", type(exc).__name__)
            served = f"{self.fallback.name} (cohere failed: {type(exc).__name__})"
            return Reranked(await self.fallback.rerank(query, passages), served)

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self.http.aclose()
