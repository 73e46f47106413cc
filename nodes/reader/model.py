"""The LLM reader: the model grades, judges, writes and checks, each with structured output.

Code overrides the model only where a program can check exactly (``nodes.reader.guard``), and
every change it makes to a model's output is recorded on the run (``model_calls``). When the
model cannot be had, each judgement falls back to the offline reader's, and the record says so.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re

from langgraph.runtime import Runtime

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.decisions import (
    AnswerReview,
    EvaluateDecision,
    Grades,
    QueryVariants,
)
from seekgraph.nodes.plumbing.evidence import by_authority, kept
from seekgraph.nodes.plumbing.llm import Decision, decide
from seekgraph.nodes.plumbing.prompting import (
    CITATION,
    conversation_of,
    layout_tags,
    render_evidence,
    repair_citations,
    strip_echo,
)
from seekgraph.nodes.plumbing.prompts import FORCED_NOTE, INTEGRATE_PROMPT
from seekgraph.nodes.plumbing.services import Services, node_name
from seekgraph.nodes.plumbing.writing import images_in_budget, stream_reply, with_images
from seekgraph.nodes.reader.base import Grading, Judged, Rephrased, Reply, Review, Written
from seekgraph.nodes.reader.guard import guard_reply
from seekgraph.nodes.reader.needs import describe_needs
from seekgraph.nodes.reader.offline import OfflineReader
from seekgraph.providers import pace
from seekgraph.providers.chat import AnswerInterruptedError, ChatModel, ModelClientError, ModelError
from seekgraph.state.models import Evidence, ModelCall, conflict_lines
from seekgraph.state.schemas import SearchState

#: The answer prompt's section names: a model heading its reply "Sources:" or "Needs:"
#: repeats the prompt's layout, it states no fact.
SECTION_NAMES = " ".join(dict.fromkeys(re.findall(r"<(\w+)>", INTEGRATE_PROMPT)))


#: …and when the reply copied its prompt's layout or rules around words of its own.
UNWRAPPED = "the reply copied parts of its prompt; they were left out"


def echoes_instructions(answer: str, prompt: str) -> str | None:
    """A line of the prompt's rules that the answer repeats word for word, or None.

    Small local models sometimes copy their instructions into the answer; such a reply is not
    an answer, whatever else it holds.
    """
    rules = prompt.split("<rules>", 1)[-1]
    for line in rules.splitlines():
        text = line.strip().lstrip("- ").strip()
        if len(text) >= 40 and text in answer:
            return text[:60]
    # a block of the prompt copied whole ("<needs>\n- a date or time: …</needs>"; golden case
    # tests/fast/test_graph_paths.py, "repeated its instructions")
    tags = layout_tags(prompt)  # a source's "<version>" placeholder is the document's
    copied = next((t for t in sorted(tags) if f"<{t}>" in answer or f"</{t}>" in answer), None)
    return f"<{copied}>" if copied else None


def passages_of(shown: list[Evidence], dated: bool = True) -> dict[str, str]:
    """What the model was shown of each passage, by source id (for ``nodes.reader.grounding``).

    The passage's date is shown as ISO; a model may write it out ("2 April 2026"). It is
    when the passage was written, not a date the passage gives (``dated=False``).
    """
    return {
        ev["source_id"]: f"{ev['title']} {_dated(ev) if dated else ''} {ev['snippet']}"
        for ev in shown
    }


def _dated(ev: Evidence) -> str:
    try:
        day = dt.date.fromisoformat((ev["updated_at"] or "")[:10])
    except ValueError:
        return ev["updated_at"] or ""
    return f"{day.isoformat()} {day.day} {day:%B} {day.year}"


#: a word of at least two letters: what an answer says besides its citations
_WORD = re.compile(r"[^\W\d_]{2}")


def allowed_words(question: str, today: dt.date) -> str:
    """What a model's answer may state that no passage holds: what its prompt says.

    The question, this month and year, and the prompt's sections' names ("Sources:",
    "Needs:"). Not today's day of the month: a bare "5" a reply states is a claim.
    """
    return f"{question} {today:%B} {today.year} {SECTION_NAMES}"


class ModelReader:
    """The reader of LLM mode: ``model`` decides; the offline reader stands in when it cannot."""

    def __init__(
        self, model: ChatModel, model_name: str | None, services: Services, ctx: Context
    ) -> None:
        self.model = model
        self.model_name = model_name
        """The name the run chose the model by (its measured pace is kept under it)."""
        self.services = services
        self.ctx = ctx
        self.offline = OfflineReader(services, ctx)

    async def rephrase(self, state: SearchState) -> Rephrased:
        """The model's variants (structured ``QueryVariants``), then the question.

        The offline reader's variants stand in when the model gives none.
        """
        prompt = self.ctx.prompts.expand_query.format(
            question=state["question"],
            conversation=conversation_of(state),
            tried="\n".join(state.get("tried_queries", [])) or "none",
            gaps="\n".join(state["verdict"].get("gap_questions", [])) or "none",
            max_variants=self.ctx.search.max_variants,
        )
        decision = await decide(node_name("expand_query"), self.model, prompt, QueryVariants)
        if decision.value is None:
            fallback = await self.offline.rephrase(state)
            queries, strategy = fallback.queries, "feedback (model unavailable)"
        else:
            queries, strategy = [*decision.value.queries, state["question"]], "llm"
        return Rephrased(queries, strategy, decision.tokens, [decision.call])

    async def grade(self, question: str, passages: list[Evidence], timeout: float) -> Grading:
        """Relevance grades per ``source_id``, in batches of ``grading_batch_size``.

        No grades when any batch could not be graded, or the batches took longer than
        ``timeout`` (then grading's pace is at least that: the next grading gets more).
        """
        step = node_name("filter_results")

        async def one(batch: list[Evidence]) -> Decision[Grades]:
            shown = "\n".join(
                f'<passage id="{ev["source_id"]}">{ev["title"]}: {ev["snippet"][:800]}</passage>'
                for ev in batch
            )
            prompt = self.ctx.prompts.grade.format(question=question, passages=shown)
            return await decide(step, self.model, prompt, Grades)

        size = max(1, self.ctx.filtering.grading_batch_size)
        batches = [passages[i : i + size] for i in range(0, len(passages), size)]
        try:
            results = await asyncio.wait_for(
                asyncio.gather(*(one(b) for b in batches)), timeout=timeout
            )
        except TimeoutError:
            if self.model_name:  # a call took at least its share: the next gets more
                pace.at_least(self.model_name, timeout / max(1, len(batches)), step)
            timed_out: ModelCall = {
                "node": step,
                "model": "none",
                "outcome": "degraded",
                "detail": f"grading timed out after {timeout:.1f} s",
                "tokens": 0,
            }
            return Grading(None, "timed out", 0, [timed_out])
        tokens = sum(r.tokens for r in results)
        calls = [r.call for r in results]
        grades: dict[str, float] = {}
        for result in results:
            if result.value is None:
                return Grading(None, "model unavailable", tokens, calls)
            grades.update({g.id: g.score for g in result.value.grades})
        return Grading(grades, "", tokens, calls)

    async def judge(self, state: SearchState) -> Judged:
        """The model's verdict; word coverage's when the model cannot give one.

        A deprecated document's newer version is read first, without asking.
        """
        ctx = self.ctx
        verdict = self.offline.coverage(state)
        if (
            verdict["action"] == "read"
            and verdict["read_doc_ids"]
            and verdict["reason"].startswith("a deprecated")
        ):
            return Judged(verdict, "coverage")
        evidence = by_authority(kept(state.get("evidence", [])))[:12]
        prompt = ctx.prompts.evaluate.format(
            question=state["question"],
            needs=describe_needs(state["question"]),
            evidence=render_evidence(evidence, 600) or "none",
            read=", ".join(state.get("documents_read", [])) or "none",
            max_read=ctx.search.max_documents_per_read,
        )
        outcome = await decide(node_name("evaluate"), self.model, prompt, EvaluateDecision)
        decision = outcome.value
        if decision is None:
            return Judged(verdict, "coverage (model unavailable)", outcome.tokens, [outcome.call])
        # a document read already is not read again: a model may ask for the same one over
        # and over, until the run's time is spent
        unread = {ev["doc_id"] for ev in evidence} - set(state.get("documents_read", []))
        verdict |= {
            "action": decision.action,
            "reason": decision.reason,
            "read_doc_ids": [d for d in decision.read_doc_ids if d in unread][
                : ctx.search.max_documents_per_read
            ],
            "gap_questions": decision.gap_questions,
        }
        if verdict["action"] == "read" and not verdict["read_doc_ids"]:
            verdict["action"] = "search"
        return Judged(verdict, "llm", outcome.tokens, [outcome.call])

    async def answer(
        self,
        state: SearchState,
        runtime: Runtime[Context],
        pool: list[Evidence],
        notes: list[str],
        forced: str | None,
        unanswered: list[str],
    ) -> Written:
        """The model's reply, streamed and guarded; the offline reader's when it cannot be shown.

        The offline reader reads the pool first: the conflicts it finds go into the prompt,
        and its reply stands in for one that was empty, cut off or held nothing shown.
        """
        ctx = self.ctx
        draft = await self.offline.draft(state, pool)
        if not pool:
            return await self.offline.finish(state, draft, pool, notes, unanswered)
        prompt = ctx.prompts.integrate.format(
            today=draft.today.isoformat(),
            question=state["question"],
            needs=describe_needs(state["question"]),
            conversation=conversation_of(state) or "none",
            sources=render_evidence(pool[:12]),
            notes="\n".join(notes + conflict_lines(draft.conflicts)) or "none",
            forced=FORCED_NOTE.format(reason=forced) if forced else "",
        )
        content = with_images(prompt, images_in_budget(state), self.services, ctx.user)
        tokens = 0
        calls: list[ModelCall] = []
        try:
            raw, tokens, served, finish = await stream_reply(self.model, content, runtime)
            body = repair_citations(raw, {ev["source_id"] for ev in pool})
            own = strip_echo(body, prompt)
            # (a reply whose words are unchanged, its spacing aside, was not unwrapped)
            unwrapped = own.split() != body.split() and bool(_WORD.search(CITATION.sub(" ", own)))
            copied = echoes_instructions(own if unwrapped else body, prompt)
            guarded: Reply | str = (
                f"repeated its instructions ({copied!r})"
                if copied
                else "was cut off at the token limit"
                if finish == "length"
                else guard_reply(
                    own if unwrapped else body,
                    allowed_words(state["question"], draft.today),
                    passages_of(pool[:12]),
                )
            )
            if isinstance(guarded, str):
                calls.append(
                    {
                        "node": node_name("integrate"),
                        "model": served,
                        "outcome": "degraded",
                        "detail": f"the reply {guarded}; wrote an extractive answer (the reply "
                        f"began {' '.join(raw.split())[:400]!r})",
                        "tokens": tokens,
                    }
                )
            else:
                changes = [UNWRAPPED] if unwrapped else []
                calls.append(
                    {
                        "node": node_name("integrate"),
                        "model": served,
                        "outcome": "ok",
                        "detail": "; ".join([*changes, *guarded.changes]),
                        "tokens": tokens,
                    }
                )
                return Written(guarded, "llm", draft.conflicts, unanswered, tokens, calls)
        except ModelClientError as exc:
            raise ModelClientError(f"integrate: {exc}") from exc
        except AnswerInterruptedError:
            raise
        except ModelError as exc:
            calls.append(
                {
                    "node": node_name("integrate"),
                    "model": "none",
                    "outcome": "degraded",
                    "detail": f"{exc}; wrote an extractive answer",
                    "tokens": 0,
                }
            )
        written = await self.offline.finish(state, draft, pool, notes, unanswered)
        written.tokens, written.calls = tokens, calls
        return written

    async def check(self, question: str, answer: str, sources: list[Evidence]) -> Review:
        """The model's review of the answer's support; none when the model cannot be had."""
        prompt = self.ctx.prompts.check_answer.format(
            question=question, answer=answer, sources=render_evidence(sources, 800)
        )
        outcome = await decide(node_name("check_answer"), self.model, prompt, AnswerReview)
        review, tokens, calls = outcome.value, outcome.tokens, [outcome.call]
        if review is None:
            return Review(None, " (support review skipped: model unavailable)", tokens, calls)
        if not (review.supported and review.definitive):
            problem = "; ".join(review.problems) or "the answer is not supported or definitive"
            return Review(problem, "", tokens, calls)
        return Review(None, "", tokens, calls)
