"""Does what we would quote answer the question? If not, say what was not found.

Retrieval always returns *something*; quoting it as an answer when it does not answer is
worse than saying so. For documents (knowledge base, docs, notes) the quoted sentences —
read with their document's title and section — must mention every word that names what the
question is about, unless the best of them is a strong match as a whole (a paraphrase:
"disable" for "stop"). A question that asks for an amount ("how many", "maximum number")
needs a number in its best quotes. Words that only frame the question ("difference",
"function", "give") are not required, nor what the question sets aside ("instead of a file").

Chat messages are short and say things in passing, in words of their own: of a message
only the question's names (in it or in its conversation) and the type of answer asked for
are required (``_judge_messages``); who said what is ``attribution``'s. Web pages the
question names are not judged, nor are multi-hop answers (``Context.bridge_rounds`` > 0, or
quotes that chain through a name the question does not say): their words are, by design,
not the question's.

The wording read here ("instead of", "how long", "what should I know about", the
superlatives) is data: ``providers/language/en.toml``'s ``[patterns]`` table and word lists.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from seekgraph.nodes.reader.extractive import CHAT_KINDS, Quote
from seekgraph.nodes.reader.needs import NEED_NAMES, Need, needs_of
from seekgraph.providers.language import alternation, compiled, words
from seekgraph.providers.sentences import said_of
from seekgraph.providers.terms import display_words, stem, term_set
from seekgraph.state.models import Evidence, heading_of

#: Words that name the kind of answer wanted, not what it is about.
FRAME_WORDS = frozenset(stem(w) for w in words("frame_words"))
#: What follows these is what the question sets aside ("a stream instead of a file").
_SET_ASIDE = compiled("set_aside", flags=re.I)
#: "How long", "how often": the word after "how" asks for a type of answer (``needs``);
#: so does "since" in "since when" (an answer "Since version 1.20…" repeats it).
_HOW_WHAT = compiled("asked_type", flags=re.I)
#: A superlative that makes a need an amount ("the oldest Python") names its type, not its
#: subject: a quote need not repeat it ("requires Python 3.9+" answers "the oldest").
_SUPERLATIVE = re.compile(rf"(?:{alternation(words('superlatives'))})", re.I)


#: What joins the parts of a compound term (``load_dotenv``, ``password-protect``).
_SEPARATOR = re.compile(r"[_.\-/]")
#: A quote scoring at least this answers as a whole, even without one of the question's words.
STRONG_MATCH = 0.8
DOCUMENT_KINDS = frozenset({"kb", "docs", "notes"})
#: Needs that are named by their missing words ("do not mention YAML"); the typed ones are
#: named by their type ("a person or role (sign, cut)").
WORD_KINDS = frozenset({"thing", "steps", "yesno", "reason", "comparison"})


#: "What does a new employee need to know about expenses?": an overview of a topic; who asks
#: ("a new employee") frames it, the topic is what follows "about".
_OVERVIEW = compiled("overview_question", flags=re.I)


def is_overview(question: str) -> bool:
    """The question asks for an overview of a topic ("What should I know about expenses?")."""
    return _OVERVIEW.match(question.strip()) is not None


def subject_part(question: str) -> str:
    """What the question is about: an overview's topic, else the whole question."""
    overview = _OVERVIEW.match(question.strip())
    return overview.group("topic") if overview else question


def required_words(question: str) -> list[str]:
    """The question's words that name what it is about (original case, in order).

    Of a question asking for an overview ("What does a new Fernhill employee need to know
    about expenses?"), the words of its topic: who asks is not what the sources must say.
    """
    question = subject_part(question)
    aside: set[str] = set()
    for match in _SET_ASIDE.finditer(question):
        aside |= term_set(match.group(1))
    for match in _HOW_WHAT.finditer(question):  # "how long": the need's type, not its subject
        aside |= term_set(match.group(1) or match.group(2))
    out = []
    for word in display_words(question):
        stems = term_set(word)
        if stems and not stems <= FRAME_WORDS and not stems <= aside:
            out.append(word)
    return out


