"""What kind of question is it, and which quote answers that kind first.

- **how** ("How do I set up SSO?"): the steps, in order — a numbered list kept whole, or the
  sentences of a section headed like a procedure ("Steps", "Setup", "Installation").
- **value** ("What is the default timeout?", "How many days…?"): the sentence with the value.
- **definition** ("What is Okta?"): the sentence that says what it is.
- anything else: the best-scoring sentences, as scored.

The wording each kind is told by ("how do", "what is", "Steps", "Installation") is data: the
``*_question``, ``*_heading`` and ``*_said`` entries of ``providers/language/en.toml``'s
``[patterns]`` table.
"""

from __future__ import annotations

import re

from seekgraph.providers.language import compiled, pattern, words
from seekgraph.providers.sentences import said_of, sentences
from seekgraph.providers.terms import term_set
from seekgraph.state.models import Evidence, heading_of

_HOW = compiled("how_question", flags=re.I)
_VALUE = compiled("value_question", flags=re.I)
_DEFINITION = compiled("definition_question", flags=re.I)
#: A default asked for in other words ("if I don't set it", "out of the box"), per language.
_DEFAULT_ASKED = {
    "en": compiled("default_asked", "en", flags=re.I),
    "zh": compiled("default_asked", "zh", flags=re.I),
}
#: ... and what is worded alike but asks whether one may, or why.
_DEFAULT_NOT_ASKED = compiled("default_not_asked", "en", "zh", flags=re.I)
_PROCEDURE_HEADING = compiled("procedure_heading", flags=re.I)
#: A section under one of these headings is a list of steps even without numbers.
_STEPS_HEADING = compiled("steps_heading", flags=re.I)
_STEPS = re.compile(r"^\s*1[.)]\s", re.M)
_HAS_VALUE = re.compile(rf"\d|{pattern('default_said')}", re.I)
_SAYS_DEFAULT = re.compile(pattern("default_said"), re.I)
#: "X is a …": a sentence that says what something is.
_DEFINES = compiled("definition_said", flags=re.I)
#: Added to a quote's score when it is what the kind of question asks for.
KIND_BONUS = 0.3
#: A procedure section gives at most this many steps.
MAX_STEPS = 8


def kind_of(question: str) -> str:
    """``how``, ``value``, ``definition`` or ``other``."""
    if _HOW.search(question):
        return "how"
    if _VALUE.search(question) or default_asked(question):
        return "value"
    if _DEFINITION.match(question):
        return "definition"
    return "other"


def default_asked(question: str) -> str | None:
    """The word for "default" when ``question`` asks for one without saying it.

    "How tall is the chart if I don't set it?" asks for the chart's default height; a page
    says "Default: 200 pixels", and is searched for with that word too. None when the
    question does not ask that way, or already says "default".
    """
    if _DEFAULT_NOT_ASKED.search(question) or _HOW.search(question):
        return None  # (a how-question asks for steps, done without setting it)
    for language, asked in _DEFAULT_ASKED.items():
        said = words("default_words", language)
        if asked.search(question) and not any(w in question.lower() for w in said):
            return min(said)
    return None


def asks_default(question: str) -> bool:
    """``question`` asks for a default, in those words or others ("if I never set it")."""
    return _SAYS_DEFAULT.search(question) is not None or default_asked(question) is not None


def procedure_steps(ev: Evidence) -> str | None:
    """A procedure section's sentences in order; None if it is not one.

    Under a "Steps" heading they are numbered; under "Install the client" they are read as
    one paragraph.
    """
    heading = heading_of(ev)
    if not _PROCEDURE_HEADING.search(heading):
        return None
    # the sentences alone: code, and the code a sentence introduces, are not steps
    units = [said_of(u) for u in sentences(ev["snippet"]) if not u.startswith("```")]
    if len(units) < 2 or any(_STEPS.search(u) for u in units):
        return None  # a numbered list is already a unit of its own
    if _STEPS_HEADING.search(heading):
        return "\n".join(f"{i}. {u}" for i, u in enumerate(units[:MAX_STEPS], 1))
    return " ".join(units[:MAX_STEPS])


def extra_units(question: str, pool: list[Evidence]) -> list[tuple[str, Evidence]]:
    """Quotable units the kind of question adds: a procedure section read as steps."""
    if kind_of(question) != "how":
        return []
    return [
        (steps, ev)
        for ev in pool[:4]
        if ev["kind"] != "messages" and (steps := procedure_steps(ev))
    ]


def kind_bonus(question: str, unit: str, procedures: frozenset[str] = frozenset()) -> float:
    """How much more ``unit`` answers the kind of question asked.

    ``procedures`` are the units ``extra_units`` read from procedure sections.
    """
    kind = kind_of(question)
    if kind == "how":
        return KIND_BONUS if _STEPS.search(unit) or unit in procedures else 0.0
    if kind == "value":
        if not _HAS_VALUE.search(unit):
            return 0.0
        # asked for the default, a unit that says which value is the default is what the
        # question asks for, as steps are for a how-question; one holding any number is
        # less ("Default: `80`" over "rules are often set to 100 or 120")
        if asks_default(question) and _SAYS_DEFAULT.search(unit) is not None:
            return KIND_BONUS
        return KIND_BONUS / 3
    if kind == "definition":
        match = _DEFINITION.match(question)
        subject = term_set(match.group(1)) if match else set()
        head = term_set(" ".join(unit.split()[:6]))
        defines = _DEFINES.search(unit) is not None
        return KIND_BONUS / 2 if subject and subject <= head and defines else 0.0
    return 0.0
