"""``integrate``: write the answer from the evidence, ranked by authority, citing every claim.

Both modes share the bookkeeping: deprecated documents replaced by their newer version,
conflicts between sources detected and resolved by authority (then recency), and an honest
list of what is missing. Extractive mode quotes the most relevant sentences; LLM mode streams
a written answer.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from langgraph.runtime import Runtime

from nodes.answerable import Judgement, judge_quotes, mentions, required_words, subject_part
from nodes.attribution import wrong_person
from nodes.conflicts import conflict_lines, current_first, find_conflicts
from nodes.context import Context
from nodes.evidence import by_authority, kept, only_changed, relevance
from nodes.extractive import (
    Quote,
    extractive_answer,
)
from nodes.needs import describe_needs, needs_of
from nodes.prompting import (
    CITATION,
    conversation_of,
    render_evidence,
    repair_citations,
    strip_echo,
)
from nodes.prompts import FORCED_NOTE, INTEGRATE_PROMPT, TOKENS_SPENT
from nodes.reader.base import Reply
from nodes.reader.guard import ATTACHED, KEPT_HELD, RECITED, guard_reply
from nodes.reader.offline import offline_reply, ranked_passages
from nodes.reader.passages import MAX_REPLY_CHARS, closest, passages_reply
from nodes.services import Services, chat_model_for, node_name, now
from nodes.services import today as today_utc
from nodes.writing import (
    images_in_budget,
    resolve_versions,
    stream_reply,
    unanswered_of,
    with_images,
)
from providers.chat import (
    AnswerInterruptedError,
    ModelClientError,
    ModelError,
)
from providers.terms import term_set
from state.budget import exhausted, spend
from state.events import node_event
from state.models import Evidence, ModelCall, is_pointer
from state.schemas import SearchState

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
    # a block of the prompt copied whole ("<needs>\n- a date or time: …</needs>": Qwen 0.5B)
    tags = set(re.findall(r"</?([a-z_]+)>", prompt))
    copied = next((t for t in sorted(tags) if f"<{t}>" in answer or f"</{t}>" in answer), None)
    return f"<{copied}>" if copied else None


def passages_of(shown: list[Evidence], dated: bool = True) -> dict[str, str]:
    """What the model was shown of each passage, by source id (for ``nodes.grounding``).

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


def about_what_is_asked(question: str, quote: Quote, ctx: Context) -> bool:
    """A quote names at least half of what the question is about, or means it.

    Two sources disagreeing on the meal allowance are no answer to "What is the parking
    allowance for visitors?": "allowance" is one of its three subject words.
    """
    words = required_words(subject_part(question))
    seen = term_set(f"{quote.evidence['title']} {quote.sentence}")
    named = sum(mentions(w, seen) for w in words)
    return 2 * named >= len(words) or (quote.pulled and quote.meaning >= ctx.meaning_min_score)


def allowed_words(question: str, today: dt.date) -> str:
    """What a model's answer may state that no passage holds: what its prompt says.

    The question, this month and year, and the prompt's sections' names ("Sources:",
    "Needs:"). Not today's day of the month: a bare "5" a reply states is a claim.
    """
    return f"{question} {today:%B} {today.year} {SECTION_NAMES}"