def mentions(word: str, seen: set[str]) -> bool:
    """``seen`` (stems) holds the word, or a form sharing its first letters ("high"/"highest").

    The shorter form must be at least half the longer one: "pass" is no form of
    "password-protect". A compound is held when its parts are ("load" in ``load_dotenv``;
    "password-protect" needs both "password" and "protect").
    """
    stems = term_set(word)
    if stems <= seen:
        return True
    known = seen | {part for b in seen for part in _parts(b)}
    return all(_held(a, known) for a in stems)


def _parts(term: str) -> list[str]:
    """The parts of a compound term (``load_dotenv`` → load, dotenv); none for a plain one."""
    parts = [p for p in _SEPARATOR.split(term) if len(p) >= 3]
    return parts if len(parts) > 1 else []


def _held(stem: str, known: set[str]) -> bool:
    if stem in known or any(_forms_of_one(stem, b) for b in known):
        return True
    parts = _parts(stem)
    return bool(parts) and all(_held(p, known) for p in parts)


def _forms_of_one(a: str, b: str) -> bool:
    """Two stems that are forms of one word: one opens the other and is half its length.

    What the longer adds is an ending, not another word ("password" is no form of
    "password-protect": that is a compound, judged by its parts).
    """
    short, long_ = sorted((a, b), key=len)
    return (
        len(short) >= 4
        and long_.startswith(short)
        and 2 * len(short) >= len(long_)
        and not _SEPARATOR.search(long_[len(short) :])
    )


def bridged(question: str, quoted: list[tuple[str, Evidence]]) -> bool:
    """The quotes chain through a name the question does not say (multi-hop).

    "What did the actress in My Fair Lady win a Tony for?" is answered by the film's article,
    which names Audrey Hepburn, and Audrey Hepburn's article: the question's words are spread
    over both, and the answer's words are in neither question. Such an answer is not judged
    by the question's words.
    """
    asked = term_set(question)
    docs = {ev["doc_id"]: ev for _, ev in quoted}
    for b in docs.values():
        name = b["title"].strip()
        if len(name) < 4 or term_set(name) <= asked:
            continue
        pattern = re.compile(rf"\b{re.escape(name)}\b", re.I)
        if any(a["doc_id"] != b["doc_id"] and pattern.search(a["snippet"]) for a in docs.values()):
            return True
    return False


def names_in_question(part: str) -> set[str]:
    """The words of ``part`` that name something.

    Capitalised inside it (not its first word), all capitals, or code-like
    (``load_dotenv``, ``os.environ``, ``HTTP/2``).

    A person can put a question in their own words, but not a name: meaning never stands in
    for a name the quotes do not hold.
    """
    words = display_words(part)
    first = part.strip().split(" ", 1)[0].strip("¿¡\"'“")
    return {
        w
        for w in words
        if (w[0].isupper() and w != first)
        or (len(w) > 1 and w.isupper())
        or re.search(r"[_./\d]|[a-z][A-Z]", w)
    }


def not_answered(
    question: str,
    quoted: list[tuple[str, Evidence]],
    scores: list[float],
    section: dict[str, str],
    meaning: list[float] | None = None,
    pulled: list[bool] | None = None,
    meaning_floor: float = 1.01,
) -> tuple[list[str], bool]:
    """What the quoted documents leave out, and whether they answer nothing at all.

    See ``judge_needs``, which also says which needs are left unanswered.
    """
    judged = judge_needs(question, quoted, scores, section, meaning, pulled, meaning_floor)
    return judged[0], judged[1]


