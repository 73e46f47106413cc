"""Who said what in a chat: a question about one person is not answered by another's words.

"What did Caroline realise after her charity race?" is not answered by Melanie writing
"After my charity race I realised self-care matters". Each sentence of a chat message is
*about* someone: its author when it speaks in the first person ("I", "my"), the person it
addresses ("you") or names otherwise. When a question names exactly one of the chat's
authors, the sentences are scored against the question without that name (what was done,
not who did it); if the best of them is about someone else, and nothing about the person
asked comes close, no message says this of them — and the answer says so.

Messages are indexed as ``author: text``; only messages in that shape are judged. The words
a sentence is read by (first and second person, reactions) and the hypothetical question's
frame are data: ``providers/language/en.toml``.
"""

from __future__ import annotations

import re

from seekgraph.providers.language import alternation, compiled, words
from seekgraph.providers.rerank import Reranker
from seekgraph.providers.sentences import sentences
from seekgraph.state.models import Evidence

_AUTHOR = re.compile(r"^([^:\n]{1,60}):\s")
_FIRST = re.compile(rf"\b(?:{alternation(words('first_person'))})\b", re.I)
_SECOND = re.compile(rf"\b(?:{alternation(words('second_person'))})\b", re.I)
_REACTION = re.compile(rf"^(?:{alternation(words('reactions'))})\b", re.I)
#: "Would Melanie enjoy Vivaldi?" asks for a judgement about a person, not what they said.
_HYPOTHETICAL = compiled("hypothetical_question", flags=re.I)
_CAPTION = re.compile(r"^\[[^\]]*\]$")
#: The best sentence about the person asked may score this much below the best overall.
ATTRIBUTION_MARGIN = 0.05


def author_of(ev: Evidence) -> str | None:
    """Who wrote a chat message (messages are indexed as ``author: text``)."""
    if ev["kind"] != "messages":
        return None
    match = _AUTHOR.match(ev["snippet"])
    return match.group(1).strip() if match else None


def _first_name(person: str) -> str:
    return person.split()[0]


def _names(person: str, text: str) -> bool:
    """``text`` names ``person``: by first name, or a short form of it ("Mel" for Melanie)."""
    first = _first_name(person)
    if re.search(rf"\b{re.escape(first)}\b", text, re.I):
        return True
    return any(
        len(word) >= 3 and first.lower().startswith(word.lower())
        for word in re.findall(r"\b[A-Z][a-z]+\b", text)
    )


def _addressed(person: str, text: str) -> bool:
    """``text`` calls ``person`` by name ("Hey Mel!", "…, Caroline!"): it speaks to them."""
    first = re.escape(_first_name(person)[:3])
    return (
        re.search(
            rf"(?:^|\b(?:hey|hi|hello|thanks|thank you|wow|oh|yeah|yes|no)\b,?\s*){first}\w*"
            rf"|,\s*{first}\w*\s*[!.?]*$|^{first}\w*\s*[,!]",
            text,
            re.I,
        )
        is not None
    )


def asked_person(question: str, pool: list[Evidence]) -> str | None:
    """The one chat author a question names, if it names exactly one."""
    speakers = {a for ev in pool if (a := author_of(ev))}
    asked = [a for a in speakers if _names(a, question)]
    return asked[0] if len(asked) == 1 else None


def without_name(question: str, person: str) -> str:
    """The question with the person's name (and its possessive) taken out."""
    name = re.escape(_first_name(person))
    return " ".join(re.sub(rf"\b{name}(?:['’]s)?\b", " ", question, flags=re.I).split())


def spoken(sentence: str, ev: Evidence) -> str:
    """The sentence without its ``author:`` prefix."""
    author = author_of(ev)
    return sentence.removeprefix(f"{author}:").strip() if author else sentence


def about(sentence: str, ev: Evidence, speakers: set[str]) -> set[str]:
    """Whom a chat sentence is about: the people it names, else by its pronouns."""
    author = author_of(ev)
    body = spoken(sentence, ev)
    addressed = {s for s in speakers if s != author and _addressed(s, body)}
    named = {s for s in speakers if _names(s, body) and s != author} - addressed
    people = set(named)
    first = _FIRST.search(body) is not None
    if first and author:
        people.add(author)
    # "you", or a reaction to the other's news ("Congrats on…", "That's awesome…") without
    # an "I": about the person spoken to. "Hey Gina, I had to…" is about the author.
    if _SECOND.search(body) or (not first and (addressed or _REACTION.match(body))):
        people |= addressed or (named or speakers - {author})
    if not people and author:
        people.add(author)
    return people


def misattributed(
    person: str, sentences: list[tuple[str, Evidence]], content_scores: list[float]
) -> str | None:
    """Why no message answers the question for ``person``, if none does.

    ``content_scores`` score each sentence against the question without ``person``'s name.
    """
    speakers = {a for _, ev in sentences if (a := author_of(ev))}
    if person not in speakers or not sentences:
        return None
    best_i = max(range(len(sentences)), key=content_scores.__getitem__)
    sentence, ev = sentences[best_i]
    if person in about(sentence, ev, speakers):
        return None
    of_person = [
        score
        for (s, e), score in zip(sentences, content_scores, strict=True)
        if person in about(s, e, speakers)
    ]
    if of_person and max(of_person) >= content_scores[best_i] - ATTRIBUTION_MARGIN:
        return None
    author = author_of(ev) or "someone else"
    whom = author if author != person else "someone else"
    return (
        f"No message found says this of {person}: the closest is {author}'s message "
        f"“{spoken(sentence, ev)}”, which is about {whom}."
    )


async def wrong_person(question: str, pool: list[Evidence], reranker: Reranker) -> str | None:
    """``misattributed`` for the chat messages among the best evidence.

    None when the question names no one, is hypothetical ("Would Melanie…?"), or the right
    person said it.
    """
    person = asked_person(question, pool)
    if person is None or _HYPOTHETICAL.match(question):
        return None
    said = [
        (s, ev)
        for ev in pool[:8]
        if author_of(ev)
        for s in sentences(ev["snippet"])
        # a question asks, and a shared image's caption tells nothing: neither says anything
        if not s.rstrip(" !！").endswith(("?", "？")) and not _CAPTION.match(spoken(s, ev))
    ]
    if not said:
        return None
    scores = await reranker.rerank(without_name(question, person), [spoken(s, e) for s, e in said])
    return misattributed(person, said, scores)
