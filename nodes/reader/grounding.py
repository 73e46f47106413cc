"""Whether what a written answer states is held by the passages it cites.

A model's answer cites passages by ``[src:…]``; a citation proves nothing if the sentence
beside it states a number or a name that the cited passage does not hold. Small local models
do this: asked for a deadline their sources did not give, a 1.5B model answered "by
1 November 2026" and cited a price list; asked which laptop IT hands out, it said "laptops
compatible with Windows", citing the incident policy.

The rule, the same for the product's guard (``integrate``) and the benchmark's count
(``bench.llm_mode``): each sentence's numbers (digit runs) and names (capitalised words not
opening the sentence, ``code`` spans, snake_case words) must appear in the passages cited on
its line — else in its paragraph, else anywhere in the answer (in any passage shown, when the
answer cites none it was shown: a citation of an unknown id is ``check_answer``'s to reject).
The question's own words (and whatever else the caller allows, such as today's date) are not
claims.
"""

from __future__ import annotations

import re

from seekgraph.nodes.plumbing.prompting import CITATION
from seekgraph.providers.terms import term_set

#: a number as a person reads it, not the digits inside a word ("w0", "e5", "v2")
_NUMBER = re.compile(r"(?<![A-Za-z_\d])\d+(?:[.,:/-]\d+)*")
_NAME = re.compile(r"`([^`]+)`|\b([a-z]+_[a-z0-9_]+)\b|\b([A-Z][\w.-]*\w)")
_SENTENCE = re.compile(r"(?<=[.!?:])\s+")
#: a Markdown heading, or a line that is all bold ("**Steps to Use Truststore**")
_HEADING = re.compile(r"\s*(?:#+\s|\*\*[^*]+\*\*:?\s*$)")
_MARKS = re.compile(r"\*\*|__|^\s*(?:#+|[-*]|\d+[.)])\s+")


def claims_of(sentence: str, allowed: str, heading: bool = False) -> set[str]:
    """The numbers and names a sentence states, the words of ``allowed`` set aside.

    A sentence's first word (after a list mark or emphasis) is not taken for a name, nor is
    a capitalised word of a heading, which is written in title case ("### Using the
    Truststore Module with Libraries"): there, only numbers and code are claims.
    """
    # a list item or emphasis opening the sentence ("…: - Each part…") is no name's start
    text = _MARKS.sub("", CITATION.sub("", sentence).strip()).strip()
    found = {m.group(0) for m in _NUMBER.finditer(text)}
    found |= {
        next(g for g in m.groups() if g)
        for m in _NAME.finditer(text)
        if m.start() > 0 and not (heading and m.group(3))
    }
    asked = allowed.lower()
    said = set(_NUMBER.findall(allowed))  # a number is allowed whole: "5" is not in "2025"
    return {c for c in found if (c not in said if c[:1].isdigit() else c.lower() not in asked)}


def _unheld(answer: str, allowed: str, passages: dict[str, str]) -> list[tuple[str, list[str]]]:
    known = [c for c in CITATION.findall(answer) if c in passages] or list(passages)
    everything = " ".join(passages[c] for c in known).lower()
    out = []
    for paragraph in re.split(r"\n\s*\n", answer):
        around = [c for c in CITATION.findall(paragraph) if c in passages]
        for line in paragraph.splitlines():
            cited = [c for c in CITATION.findall(line) if c in passages] or around
            held = " ".join(passages.get(c, "") for c in cited).lower() if cited else everything
            heading = _HEADING.match(line) is not None
            for sentence in _SENTENCE.split(_MARKS.sub("", line)):
                claims = claims_of(sentence, allowed, heading)
                missing = sorted(c for c in claims if c.lower() not in held)
                if missing:
                    out.append((sentence.strip()[:300], missing))
    return out


def ungrounded(answer: str, allowed: str, passages: dict[str, str]) -> list[str]:
    """Sentences of ``answer`` stating a number or name that their cited passages lack.

    ``passages`` maps a source id to its text (title, passage, context).
    """
    return [sentence for sentence, _ in _unheld(answer, allowed, passages)]


#: a bracket written like a citation that names no shown source ("[docs:7]")
_STRAY_CITATION = re.compile(r"\[(?:src|docs?|kb|source)\s*:[^\]\s]{0,40}\][ \t]?", re.I)
#: Of a sentence's content words, this share must be in the passage it is attached to.
ATTACH_MIN_SUPPORT = 0.6
#: a sentence this short ("See below.") neither needs nor blocks a citation
_ATTACH_MIN_TERMS = 3


