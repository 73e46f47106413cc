"""``read_documents``: fetch whole documents (permission-checked) and keep their best passages.

Names found in what was read become bridge terms for the next search (multi-hop).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import Services, node_name, user_of
from seekgraph.nodes.plumbing.web import typed_urls
from seekgraph.providers.terms import STOPWORDS, display_words, term_set
from seekgraph.state.events import node_event
from seekgraph.state.models import Document, Evidence, hit_of
from seekgraph.state.schemas import SearchState

PASSAGES_PER_DOCUMENT = 3
#: A long document's chunks are pre-selected by the question's words before reranking.
MAX_RERANKED_CHUNKS = 200


def bridge_terms(question: str, documents: list[Document], limit: int = 5) -> list[str]:
    """Capitalised names in the documents that the question does not mention."""
    asked = term_set(question)
    counts: Counter[str] = Counter()
    for doc in documents:
        for word in display_words(doc["text"]):
            if word[:1].isupper() and word.lower() not in STOPWORDS and not term_set(word) & asked:
                counts[word] += 1
    return [w for w, _ in counts.most_common(limit)]


async def read_documents(
    state: SearchState, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """Read the documents the verdict asked for and add their relevant passages."""
    ctx = runtime.context
    user = await user_of(services, ctx)
    round_ = state["budget"]["rounds"]
    wanted = state["verdict"]["read_doc_ids"]
    home = {ev["doc_id"]: ev["source"] for ev in state.get("evidence", [])}
    # A replacement document lives in the same source as the deprecated one it replaces.
    for ev in state.get("evidence", []):
        if ev["superseded_by"]:
            home.setdefault(ev["superseded_by"], ev["source"])
    allowed_sources = {s.name for s in services.registry.select(ctx.sources)}
    outbound = set(state.get("outbound", []))
    spent = dict(state.get("web_spent") or {"pages": 0, "bytes": 0, "seconds": 0.0})
    documents: list[Document] = []
    unread: list[str] = []
    typed = set(typed_urls(state))
    for doc_id in wanted:
        name = home.get(doc_id)
        if name is None and doc_id in typed and outbound:  # a page the person named
            name = sorted(outbound)[0]
        if name is None or name not in allowed_sources:
            continue
        if name in outbound:
            over = web_budget_spent(spent, ctx)
            if over:
                unread.append(f"{doc_id}: {over}")
                continue
            started = time.perf_counter()
            try:
                doc = await services.registry.get(name).read(doc_id, user)
            except (OSError, ValueError) as exc:  # refused (private address, robots), failed
                unread.append(f"{doc_id}: {exc}"[:300])
                doc = None
            spent["pages"] += 1
            spent["seconds"] += time.perf_counter() - started
            spent["bytes"] += doc.get("bytes", 0) if doc is not None else 0
        else:
            doc = await services.registry.get(name).read(doc_id, user)
        if doc is not None:  # None: gone, or not for this user — say nothing about which
            documents.append(doc)
    evidence: list[Evidence] = []
    source = {s.name: s for s in services.registry.select(ctx.sources)}
    for doc in documents:
        chunks = doc["chunks"]
        if len(chunks) > MAX_RERANKED_CHUNKS:  # a huge file: rerank what shares words only
            asked = term_set(state["question"])
            chunks = sorted(chunks, key=lambda c: -len(asked & term_set(c["text"])))[
                :MAX_RERANKED_CHUNKS
            ]
        texts = [f"{doc['title']}. {c.get('heading', '')}. {c['text']}" for c in chunks]
        scores = await services.reranker.rerank(state["question"], texts)
        ranked = sorted(zip(chunks, scores, strict=True), key=lambda cs: -cs[1])
        for i, (chunk, score) in enumerate(ranked[:PASSAGES_PER_DOCUMENT]):
            if i > 0 and score < ctx.filtering.rerank_min_score:  # the best passage is always kept
                break
            hit = hit_of(
                doc,
                chunk,
                authority=source[doc["source"]].authority,
                score=score,
                query=state["question"],
            )
            evidence.append(
                {
                    **hit,  # type: ignore[typeddict-item]
                    "scores": {"read": score},
                    "kept_by": "read",
                    "queries": [state["question"]],
                    "round": round_,
                }
            )
    bridges = bridge_terms(state["question"], documents)
    titles = ", ".join(d["title"] for d in documents) or "nothing readable"
    runtime.stream_writer(
        node_event(
            node_name("read_documents"),
            f"read {len(documents)} of {len(wanted)} documents ({titles}); "
            f"kept {len(evidence)} passages",
            read=[d["doc_id"] for d in documents],
            bridge_terms=bridges,
            **({"not_read": unread} if unread else {}),
        )
    )
    update: dict[str, Any] = {
        "evidence": evidence,
        "documents_read": list(wanted),
        "bridge_terms": bridges,
    }
    if outbound:
        update["web_spent"] = spent
    return update


def web_budget_spent(spent: dict[str, float], ctx: Context) -> str | None:
    """Why no more web pages may be read this question, or ``None``."""
    if spent["pages"] >= ctx.web.max_pages:
        return f"web page budget spent ({ctx.web.max_pages} pages)"
    if spent["bytes"] >= ctx.web.max_bytes:
        return f"web byte budget spent ({ctx.web.max_bytes} bytes)"
    if spent["seconds"] >= ctx.web.max_seconds:
        return f"web time budget spent ({ctx.web.max_seconds:.0f} s)"
    return None
