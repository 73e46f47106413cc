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
    NOTHING_FOUND,
    Quote,
    extractive_answer,
    extractive_body,
)
from nodes.grounding import (
    attach_citations,
    ignores_names,
    keep_held,
    lacks_type,
    recite,
    restates_question,
    restates_unsaid,
    states_no_type,
    ungrounded_reason,
)
from nodes.needs import REFUSAL, describe_needs, needs_of
from nodes.prompting import (
    CITATION,
    cited_ids,
    conversation_of,
    render_evidence,
    repair_citations,
    strip_echo,
)
from nodes.prompts import FORCED_NOTE, INTEGRATE_PROMPT, TOKENS_SPENT
from nodes.services import Services, chat_model_for, node_name, now
from nodes.services import today as today_utc
from nodes.writing import (
    images_in_budget,
    resolve_versions,
    stream_answer,
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
from state.models import Evidence, ModelCall
from state.schemas import SearchState

#: The answer prompt's section names: a model heading its reply "Sources:" or "Needs:"
#: repeats the prompt's layout, it states no fact.
SECTION_NAMES = " ".join(dict.fromkeys(re.findall(r"<(\w+)>", INTEGRATE_PROMPT)))


#: A model call's detail when its reply cited nothing and the passages holding it were cited.
ATTACHED = "the reply cited none of its sources; the passages holding its lines were cited"
#: …and when a line cited a passage that does not hold it, and shown passages do.
RECITED = "a line cited a passage that does not hold it; the passages that do were cited"
#: …and when the reply copied its prompt's layout or rules around words of its own.
UNWRAPPED = "the reply copied parts of its prompt; they were left out"
#: …and when sentences no shown passage holds were left out, the held ones kept and cited.
KEPT_HELD = "sentences no shown passage holds were left out; the held ones cite their passages"


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


def refuses_wrongly(answer: str, judged: Judgement) -> str | None:
    """Why a model's "not found" does not stand, or None.

    A model's refusal is held to the rule the extractive answer follows: it stands only when
    some need of the question is answered by no quote.
    """
    if REFUSAL.search(answer.strip()) and not judged.gaps and not judged.nothing:
        return "said the sources do not answer, while quotes answer every need"
    return None


def allowed_words(question: str, today: dt.date) -> str:
    """What a model's answer may state that no passage holds: what its prompt says.

    The question, today, and the prompt's sections' names ("Sources:", "Needs:").
    """
    return f"{question} {today.day} {today:%B} {today.month} {today.year} {SECTION_NAMES}"


def mended(
    body: str, question: str, today: dt.date, shown: list[Evidence], prune: bool = False
) -> tuple[str, str]:
    """A reply with its citations mended, and what was mended ("" for nothing).

    A reply that cites nothing cites the passages holding its lines, if they do
    (``attach_citations``); a line citing a passage that does not hold it cites, instead,
    the shown passages that do (``recite``). With ``prune`` — only where the quotes answer
    the question, so that what is kept is judged answered — a reply still stating what no
    passage holds keeps only its held sentences, citing them (``keep_held``): left to
    itself, pruning kept a 1.5B's incidental VPN sentences as the answer to "How many
    vacation days do new hires get?". A refusal is left as it is.
    """
    if REFUSAL.search(body.strip()):
        return body, ""
    allowed, passages = allowed_words(question, today), passages_of(shown)
    if not cited_ids(body):
        attached = attach_citations(body, allowed, passages)
        if attached:
            return attached, ATTACHED
        kept = keep_held(body, allowed, passages) if prune else None
        return (kept, KEPT_HELD) if kept else (body, "")
    recited = recite(body, allowed, passages)
    if prune and ungrounded_reason(recited, allowed, passages) is not None:
        kept = keep_held(recited, allowed, passages)
        if kept:
            return kept, KEPT_HELD
    return recited, RECITED if recited != body else ""


def reply_fault(
    body: str,
    prompt: str,
    judged: Judgement,
    nothing: bool,
    pool: list[Evidence],
    question: str,
    today: dt.date,
) -> str | None:
    """Why a model's answer is not shown (the extractive answer is, instead), or None.

    It repeats its instructions or a block of its prompt; says "not found" where quotes
    answer; answers without citing anything (Qwen 0.5B: "it will be available on December
    4th") or with citations alone (Qwen 1.5B: "[src:docs/httpx#1]"); states a number or name
    its citations do not hold; only restates the question ("The `platformdirs` function
    gives the directory for log files."); says nothing of a name the question asks about (Qwen 1.5B,
    asked whether orjson supports PyPy, on orjson's licences); where no quote answers
    (``nothing``), cites no passage of the type asked; or leaves out the amount or date
    asked for.
    """
    copied = echoes_instructions(body, prompt)
    allowed = allowed_words(question, today)
    refusal = REFUSAL.search(body.strip()) is not None
    return (
        (f"repeated its instructions ({copied!r})" if copied else None)
        or refuses_wrongly(body, judged)
        or (None if refusal or cited_ids(body) else "cited none of its sources")
        or (None if _WORD.search(CITATION.sub(" ", body)) else "stated nothing but citations")
        or ungrounded_reason(body, allowed, passages_of(pool[:12]))
        or (None if refusal else ignores_names(body, question, passages_of(pool[:12])))
        or (
            lacks_type(body, question, passages_of(pool, dated=False))
            or restates_unsaid(body, question, passages_of(pool[:12]))
            if nothing and cited_ids(body) and not refusal
            else None
        )
        or (
            None
            if refusal
            else states_no_type(body, question)
            or restates_question(body, question, passages_of(pool[:12]))
        )
    )


async def integrate(
    state: SearchState, runtime: Runtime[Context], services: Services
) -> dict[str, Any]:
    """Write the answer; when the budget is spent, answer anyway and say what is missing."""
    ctx = runtime.context
    budget = state["budget"]
    forced = exhausted(budget) if state["verdict"]["action"] != "answer" else None
    evidence = kept(state.get("evidence", []))
    pool, notes = resolve_versions(by_authority(evidence))
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
    if nothing_answers and any(
        claim["text"] in about and all(n.carried_by(claim["text"]) for n in needs)
        for c in conflicts
        for claim in c["claims"]
    ):
        gaps, nothing_answers = [], False
    lines = current_first(lines, conflicts)
    tokens = 0
    calls: list[ModelCall] = []
    mode = "extractive"
    if not pool:
        body = NOTHING_FOUND
    elif model is not None:
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
            body, tokens, served = await stream_answer(model, content, runtime)
            body = repair_citations(body, {ev["source_id"] for ev in pool})
            raw, own = body, strip_echo(body, prompt)
            # (a reply whose words are unchanged, its spacing aside, was not unwrapped)
            unwrapped = own.split() != body.split() and bool(_WORD.search(CITATION.sub(" ", own)))
            body, mending = mended(
                own if unwrapped else body,
                state["question"],
                today,
                pool[:12],
                prune=not nothing_answers,
            )
            mending = "; ".join(m for m in (UNWRAPPED if unwrapped else "", mending) if m)
            mode = "llm"
            echoed = reply_fault(
                body, prompt, judged, nothing_answers, pool, state["question"], today
            )
            calls.append(
                {
                    "node": node_name("integrate"),
                    "model": served,
                    "outcome": "degraded" if echoed else "ok",
                    "detail": f"the reply {echoed}; wrote an extractive answer (the reply "
                    f"began {' '.join(raw.split())[:400]!r})"
                    if echoed
                    else mending,
                    "tokens": tokens,
                }
            )
            if echoed:  # a small model that copies its prompt or cites nothing: the quotes
                mode = "extractive"
                body = extractive_body(lines, quoted, gaps if nothing_answers else [])
            elif nothing_answers and REFUSAL.search(body.strip()):
                # the model found nothing either: the refusal says which need is missing
                # and what came closest, in the same words as every other refusal
                mode = "extractive"
                body = extractive_body(lines, quoted, gaps)
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
            body = extractive_body(lines, quoted, gaps if nothing_answers else [])
    else:
        body = extractive_body(lines, quoted, gaps if nothing_answers else [])
    if mode == "extractive" and notes and not nothing_answers:  # conflicts travel apart, shown once
        body += "\n\n" + "\n".join(notes)
    unanswered = unanswered_of(state, ctx, forced, pool)
    if mode == "extractive" and (gaps or judged.by_meaning):  # more precise than word coverage
        unanswered = [u for u in unanswered if not u.startswith("No source found mentions")]
    if mode == "extractive" and gaps:
        unanswered.insert(0, f"No source found says: {', '.join(gaps)}.")
    if mode == "extractive" and (
        someone_else := await wrong_person(state["question"], pool, services.reranker)
    ):
        unanswered.insert(0, someone_else)
    if unanswered and mode == "extractive":
        body += "\n\nMissing: " + " ".join(unanswered)
    runtime.stream_writer(
        node_event(
            node_name("integrate"),
            f"{mode} answer from {len(pool)} passages"
            + (f", {len(conflicts)} conflict(s)" if conflicts else "")
            + (f"; forced: {forced}" if forced else ""),
            conflicts=len(conflicts),
            notes=notes,
        )
    )
    update: dict[str, Any] = {
        "answer": body,
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


__all__ = ["integrate", "relevance"]