def judge_needs(
    question: str,
    quoted: list[tuple[str, Evidence]],
    scores: list[float],
    section: dict[str, str],
    meaning: list[float] | None = None,
    pulled: list[bool] | None = None,
    meaning_floor: float = 1.01,
) -> tuple[list[str], bool, list[Need]]:
    """What the quoted documents leave out, whether they answer nothing, and which needs.

    ``quoted`` is best first, ``scores`` the quotes' relevance, ``meaning`` their closeness
    to what the question asks (``providers.rerank.meaning_beyond_subject``), ``pulled``
    whether the question's words each quote lacks pull toward it
    (``providers.rerank.words_pull``); ``section`` maps a quote's source id to the heading it
    sits under. Each need of the question (``nodes.reader.needs``: one per part, typed) is judged
    on its own. It is answered

    - **by meaning**, when a quote means what it asks (``meaning`` at least
      ``meaning_floor``), the question's own words it lacks pull toward it, and it carries
      what the need's type asks for (an amount question needs a quote with an amount, a
      "who" question a person or role). Never when a name the need says is not in that
      quote (its sentence, title or section): "How much does a VPN profile cost?" is not
      answered by a hotel limit because another quote says "VPN";
    - **by words**, when the quotes name every word that names its subject (or one quote
      is a strong match as a whole whose missing words pull toward it) and the best quotes
      carry what its type asks for (a number for an amount, a date for "when"…).

    The answer quotes what answers some need and names the needs no source answers. When
    the best quote is a chat message, only names and types are judged (``_judge_messages``);
    nothing is judged when the quotes chain through a name the question does not say
    (``bridged``).
    """
    first = quoted[0][1]["kind"] if quoted else ""
    if first not in DOCUMENT_KINDS | CHAT_KINDS or bridged(question, quoted):
        return [], False, []  # a web page or a multi-hop chain: not judged
    each = [term_set(f"{ev['title']} {section.get(ev['source_id'], '')} {s}") for s, ev in quoted]
    if first in CHAT_KINDS:
        return _judge_messages(question, quoted, each)
    close = meaning or [0.0] * len(quoted)
    pulls = pulled or [False] * len(quoted)
    seen: set[str] = set().union(*each)
    # A strong match answers as a whole only if the words it lacks pull toward it: "How do I
    # password-protect secrets in a .env file?" is a strong match for "reads key-value pairs
    # from a .env file" through the words they share, and "password-protect" pulls away.
    strong_pulls = pulled if pulled is not None else [True] * len(scores)  # not judged: as before
    strong = any(
        score >= STRONG_MATCH and pull for score, pull in zip(scores, strong_pulls, strict=False)
    )
    best = " ".join(sentence for sentence, _ in quoted[:2])
    gaps: list[str] = []
    unanswered: list[Need] = []
    needs = needs_of(question)
    for need in needs:
        missing = [
            w
            for w in required_words(need.part)
            if not mentions(w, seen) and not (need.kind == "amount" and _SUPERLATIVE.fullmatch(w))
        ]
        typed = need.kind not in WORD_KINDS
        names = names_in_question(need.part)
        if any(
            m >= meaning_floor
            and pull
            and (not typed or need.carried_by(sentence))
            and all(mentions(n, said) for n in names)  # the quote itself holds the names
            for (sentence, _), said, m, pull in zip(quoted, each, close, pulls, strict=False)
        ):
            continue  # a quote means it and carries what it asks for
        if missing and (not strong or len(needs) > 1):
            named = [w for w in missing if w not in gaps]
            gaps += [f"{NEED_NAMES[need.kind]} ({', '.join(missing)})"] if typed else named
            unanswered.append(need)
        elif typed and not need.carried_by(best):
            # every word named, but no date for "when", no amount for "how much"
            gaps.append(NEED_NAMES[need.kind])
            unanswered.append(need)
    return gaps, len(unanswered) == len(needs), unanswered


