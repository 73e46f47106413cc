"""Who said what in a chat: a question about one person is not answered by another's words.

Messages are indexed as ``author: text``; only messages in that shape are judged.
"""

from __future__ import annotations

import re

from state.models import Evidence

_AUTHOR = re.compile(r"^([^:\n]{1,60}):\s")
_ADDRESSED = re.compile(r"\b(?:you|your|yours|yourself)\b", re.I)


def author_of(ev: Evidence) -> str | None:
    """Who wrote a chat message (messages are indexed as ``author: text``)."""
    if ev["kind"] != "messages":
        return None
    match = _AUTHOR.match(ev["snippet"])
    return match.group(1).strip() if match else None


def _names(person: str, text: str) -> bool:
    """``text`` names ``person`` (by first name, as people write in chat)."""
    return re.search(rf"\b{re.escape(person.split()[0])}\b", text, re.I) is not None


def misattributed(
    question: str, quoted: list[tuple[str, Evidence]], pool: list[Evidence]
) -> str | None:
    """Why the best quote does not answer for the person the question asks about, if so.

    "What did Caroline realise after her charity race?" is not answered by Melanie writing
    "I realised self-care matters after my charity race". When the question names exactly
    one of the chat's authors and the best quoted message (``quoted`` is best first) is by
    someone else, neither naming nor addressing ("you") that person, the answer says so.
    Only chat messages are judged.
    """
    speakers = {a for ev in pool if (a := author_of(ev))}
    asked = [a for a in speakers if _names(a, question)]
    if len(asked) != 1 or not quoted:
        return None
    person = asked[0]
    sentence, ev = quoted[0]
    author = author_of(ev)
    if author is None or author == person:
        return None
    body = sentence.removeprefix(f"{author}:")
    if _ADDRESSED.search(body) or _names(person, body):
        return None
    return (
        f"No message found says this of {person}: the best match is {author}'s own message, "
        f"which neither names nor addresses {person}."
    )
