"""The LLM reader's guard: the model decides; code overrides it only where it can check exactly.

What a program can check exactly, and nothing else:

- a citation names evidence the model was shown (``check_answer`` sends a reply citing
  anything else back for another round, and strips such citations when the budget is spent);
- a number, date, identifier, code span or name stated in a sentence appears in the passage
  that sentence cites (``nodes.reader.grounding.claims_of``) — else that sentence is dropped and the
  reply says what was dropped;
- a reply that is empty, cut off, only citations, a copy of its prompt, or cites nothing a
  shown passage holds is not shown as an answer (the offline reader's reply is, instead).

No lexical judgement of what the question "needs" replaces the model's answer or its
"the sources do not say". Every change is returned in plain words, for the run's record.
"""

from __future__ import annotations

import re

from seekgraph.nodes.plumbing.prompting import CITATION, cited_ids
from seekgraph.nodes.reader.base import Reply
from seekgraph.nodes.reader.grounding import attach_citations, claims_of, keep_held, recite
from seekgraph.nodes.reader.needs import REFUSAL

#: a letter or a digit: a reply that has none besides its citations says nothing
#: (golden cases: test_reader.py::test_a_bare_value_cited_is_an_answer, …_only_citations…)
_SAYS = re.compile(r"[^\W_]")
#: a word of at least two letters: what a reply says besides its citations
_WORD = re.compile(r"[^\W\d_]{2}")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")
_FENCE = re.compile(r"^\s*(```|~~~)")
#: What the run records when code cited the passages holding an uncited reply's lines.
ATTACHED = "the reply cited none of its sources; the passages holding its lines were cited"
#: …and when a line cited a passage that does not hold it, and shown passages do.
RECITED = "a line cited a passage that does not hold it; the passages that do were cited"
#: …and when sentences no shown passage holds were left out, the held ones kept and cited.
KEPT_HELD = "sentences no shown passage holds were left out; the held ones cite their passages"
#: What the reply says when a sentence was dropped.
DROPPED_NOTE = "(Left out, because the passage it cites does not say so: {what}.)"


def _held(sentence: str, cited: list[str], passages: dict[str, str], allowed: str) -> list[str]:
    """The claims of ``sentence`` that none of its cited passages holds."""
    held = " ".join(passages.get(c, "") for c in cited).lower()
    return sorted(c for c in claims_of(sentence, allowed) if not _holds(held, c.lower()))


def _holds(text: str, claim: str) -> bool:
    """``text`` states ``claim``: a number as a whole number ("5" is not in "2025")."""
    if claim[:1].isdigit():
        return re.search(rf"(?<![\d.,]){re.escape(claim)}(?![\d]|[.,]\d)", text) is not None
    return claim in text


def _unheld_code(code: list[str], cited: list[str], passages: dict[str, str]) -> str | None:
    """The first line of a model's code that none of its cited passages holds, or None."""
    held = " ".join(" ".join(passages.get(c, "").split()) for c in cited)
    for line in code:
        squeezed = " ".join(line.split())
        if squeezed and not squeezed.startswith(("#", "//")) and squeezed not in held:
            return squeezed
    return None


def drop_unheld(body: str, passages: dict[str, str], allowed: str) -> tuple[str, list[str]]:
    """``body`` without the sentences stating what their cited passages lack; what went.

    A sentence's citations are its own, else its line's, else its paragraph's. A code block
    the reply writes is held when its cited passage holds every identifier in it.
    """
    out: list[str] = []
    dropped: list[str] = []
    for paragraph in re.split(r"(\n\s*\n)", body):
        if not paragraph.strip():
            out.append(paragraph)
            continue
        # a paragraph citing nothing (a code block after the sentence introducing it) is
        # held to the reply's citations
        around = CITATION.findall(paragraph) or CITATION.findall(body)
        lines: list[str] = []
        code: list[str] = []
        fenced, code_from = False, 0
        for line in paragraph.split("\n"):
            if _FENCE.match(line):
                fenced = not fenced
                if fenced:
                    code, code_from = [line], len(lines)
                    continue
                code.append(line)
                block = "\n".join(code)
                unheld = _unheld_code(code[1:-1], around, passages)
                if unheld and around:
                    dropped.append("a code block")
                else:
                    lines.insert(code_from, block)
                continue
            if fenced:
                code.append(line)
                continue
            cited = CITATION.findall(line) or around
            kept: list[str] = []
            for sentence in _SENTENCE.split(line):
                # a citation of a passage never shown is ``check_answer``'s to reject
                own = [c for c in CITATION.findall(sentence) or cited if c in passages]
                missing = _held(sentence, own, passages, allowed) if own else []
                if missing:
                    dropped.append(f"a statement naming {', '.join(missing[:3])}")
                    tail = "".join(f"[src:{c}]" for c in CITATION.findall(sentence))
                    if tail and kept:  # its citation still serves the kept sentence before it
                        kept[-1] = kept[-1].rstrip() + " " + tail
                else:
                    kept.append(sentence)
            if kept and (_WORD.search(CITATION.sub(" ", " ".join(kept))) or kept == [line]):
                lines.append(" ".join(kept))  # (a line of citations alone stays as written)
        if fenced:  # an unclosed fence: the reply was cut inside its code
            lines.insert(code_from, "\n".join(code))
        out.append("\n".join(lines))
    if not dropped:  # the reply as written, its layout and all
        return body, []
    return re.sub(r"\n{3,}", "\n\n", "".join(out)).strip(), dropped


def guard_reply(body: str, allowed: str, passages: dict[str, str]) -> Reply | str:
    """The model's reply as shown, with what was changed; or why it cannot be shown.

    ``passages`` maps each shown source id to what the model was shown of it; ``allowed`` is
    what a reply may state that no passage holds (the question, today's date).
    """
    text = body.strip()
    if not text:
        return "was empty"
    if not _SAYS.search(CITATION.sub(" ", text)):  # a bare "1008 [src:…]" says a value
        return "stated nothing but citations"
    changes: list[str] = []
    refusal = REFUSAL.search(text) is not None
    statements = [x for x in _SENTENCE.split(CITATION.sub(" ", text)) if _WORD.search(x)]
    if refusal and len(statements) <= 1:  # "the sources do not say": the model's to decide
        return Reply(text, "not_found", changes)
    if not cited_ids(text):
        attached = attach_citations(text, allowed, passages)
        if attached is not None:
            text = attached
            changes.append(ATTACHED)
        else:
            held = keep_held(text, allowed, passages)
            if held is None:
                return "cited none of its sources, and no shown passage holds what it says"
            changes.append(KEPT_HELD)
            text = held + "\n\n" + DROPPED_NOTE.format(what="what no source says")
            return Reply(text, "partial", changes)
    recited = recite(text, allowed, passages)
    if recited != text:
        changes.append(RECITED)
        text = recited
    kept, dropped = drop_unheld(text, passages, allowed)
    if dropped:
        changes.append(f"dropped what its passages do not say: {'; '.join(dropped)}")
        if not cited_ids(kept) or not _WORD.search(CITATION.sub(" ", kept)):
            return f"stated only what its passages do not say ({'; '.join(dropped)})"
        kept += "\n\n" + DROPPED_NOTE.format(what="; ".join(dropped))
    return Reply(kept, "partial" if dropped or refusal else "answered", changes)
