"""Per-run knobs: one frozen ``Context`` dataclass of groups; every field says what it does.

The run-level choices (who asks, the mode, the sources, the model, the rounds) sit at the
top; the rest are grouped by what they tune: ``budget``, ``search``, ``filtering``, the
``offline`` reader, ``web``, ``research`` and ``prompts`` (``ctx.filtering.rerank_enabled``).
A group given as a dict (JSON: the API, LangGraph Studio) becomes its dataclass.

It lives beside the nodes (which read it) so that imports point downward; ``graph.context``
re-exports it for callers of the graph.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from seekgraph.nodes.plumbing import prompts
from seekgraph.sources.registry import MAX_SOURCES

logger = logging.getLogger(__name__)


def _d(
    description: str, request: bool = False, was: str = "", **bounds: float
) -> dict[str, object]:
    """A field's metadata: its description, and whether the API's run request sets it.

    ``request`` fields are also what a run carries to another instance; ``ge``/``le`` bound
    them in the request. ``was`` is a grouped field's flat name before grouping when it
    differs from its name now (``web_max_pages`` is ``web.max_pages``).
    """
    meta: dict[str, object] = {"description": description, "request": request, **bounds}
    if was:
        meta["was"] = was
    return meta


@dataclass(frozen=True, kw_only=True)
class BudgetKnobs:
    """What a run may spend besides its rounds: tokens, seconds, fruitless attempts."""

    max_tokens: int = field(default=40_000, metadata=_d("Most LLM tokens a run may spend."))
    max_seconds: float = field(default=120.0, metadata=_d("Wall-clock budget of a run, seconds."))
    fit_seconds_to_model: bool = field(
        default=True,
        metadata=_d(
            "LLM mode: raise the wall-clock budget to what the model's measured pace needs for "
            "max_rounds rounds (at most 10 × max_seconds)."
        ),
    )
    max_bad_attempts: int = field(
        default=2, metadata=_d("Rounds without new evidence or rejected answers before stopping.")
    )


@dataclass(frozen=True, kw_only=True)
class SearchKnobs:
    """How each round searches: its query variants, passages per source, documents read."""

    max_variants: int = field(default=3, metadata=_d("Most query variants per round."))
    variant_similarity_threshold: float | None = field(
        default=None,
        metadata=_d(
            "Drop a variant whose embedding cosine to a tried query is at least this; unset "
            "uses the embedding model's paraphrase cosine (MiniLM 0.95, e5-small 0.985)."
        ),
    )
    search_k: int = field(default=6, metadata=_d("Passages asked of each source per query."))
    max_documents_per_read: int = field(default=3, metadata=_d("Documents read whole per step."))


@dataclass(frozen=True, kw_only=True)
class FilteringKnobs:
    """The filter stages a round's hits pass: FastPass, rerank, LLM grading."""

    fastpass_enabled: bool = field(default=True, metadata=_d("Enable the FastPass stage."))
    fastpass_max_hits: int = field(
        default=2, metadata=_d("FastPass applies to at most this many hits.")
    )
    fastpass_min_score: float = field(
        default=0.7, metadata=_d("FastPass keeps hits untouched when all score at least this.")
    )
    rerank_enabled: bool = field(default=True, metadata=_d("Enable the rerank stage."))
    rerank_min_score: float = field(
        default=0.3, metadata=_d("Rerank keeps hits scoring at least this.")
    )
    meaning_min_score: float = field(
        default=0.15,
        metadata=_d(
            "A passage or sentence this close to the question in meaning (calibrated cosine "
            "of the embedding model, 0-1) is kept and may answer though it shares no word "
            "with the question (a paraphrase)."
        ),
    )
    # 0.15 is, for all-MiniLM-L6-v2, cosine 0.325: closer than 99 % of unrelated pairs
    # (SciFact: 99 % of random abstracts below 0.33). Chosen on the paraphrase tuning half
    # (bench/results/paraphrase.md): 0.3 → 44 % answered, 0.15 → 59 %, 0.05 → 63 %, all
    # with 6 of 7 unanswerable refused; 0.0 refuses 2 of 7. bench.answers dev unchanged.
    context_weight: float = field(
        default=0.8,
        metadata=_d(
            "How far the messages around a chat message lift its rerank score toward theirs "
            "(0 judges a message alone)."
        ),
    )
    retrieval_weight: float = field(
        default=0.4,
        metadata=_d(
            "Share of the source's own retrieval score (scaled to [0, 1]) in the rerank score "
            "(0: the reranker alone)."
        ),
    )
    message_retrieval_weight: float = field(
        default=0.2,
        metadata=_d(
            "retrieval_weight for a chat message judged with its neighbours (its retrieval "
            "score saw the message alone)."
        ),
    )
    rerank_top_k: int = field(
        default=8, metadata=_d("Rerank keeps at most this many hits a round.")
    )
    grading_enabled: bool = field(default=True, metadata=_d("Enable LLM grading (LLM mode only)."))
    grading_batch_size: int = field(default=10, metadata=_d("Passages per LLM grading call."))
    grading_timeout: float = field(
        default=30.0,
        metadata=_d(
            "Seconds before grading gives up (raised to the model's measured pace when "
            "budget.fit_seconds_to_model)."
        ),
    )
    grading_min_score: float = field(
        default=0.5, metadata=_d("LLM grading keeps hits at least this.")
    )


