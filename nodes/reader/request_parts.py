"""What a research request asks: whom or what it is about, and the parts it names.

- ``subject_of``: the names a request is about ("Write a report on Caroline: …" → "Caroline");
- ``named_parts``/``part_questions``: the parts a request lists ("…: VPN, SSO, and
  expenses"), one sub-question each (the offline plan), each a section the report must show
  (the report's check).

English and Chinese list marks. The wording is data: the request frame's words
(``request_frame``) and the patterns of a list's start, separators, scope, qualifiers and
articles (``list_start``, ``list_separator``… in ``providers/language/en.toml`` and ``zh.toml``,
``[patterns]``); the punctuation stays here.
"""

from __future__ import annotations

import re

from seekgraph.providers.language import compiled, pattern, words
from seekgraph.providers.terms import STOPWORDS
from seekgraph.state.research import SubQuestion

_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*\b")
#: Words of a request's frame ("write a report on …"), never its subject.
REQUEST_FRAME = words("request_frame")


def subject_of(request: str) -> str:
    """The names the request is about ("Write a report on Caroline: …" → "Caroline")."""
    names = [n for n in _NAME.findall(request) if n.lower() not in STOPWORDS | REQUEST_FRAME]
    return " ".join(dict.fromkeys(names))


#: Where a request starts listing its parts: after a colon, or "about", "including"…
_LIST_START = re.compile(rf"[:：]\s*|{pattern('list_start')}", re.I)


#: A list right after the request's verb ("Compare A, B and C"), read when nothing else opens
#: one; and the words that open each item of a list of questions ("how …", "what …")
_VERB_START = compiled("request_verb_start", flags=re.I)
_WH = compiled("wh_opening", flags=re.I)
_WH_SEP = re.compile(rf"\s*(?:,\s*(?:and\s+)?|\s+and\s+)(?={pattern('wh_opening')})", re.I)
#: A pronoun that stands for what an earlier part named ("… and what to do when it fails")
_PRONOUN = compiled("part_pronoun", flags=re.I)


#: What closes a list by saying where all its parts belong: "…, retries and pooling in httpx"
#: (golden case: test_reader.py::test_a_request_naming_three_parts_in_a_library_gets_three).
_SCOPE = compiled("list_scope", flags=re.I)


#: What separates the parts of a list: commas, semicolons, "and", "or", 和, 及, 与.
_LIST_SEP = re.compile(
    rf"\s*(?:[,;，；、]\s*(?:{pattern('list_join')})?|{pattern('list_separator', 'en', 'zh')})\s*",
    re.I,
)


#: What separates the items of a list written with commas (Chinese enumeration marks too)
#: (golden case: test_reader.py::test_a_list_of_clauses_names_one_part_per_clause).
_COMMA = re.compile(r"\s*[,;，；、]\s*")


#: The "and" or "or" that opens a list's last item after its comma.
_LEADING_JOIN = compiled("last_item_join", flags=re.I)


#: A list item that qualifies the whole list rather than naming a part.
_QUALIFIER = compiled("qualifier_opening", flags=re.I)


#: Words that open a part's name but are no part of its heading.
_ARTICLE = compiled("article_opening", flags=re.I)
_POSSESSIVE = compiled("possessive_opening", flags=re.I)


#: A list item that opens with a verb's -ing form: two or more make a list of clauses.
_CLAUSE = compiled("clause_opening", flags=re.I)


#: A named part is short: a phrase or one clause ("putting nginx or Apache httpd in front as a
#: reverse proxy and telling Flask to trust the forwarded headers"), not a paragraph.
MAX_PART_WORDS = 24


def named_parts(request: str) -> list[str]:
    """The parts a request names, or none when it names fewer than two.

    "… IT access: VPN, SSO, and expenses?" names VPN, SSO and expenses.

    The last list in the request counts: what follows its colon or its "about"/"including".
    An item that only qualifies the list ("with dates where …") is not a part.
    """
    return _named(request)[0]


def _named(request: str) -> tuple[list[str], list[re.Match[str]]]:
    """``named_parts``, and where the request's list starts.

    The starts are the one of the list the parts are in, last, after every start before it
    (none when the request names no parts).
    """
    starts = list(_LIST_START.finditer(request))
    # "of" opens a list only when nothing stronger does ("a report on Caroline: the events
    # of their life, their work, …" lists after its colon); a colon's list comes before a
    # word's, which may open a list inside one of its parts ("…: running it under a server
    # such as Gunicorn, Waitress or uWSGI, putting nginx in front, and …")
    colons = [m for m in starts if m.group(0).strip() in ":："]
    strong = [m for m in starts if m not in colons and m.group(0).strip().lower() != "of"]
    weak = [m for m in starts if m not in colons and m not in strong]
    for start in [*reversed(colons), *reversed(strong), *reversed(weak)]:
        tail = request[start.end() :].strip().rstrip("?？.!。").strip()
        items = list_items(tail)
        if len(items) >= 2 and all(len(i.split()) <= MAX_PART_WORDS for i in items):
            before = [m for m in starts if m.end() <= start.start()]
            return list(dict.fromkeys(items)), [*before, start]
    verb = _VERB_START.match(request)
    if verb is not None:  # "Compare A, B and C", "Explain how X works and what to do when …"
        tail = request[verb.end() :].strip().rstrip("?？.!。").strip()
        # a list of questions is split only where the next question opens ("how
        # authentication and authorization work" is one)
        items = (
            [i for i in _WH_SEP.split(tail) if i.strip()] if _WH.match(tail) else list_items(tail)
        )
        if len(items) >= 2 and all(len(i.split()) <= MAX_PART_WORDS for i in items):
            return list(dict.fromkeys(items)), [verb]
    return [], []