def _judge_messages(
    question: str, quoted: list[tuple[str, Evidence]], each: list[set[str]]
) -> tuple[list[str], bool, list[Need]]:
    """``judge_needs`` when the best quote is a chat message: only names and types count.

    Messages say things in passing, in words of their own ("How many machines did
    Brightline buy?" — "30 robots"), so the question's other words are not asked of them
    (asking for half of them refused that one). But a need is not answered by a quote that
    lacks a name it says ("How many robots did the Kestrel deal include?" by the Brightline
    deal; "…Pathfinder v3…" by the v2 freeze), or what its type asks for.
    """
    needs = needs_of(question)
    gaps: list[str] = []
    unanswered: list[Need] = []
    # a message's name may be in its conversation: "valid until 31 March" replies to a
    # question about the Harbor Street permit (``Evidence.around_terms``)
    each = [
        said | set(ev.get("around_terms", [])) for said, (_, ev) in zip(each, quoted, strict=True)
    ]
    for need in needs:
        names = names_in_question(need.part)
        typed = need.kind not in WORD_KINDS
        if any(
            all(mentions(n, said) for n in names) and (not typed or need.carried_by(sentence))
            for (sentence, _), said in zip(quoted, each, strict=False)
        ):
            continue
        lacked = [n for n in sorted(names) if not any(mentions(n, said) for said in each)]
        what = ", ".join(lacked) or NEED_NAMES[need.kind]
        gaps.append(f"{NEED_NAMES[need.kind]} ({what})" if typed and lacked else what)
        unanswered.append(need)
    return gaps, len(unanswered) == len(needs), unanswered


class Judgement(NamedTuple):
    """Whether the quotes answer: the needs they leave out, and how they answer."""

    gaps: list[str]
    #: no need at all is answered (the answer is "found nothing")
    nothing: bool
    #: a quote answers in other words than the question's (by meaning)
    by_meaning: bool
    #: the needs no quote answers
    unanswered: tuple[Need, ...] = ()


def judge_quotes(question: str, scored: list[Quote], meaning_floor: float) -> Judgement:
    """``not_answered`` over ``extractive_answer``'s quotes, read in their words.

    A lead-in's code block (``said_of``) ranks it but does not answer for it: an example's
    ``out_of_order_time_window: 30m`` is no default a page states.
    """
    scored = [q._replace(sentence=said_of(q.sentence)) for q in scored]
    quoted = [(q.sentence, q.evidence) for q in scored]
    gaps, nothing, unanswered = judge_needs(
        question,
        quoted,
        [q.score for q in scored],
        {ev["source_id"]: heading_of(ev) for _, ev in quoted},
        [q.meaning for q in scored],
        [q.pulled for q in scored],
        meaning_floor,
    )
    needs = needs_of(question)
    by_meaning = any(
        q.pulled
        and q.meaning >= meaning_floor
        and q.evidence["kind"] in DOCUMENT_KINDS
        and all(n.kind in WORD_KINDS or n.carried_by(q.sentence) for n in needs)
        for q in scored
    )
    return Judgement(gaps, nothing, by_meaning and not nothing, tuple(unanswered))


#: Words a passage stating a need's type tends to use, added to the need's own words when
#: searching for it (English; Chinese). A search engine matches them (and an embedding leans
#: toward sentences of the type); the question's interrogative ("when", "who") matches nothing.
_CUES = {
    "amount": ("amount limit maximum cost", "金额 数量 上限"),
    "time": ("date deadline until", "日期 时间 截止"),
    "person": ("responsible owner contact approves", "负责人 联系人"),
    "place": ("location host path", "地点 位置"),
    "reason": ("because reason", "原因 因为"),
    "steps": ("steps", "步骤"),
    "comparison": ("difference compared", "区别 比较"),
}


def need_query(need: Need) -> str:
    """A search for one need: the words that name its subject, and its type's cue words."""
    words = required_words(need.part)
    cues = _CUES.get(need.kind, ("", ""))
    chinese = re.search(r"[\u4e00-\u9fff]", need.part) is not None
    cue_words = (cues[1] if chinese else cues[0]).split()
    said = {w.lower() for w in words}
    return " ".join([*words, *(c for c in cue_words if c not in said)])