@dataclass(frozen=True, kw_only=True)
class OfflineReaderKnobs:
    """The offline (extractive) reader: when the evidence answers, and what it quotes."""

    coverage_threshold: float = field(
        default=0.75, metadata=_d("Share of question terms the evidence must cover to answer.")
    )
    quote_context_weight: float = field(
        default=0.5,
        metadata=_d(
            "How far the messages around a chat message lift its sentences toward their score "
            "when the extractive answer picks what to quote (0 judges a sentence alone)."
        ),
    )
    max_answer_sentences: int = field(
        default=5, metadata=_d("Most quoted sentences in an extractive answer.")
    )
    bridge_rounds: int = field(
        default=0,
        metadata=_d(
            "Extra search rounds that follow names found in the evidence before answering "
            "(multi-hop questions; each costs one round)."
        ),
    )
    freshness_probe: bool = field(
        default=True,
        metadata=_d(
            "Before an extractive answer quotes a document's amount or date that the question "
            "asks for, search once with that sentence's own words for a newer source that "
            "changes it (one more round)."
        ),
    )


@dataclass(frozen=True, kw_only=True)
class WebKnobs:
    """What one question may read of the web (the web source's budget)."""

    max_pages: int = field(
        default=4, metadata=_d("Web pages a question may read.", was="web_max_pages")
    )
    max_bytes: int = field(
        default=4_000_000,
        metadata=_d("Bytes of web pages a question may download in all.", was="web_max_bytes"),
    )
    max_seconds: float = field(
        default=30.0,
        metadata=_d(
            "Seconds a question may spend reading web pages in all.", was="web_max_seconds"
        ),
    )


@dataclass(frozen=True, kw_only=True)
class ResearchKnobs:
    """A research report: its length and its token budget."""

    report_words: int = field(
        default=1500,
        metadata=_d(
            "Length of a research report's body, words: the quotes are chosen to fit it.",
            request=True,
            ge=100,
            le=20000,
        ),
    )
    report_max_tokens: int = field(
        default=400_000,
        metadata=_d(
            "Most LLM tokens a research report may spend (its plan, every sub-question's "
            "search, its sections); checked before each batch.",
            request=True,
            ge=0,
        ),
    )


@dataclass(frozen=True, kw_only=True)
class PromptKnobs:
    """The LLM reader's prompts; the defaults are the constants of ``nodes/plumbing/prompts.py``."""

    expand_query: str = field(
        default=prompts.EXPAND_QUERY_PROMPT,
        metadata=_d("Writes a round's query variants.", was="expand_query_prompt"),
    )
    grade: str = field(
        default=prompts.GRADE_PROMPT,
        metadata=_d("Grades a batch of passages.", was="grade_prompt"),
    )
    evaluate: str = field(
        default=prompts.EVALUATE_PROMPT,
        metadata=_d("Judges whether the evidence answers.", was="evaluate_prompt"),
    )
    integrate: str = field(
        default=prompts.INTEGRATE_PROMPT,
        metadata=_d("Writes the answer from the evidence.", was="integrate_prompt"),
    )
    check_answer: str = field(
        default=prompts.CHECK_ANSWER_PROMPT,
        metadata=_d("Checks the written answer against its sources.", was="check_answer_prompt"),
    )