def _supporting(
    sentence: str, allowed: str, passages: dict[str, str], beyond_allowed: bool = False
) -> str | None:
    """The passage that holds a sentence: its claims all, and most of its words.

    With ``beyond_allowed``, the words of ``allowed`` (the question's) count as held, and
    the passage must hold some word beyond them: "To get orjson output with keys in
    alphabetical order, use `option=orjson.OPT_SORT_KEYS`" restates the question and is held
    by the passage saying the rest; a restatement alone is held by none.
    """
    said = term_set(sentence)
    if not said:
        return None
    asked = term_set(allowed) if beyond_allowed else set()
    claims = {c.lower() for c in claims_of(sentence, allowed)}
    best, best_share = None, ATTACH_MIN_SUPPORT
    for source_id, text in passages.items():
        if any(c not in text.lower() for c in claims):
            continue
        held = term_set(text)
        if beyond_allowed and not (said - asked) & held:
            continue
        share = len(said & (held | asked)) / len(said)
        if share >= best_share:
            best, best_share = source_id, share
    return best


def _citing(line: str, ids: list[str]) -> str:
    """``line`` ending with a citation of each of ``ids``."""
    return line.rstrip() + "".join(f" [src:{i}]" for i in ids)


def attach_citations(answer: str, allowed: str, passages: dict[str, str]) -> str | None:
    """An answer that cites nothing, with each line citing the passages that hold it, or None.

    Qwen 1.5B often answers right and cites nothing ("The pad_event argument of
    ConsoleRenderer was renamed to pad_event_to…"), or cites in a form naming no source
    ("[docs:7]"). A sentence is held by a passage that holds every number and name it states
    and ``ATTACH_MIN_SUPPORT`` of its content words. The citations are attached only when every
    sentence stating a claim, and two in three of the others, are held: an answer written from
    what the model knows stays unattached (None), and falls back to the quotes.
    """
    text = _STRAY_CITATION.sub("", answer).strip()
    lines, held, judged, attached = [], 0, 0, 0
    for line in text.splitlines():
        cited: list[str] = []
        heading = _HEADING.match(line) is not None
        for sentence in _SENTENCE.split(_MARKS.sub("", line)):
            claims = claims_of(sentence, allowed, heading)
            if len(term_set(sentence)) < _ATTACH_MIN_TERMS and not claims:
                continue
            judged += 1
            source_id = _supporting(sentence, allowed, passages)
            if source_id is None and claims:
                return None
            if source_id is not None:
                held += 1
                cited.append(source_id)
        ids = list(dict.fromkeys(cited))
        attached += bool(ids)
        lines.append(_citing(line, ids) if ids else line)
    if not attached or 3 * held < 2 * judged:
        return None
    return "\n".join(lines)


#: a list item's marker, kept on a line whose held sentences are kept
_ITEM = re.compile(r"^\s*(?:[-*]|\d+[.)])\s+")


def keep_held(answer: str, allowed: str, passages: dict[str, str]) -> str | None:
    """Only the sentences of ``answer`` that a shown passage holds, each citing it, or None.

    For a reply that cannot be held as a whole: Qwen 1.5B answered "…use the
    `option=orjson.OPT_SORT_KEYS` parameter" right and then wrote a code example of its own;
    it wrote the Okta steps of its passages, each followed by a sentence of its own ("you
    will need to request this role from the identity team"). What a passage holds (its
    claims all, and most of the words it says beyond the question's) is kept with that
    passage's citation; the rest — the model's own code, restatements of the question, what
    no passage says — is left out. None when no sentence is held.
    """
    out, fenced = [], False
    for line in _STRAY_CITATION.sub("", answer).splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:  # a model's own code: no passage holds it as written
            continue
        kept = []
        for sentence in _SENTENCE.split(_MARKS.sub("", line)):
            bare = CITATION.sub("", sentence).strip()
            if len(term_set(bare)) < _ATTACH_MIN_TERMS:
                continue
            holder = _supporting(bare, allowed, passages, beyond_allowed=True)
            if holder is not None:
                kept.append(f"{bare} [src:{holder}]")
        if kept:
            item = _ITEM.match(line)
            out.append((item.group(0).lstrip() if item else "") + " ".join(kept))
    return "\n".join(out) or None


def recite(answer: str, allowed: str, passages: dict[str, str]) -> str:
    """``answer`` with a line's citations replaced where another shown passage holds it.

    Qwen 1.5B wrote "The type that `orjson.dumps` returns is a `bytes` object.
    [src:docs/orjson#10]": the fact is a shown passage's (#5), the citation points at
    another. A line stating something its citations do not hold cites, instead, the passages
    holding each of its sentences (as ``attach_citations`` finds them); a line some sentence
    of which no shown passage holds is left as it is, for the guard to reject.
    """
    unheld = {sentence for sentence, _ in _unheld(answer, allowed, passages)}
    if not unheld:
        return answer
    out = []
    for line in answer.splitlines():
        sentences = [s for s in _SENTENCE.split(_MARKS.sub("", line)) if s.strip()]
        if not any(s.strip()[:300] in unheld for s in sentences):
            out.append(line)
            continue
        holders = [_supporting(CITATION.sub("", s), allowed, passages) for s in sentences]
        needed = [h for h, s in zip(holders, sentences, strict=True) if claims_of(s, allowed)]
        if not needed or None in needed:
            out.append(line)
            continue
        out.append(_citing(CITATION.sub("", line), list(dict.fromkeys(h for h in holders if h))))
    return "\n".join(out)