def list_items(tail: str) -> list[str]:
    """The items of a list as a person writes one: "a, b, c and d"; "x and y".

    Where the list has commas, an "and" inside an item is part of it ("plugging in a backend
    and guarding views, keeping users logged in, and letting …": three items); only the last
    item's "and"/"or" separates ("interests, plans and the people close to them"). A list
    without commas is split at its "and"s. A closing qualifier ("with dates where …") is none.
    """
    if not _COMMA.search(tail):
        return _kept_items(_LIST_SEP.split(_SCOPE.sub("", tail)))
    pieces = _COMMA.split(tail)
    items = _kept_items(pieces)
    if sum(bool(_CLAUSE.match(i)) for i in items) >= 2:
        return _clauses(pieces)
    if items:
        # "in httpx" closing the list is every part's, not the last one's — also before a
        # closing qualifier ("…, classic histograms and summaries in Prometheus, and when to
        # pick each"; golden case: test_reader.py::test_an_overview_of_three_kinds_gets_three)
        items[-1:] = _kept_items(_LIST_SEP.split(_SCOPE.sub("", items[-1])))
    return items


def _clauses(pieces: list[str]) -> list[str]:
    """A list of clauses (the list's pieces between its commas), each whole.

    Its "and"s are inside its clauses ("deciding which permissions and new windows it may
    get"), the pieces before its first -ing clause are one ("what the sandbox,
    nodeIntegration and context isolation do by default"), and so is a clause with a list
    of its own ("running it under a server such as Gunicorn, Waitress or uWSGI"; golden case:
    test_reader.py::test_a_list_of_clauses_with_lists_inside_names_one_part_per_clause). The
    list's last item, after its "and", is a part of its own, a clause or not ("…, creating
    virtualenvs, and the __pypackages__ mode").
    """
    items = [(piece, kept[0]) for piece in pieces if (kept := _kept_items([piece]))]
    out: list[str] = []
    for n, (piece, item) in enumerate(items):
        closing = n == len(items) - 1 and _LEADING_JOIN.match(piece.strip(" \"'“”")) is not None
        if out and not _CLAUSE.match(item) and not closing:
            out[-1] = f"{out[-1]}, {item}"
        else:
            out.append(item)
    return out


def _kept_items(parts: list[str]) -> list[str]:
    items = [_LEADING_JOIN.sub("", i.strip(" \"'“”")).strip() for i in parts if i and i.strip()]
    return [i for i in items if i and not _QUALIFIER.match(i)]


def part_title(part: str) -> str:
    """A part's heading, as the request wrote it ("the people close to them" → "People…")."""
    text = _ARTICLE.sub("", part.strip())
    return text[:1].upper() + text[1:]


def part_questions(request: str) -> list[SubQuestion]:
    """One sub-question per part the request names, titled as the request names it."""
    parts, start = _named(request)
    if not parts:
        return []
    # "…a guide on" keeps its "on"; a colon is no word of the question
    stem = (
        request[: start[-1].end() if start[-1].group(0).strip() not in ":：" else start[-1].start()]
        if start
        else request
    ).strip()
    whose = any(_POSSESSIVE.match(part) for part in parts)
    if start and start[-1].group(0).strip() in ":：" and len(start) > 1 and not whose:
        # "…know about IT access: VPN, SSO, and expenses": what names the list ("IT access")
        # is not every part's subject; "…know about expenses" is what the person asked. A
        # part that says whose it is ("…on Priya: her dog, her new job") keeps its owner.
        stem = request[: start[-2].end()].strip()
    first = request.find(parts[0])
    if 0 < first < len(stem):
        # the stem ran into the first part ("…on John: the events of their life, their work…"
        # read "of" as where the list starts): a part's question names that part only
        stem = request[:first].strip().rstrip(":：").strip()
    tail = request[start[-1].end() :].strip().rstrip("?？.!。") if start else ""
    scope = m.group(0) if (m := _SCOPE.search(tail)) else ""
    # "Explain how the resolver works and what to do when it fails": "it" is the first part's
    # subject, which a search for the second part alone would not know
    verb = start and start[-1].re is _VERB_START
    refer = {
        part: f" ({parts[0]})" if verb and n and _PRONOUN.search(part) else ""
        for n, part in enumerate(parts)
    }
    return [
        {
            "id": f"q{n}",
            "question": f"{stem} {part}{scope}{refer[part]}".strip(),
            "depends_on": [],
            "title": part_title(part),
            "intent": f"What the sources say about {part}, as the request asks; not its "
            "other parts.",
        }
        for n, part in enumerate(parts, start=1)
    ]