async def integrate(
    state: SearchState, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """Write the answer; when the budget is spent, answer anyway and say what is missing."""
    ctx = runtime.context
    budget = state["budget"]
    forced = exhausted(budget) if state["verdict"]["action"] != "answer" else None
    evidence = kept(state.get("evidence", []))
    # a web result's snippet points to a page: the page's passages answer, never the snippet
    pointers = [ev for ev in evidence if is_pointer(ev)]
    read = {ev["doc_id"] for ev in evidence if ev["kind"] == "web" and not is_pointer(ev)}
    unreadable = [ev for ev in pointers if ev["doc_id"] not in read]
    pool, notes = resolve_versions(by_authority([ev for ev in evidence if not is_pointer(ev)]))
    model = chat_model_for(services, state)
    if (
        model is None
        and state.get("mode") == "llm"
        and budget["tokens_used"] >= budget["max_tokens"]
    ):
        notes = [*notes, TOKENS_SPENT.format(used=budget["tokens_used"], most=budget["max_tokens"])]
    lines, relevant, scored = await extractive_answer(state, ctx, pool, services)
    quoted = [(q.sentence, q.evidence) for q in scored]
    # With bridge rounds on, questions are multi-hop: the answer's words are not the
    # question's, so quotes are not judged by them.
    judged = (
        Judgement([], False, False)
        if ctx.bridge_rounds > 0
        else judge_quotes(state["question"], scored, ctx.meaning_min_score)
    )
    gaps, nothing_answers = judged.gaps, judged.nothing
    today = today_utc()
    conflicts = find_conflicts(relevant, today)
    # Sources that disagree on what was asked: that is the answer (newest fact first), not
    # "found nothing" beside it. On what was asked: one side is among the best quotes, is
    # about the question's subject and carries what its typed needs ask for (an amount…).
    needs = needs_of(state["question"])
    about = {q.sentence for q in scored if about_what_is_asked(state["question"], q, ctx)}
    disputed = any(
        claim["text"] in about and all(n.carried_by(claim["text"]) for n in needs)
        for c in conflicts
        for claim in c["claims"]
    )
    if disputed:
        gaps, nothing_answers = [], False
    lines = current_first(lines, conflicts)
    tokens = 0
    calls: list[ModelCall] = []
    mode = "extractive"
    offline = offline_reply(lines, quoted, scored, pool, nothing_answers, disputed, relevant)
    reply = offline
    if pool and model is not None:
        prompt = ctx.integrate_prompt.format(
            today=today.isoformat(),
            question=state["question"],
            needs=describe_needs(state["question"]),
            conversation=conversation_of(state) or "none",
            sources=render_evidence(pool[:12]),
            notes="\n".join(notes + conflict_lines(conflicts)) or "none",
            forced=FORCED_NOTE.format(reason=forced) if forced else "",
        )
        content = with_images(prompt, images_in_budget(state), services, ctx.user)
        try:
            raw, tokens, served, finish = await stream_reply(model, content, runtime)
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
                    allowed_words(state["question"], today),
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
                mode, reply = "llm", guarded
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
    body, status = reply.body, reply.status
    if mode == "extractive" and status != "answered":
        nothing_answers = True  # what follows is said of a reply that does not answer
    if mode == "extractive" and notes and not nothing_answers:  # conflicts travel apart, shown once
        body += "\n\n" + "\n".join(notes)
    unanswered = unanswered_of(state, ctx, forced, pool)
    unanswered += [
        f"The page “{ev['title']}” ({ev['url'] or ev['doc_id']}) could not be read; a search "
        "engine's snippet of it is not evidence."
        for ev in {e["doc_id"]: e for e in unreadable}.values()
    ]
    if mode == "extractive" and (gaps or judged.by_meaning or status != "answered"):
        # more precise than word coverage; and a reply that does not answer never lists the
        # question's own words as what is missing
        unanswered = [u for u in unanswered if not u.startswith("No source found mentions")]
    if mode == "extractive" and gaps and status == "answered":
        unanswered.insert(0, f"No source found says: {', '.join(gaps)}.")
    if mode == "extractive" and (
        someone_else := await wrong_person(state["question"], pool, services.reranker)
    ):
        unanswered.insert(0, someone_else)
    if unanswered and mode == "extractive" and status != "not_found":
        footer = "\n\nMissing: " + " ".join(unanswered)
        if status == "passages":  # the passages make room for what is missing
            body = passages_reply(
                closest(ranked_passages(scored, pool, relevant)), MAX_REPLY_CHARS - len(footer) - 1
            )
        body += footer
    runtime.stream_writer(
        node_event(
            node_name("integrate"),
            f"{mode} answer ({status}) from {len(pool)} passages"
            + (f", {len(conflicts)} conflict(s)" if conflicts else "")
            + (f"; forced: {forced}" if forced else ""),
            conflicts=len(conflicts),
            notes=notes,
        )
    )
    update: dict[str, Any] = {
        "answer": body,
        "status": status,
        "mode": mode,
        "conflicts": conflicts,
        "unanswered": unanswered,
        "notes": notes,
        "forced_reason": forced,
    }
    if tokens:
        update["budget"] = spend(budget, now=now(), tokens=tokens)
    update = only_changed(state, update)
    if calls:
        update["model_calls"] = calls
    return update


__all__ = ["ATTACHED", "KEPT_HELD", "RECITED", "UNWRAPPED", "integrate", "relevance"]