@dataclass(frozen=True, kw_only=True)
class Context:
    """Everything a single run may tune. An explicit value here always wins over settings."""

    user: str = field(default="", metadata=_d("Who asks; the permission context of the run."))
    mode: Literal["auto", "llm", "extractive"] = field(
        default="auto",
        metadata=_d(
            "llm, extractive (no model), or auto: llm when a chat model is configured.",
            request=True,
        ),
    )
    sources: tuple[str, ...] = field(
        default=(),
        metadata=_d(
            "Names of the sources to search; empty means all of them (each searched once).",
            request=True,
            max_length=MAX_SOURCES,
        ),
    )
    model: str | None = field(
        default=None,
        metadata=_d("A configured chat model to use instead of the default.", request=True),
    )
    max_rounds: int = field(
        default=3, metadata=_d("Most search rounds before answering.", request=True, ge=1, le=10)
    )
    review_before_answer: bool = field(
        default=False,
        metadata=_d(
            "Pause before the answer is written so a person can drop evidence (the run ends "
            "'waiting'; resume with Command(resume={'drop': [ids]})).",
            request=True,
        ),
    )
    budget: BudgetKnobs = field(default_factory=BudgetKnobs, metadata=_d(BudgetKnobs.__doc__ or ""))
    search: SearchKnobs = field(default_factory=SearchKnobs, metadata=_d(SearchKnobs.__doc__ or ""))
    filtering: FilteringKnobs = field(
        default_factory=FilteringKnobs, metadata=_d(FilteringKnobs.__doc__ or "")
    )
    offline: OfflineReaderKnobs = field(
        default_factory=OfflineReaderKnobs, metadata=_d(OfflineReaderKnobs.__doc__ or "")
    )
    web: WebKnobs = field(default_factory=WebKnobs, metadata=_d(WebKnobs.__doc__ or ""))
    research: ResearchKnobs = field(
        default_factory=ResearchKnobs, metadata=_d(ResearchKnobs.__doc__ or "")
    )
    prompts: PromptKnobs = field(
        default_factory=PromptKnobs, metadata=_d(PromptKnobs.__doc__ or "")
    )

    def __post_init__(self) -> None:
        """A group given as a dict (JSON from the API or Studio) becomes its dataclass."""
        for name, kind in GROUPS.items():
            value = getattr(self, name)
            if isinstance(value, Mapping):
                object.__setattr__(self, name, group_of(name, value))
            elif not isinstance(value, kind):
                raise TypeError(
                    f"Context.{name} is a {kind.__name__} or a dict of its knobs, "
                    f"not {type(value).__name__}"
                )


GROUPS: dict[str, type[Any]] = {
    "budget": BudgetKnobs,
    "search": SearchKnobs,
    "filtering": FilteringKnobs,
    "offline": OfflineReaderKnobs,
    "web": WebKnobs,
    "research": ResearchKnobs,
    "prompts": PromptKnobs,
}
"""``Context``'s groups: the field's name and its dataclass."""

FLAT_NAMES: dict[str, tuple[str, str]] = {
    str(f.metadata.get("was") or f.name): (group, f.name)
    for group, kind in GROUPS.items()
    for f in fields(kind)
}
"""A knob's flat name before grouping → its group and its name there (deprecated spelling)."""

_warned: set[str] = set()


def group_of(name: str, data: Mapping[str, Any]) -> Any:
    """Group ``name``'s dataclass from a dict of its knobs; an unknown knob says what is known."""
    kind = GROUPS[name]
    known = [f.name for f in fields(kind)]
    for key in data:
        if key not in known:
            raise TypeError(f"{name} has no knob {key!r}; its knobs: {', '.join(known)}")
    return kind(**data)


def regrouped(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with the knobs' flat names of before grouping moved into their groups.

    ``{"rerank_enabled": False}`` becomes ``{"filtering": {"rerank_enabled": False}}``; other
    keys are kept as they are. The flat names are the deprecated spelling (callers written
    before the grouping, runs recorded by an older instance); each one is logged once. A knob
    given both ways is a ``ValueError`` naming the one to keep.
    """
    out = {k: v for k, v in data.items() if k not in FLAT_NAMES}
    for old, value in data.items():
        if old not in FLAT_NAMES:
            continue
        group, name = FLAT_NAMES[old]
        given = out.get(group) or {}
        if not isinstance(given, Mapping) or name in given:
            raise ValueError(
                f"{old} is given twice: as {old} and as {group}.{name}; send {group}.{name} only"
            )
        merged = dict(given)
        merged[name] = value
        out[group] = merged
        if old not in _warned:
            _warned.add(old)
            logger.warning(
                "the run knob %s is now %s.%s; the flat name is deprecated", old, group, name
            )
    return out
