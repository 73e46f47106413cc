"""What a text is made of for matching: words, stems, stopwords, terms, numbers.

Any language; runs of Chinese characters are segmented into words with jieba.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import snowballstemmer

from seekgraph.providers.language import pattern
from seekgraph.providers.language import words as words_of

#: English words no answer needs to contain (``providers/language/en.toml``).
ENGLISH_STOPWORDS = words_of("stopwords", "en")
#: Chinese function words a question is made of, which no answer needs to contain (jieba's
#: words: particles, pronouns, question words; ``providers/language/zh.toml``).
CJK_STOPWORDS = words_of("stopwords", "zh")
#: Words no search matches on and no coverage counts, in either language: the full-text
#: query, a passage's term coverage and "what is missing" all leave them out.
STOPWORDS = ENGLISH_STOPWORDS | CJK_STOPWORDS

_WORD = re.compile(
    r"[0-9A-Za-z\u00C0-\u024F][0-9A-Za-z\u00C0-\u024F'_\-\.]*[0-9A-Za-z\u00C0-\u024F]|[0-9A-Za-z\u00C0-\u024F]|[\u3400-\u9FFF\uF900-\uFAFF]+"
)
CJK = re.compile(r"[\u3400-\u9FFF\uF900-\uFAFF]")
_CJK_RUN = re.compile(r"[\u3400-\u9FFF\uF900-\uFAFF]+")
#: a number with its unit ("$50", "90 days"; the units are the language table's)
_NUMBER = re.compile(rf"[$€£¥]?\d[\d,]*(?:\.\d+)?\s?(?:{pattern('number_unit')})?", re.I)


@lru_cache(maxsize=1)
def _stemmer() -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=1)
def _jieba() -> Any:
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba


@lru_cache(maxsize=50_000)
def _segment_cjk(run: str) -> tuple[str, ...]:
    """Chinese words of a run of CJK characters (jieba, the maintained segmenter)."""
    if len(run) == 1:
        return (run,)
    return tuple(w for w in _jieba().lcut(run) if w.strip())


#: The endings of English contractions and possessives: "isn't", "what's", "you're", "I've".
_CLITIC = re.compile(pattern("contraction"), re.I)
#: "can't", "won't", "shan't": the word before "n't" is not the verb's own spelling.
_IRREGULAR = dict(entry.split() for entry in words_of("negated_spellings", "en"))


def _uncontracted(token: str) -> str:
    """A word without the contraction or possessive it ends with.

    "don't" is "do", "what's" is "what", "isn't" is "is", "can't" is "can", "brew's" is
    "brew": a question's "don't" or "what's" is no term an answer must hold, and a
    contraction of a stopword is a stopword (a negation's "not" is one too).
    """
    base = _CLITIC.sub("", token) or token
    return _IRREGULAR.get(base.lower(), base) if token.lower().endswith("n't") else base


def words(text: str) -> list[str]:
    """Lower-cased word tokens; runs of Chinese characters are segmented into words."""
    out: list[str] = []
    for token in _WORD.findall(text.replace("\u2019", "'")):
        if CJK.match(token):
            out.extend(_segment_cjk(token))
        else:
            out.append(_uncontracted(token.lower().strip("'.-_")))
    return [w for w in out if w]


def segmented(text: str) -> str:
    """The text with Chinese runs split into space-separated words (for full-text indexes)."""
    return _CJK_RUN.sub(lambda m: " " + " ".join(_segment_cjk(m.group(0))) + " ", text)


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """The English Snowball stem of a lower-cased word (CJK tokens unchanged)."""
    if CJK.match(word):
        return word
    return str(_stemmer().stemWord(word))


def terms(text: str) -> list[str]:
    """Content terms: words without stopwords, stemmed, in order (duplicates kept)."""
    return [stem(w) for w in words(text) if w not in STOPWORDS and (len(w) > 1 or CJK.match(w))]


def term_set(text: str) -> set[str]:
    """The distinct content terms of ``text``."""
    return set(terms(text))


def coverage(question_terms: Iterable[str], text_terms: set[str]) -> float:
    """Fraction of the question's distinct terms that occur in ``text_terms``."""
    wanted = set(question_terms)
    if not wanted:
        return 0.0
    return len(wanted & text_terms) / len(wanted)


def numbers(text: str) -> set[str]:
    """Normalised numeric values with their unit, e.g. ``$50`` or ``90 days``."""
    found = set()
    for match in _NUMBER.findall(text):
        value = match.strip().lower().replace(",", "")
        if value.rstrip("%").strip("$€£¥").replace(".", "", 1).isdigit() and len(value) <= 2:
            continue  # bare one- or two-digit numbers are usually list markers or dates
        found.add(value)
    return found


def display_words(text: str) -> list[str]:
    """Distinct original-case words of ``text`` without stopwords, in order.

    Runs of Chinese characters are segmented into words, as ``words`` does.
    """
    seen: dict[str, str] = {}
    for token in _WORD.findall(text.replace("\u2019", "'")):
        parts = _segment_cjk(token) if CJK.match(token) else (_uncontracted(token),)
        for part in parts:
            low = part.lower()
            if low not in STOPWORDS and low not in seen:
                if len(low) > 1 or CJK.match(low):
                    seen[low] = part
    return list(seen.values())
