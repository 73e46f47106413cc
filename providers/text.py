"""Text analysis shared by sources and nodes: terms, stems, sentences, numbers."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import snowballstemmer

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves please tell know need want get got use using used also may might must shall
    let us anyone someone something thing things way new one per every via much many often
    whose whether exactly currently already toward towards""".split()
)
#: Chinese function words a question is made of, which no answer needs to contain.
_CJK_STOPWORDS = frozenset(
    "的 了 是 在 和 与 或 吗 呢 吧 啊 什么 时候 什么时候 怎么 怎样 如何 哪 哪里 哪些 哪个 谁 "
    "为什么 多少 几 有 有没有 是否 请问 一个 这个 那个 我 你 他 她 它 我们 你们 他们 "
    "要 会 能 可以 被 把".split()
)

_WORD = re.compile(
    r"[0-9A-Za-z\u00C0-\u024F][0-9A-Za-z\u00C0-\u024F'_\-\.]*[0-9A-Za-z\u00C0-\u024F]|[0-9A-Za-z\u00C0-\u024F]|[\u3400-\u9FFF\uF900-\uFAFF]+"
)
_CJK = re.compile(r"[\u3400-\u9FFF\uF900-\uFAFF]")
_CJK_RUN = re.compile(r"[\u3400-\u9FFF\uF900-\uFAFF]+")
_NUMBER = re.compile(r"[$€£¥]?\d[\d,]*(?:\.\d+)?\s?(?:%|usd|eur|days?|hours?|minutes?)?", re.I)


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


def words(text: str) -> list[str]:
    """Lower-cased word tokens; runs of Chinese characters are segmented into words."""
    out: list[str] = []
    for token in _WORD.findall(text):
        if _CJK.match(token):
            out.extend(_segment_cjk(token))
        else:
            out.append(token.lower().strip("'.-_"))
    return [w for w in out if w]


def segmented(text: str) -> str:
    """The text with Chinese runs split into space-separated words (for full-text indexes)."""
    return _CJK_RUN.sub(lambda m: " " + " ".join(_segment_cjk(m.group(0))) + " ", text)


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """The English Snowball stem of a lower-cased word (CJK tokens unchanged)."""
    if _CJK.match(word):
        return word
    return str(_stemmer().stemWord(word))


def terms(text: str) -> list[str]:
    """Content terms: words without stopwords, stemmed, in order (duplicates kept)."""
    return [stem(w) for w in words(text) if w not in STOPWORDS and (len(w) > 1 or _CJK.match(w))]


def term_set(text: str) -> set[str]:
    """The distinct content terms of ``text``."""
    return set(terms(text))


def coverage(question_terms: Iterable[str], text_terms: set[str]) -> float:
    """Fraction of the question's distinct terms that occur in ``text_terms``."""
    wanted = set(question_terms)
    if not wanted:
        return 0.0
    return len(wanted & text_terms) / len(wanted)


_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_ORDERED = re.compile(r"^\s*\d+[.)]\s+")
#: A line that completes the sentence before it ("Default: 30 s") rather than standing alone.
_COMPLETES = re.compile(r"^(?:default|defaults to|returns?|type|values?|since)\b\s*:?", re.I)
#: A lead-in keeps the list it introduces when the list is at most this long.
_LEAD_IN_LIST_CHARS = 900


def blocks(text: str) -> list[str]:
    """Blank-line separated blocks; a fenced code block is one block, blank lines and all."""
    out: list[str] = []
    current: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            if not fenced and current and not _ITEM.match(current[0]):
                out.append("\n".join(current))
                current = []
            fenced = not fenced
            current.append(line)
            if not fenced and not _ITEM.match(current[0]):
                out.append("\n".join(current))
                current = []
            continue
        if not line.strip() and not fenced:
            if current:
                out.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        out.append("\n".join(current))
    return [b.strip("\n") for b in out if b.strip()]


def split_sentences(paragraph: str) -> list[str]:
    """Sentences of one paragraph (sentencex: abbreviations such as "e.g." do not end one)."""
    from sentencex import segment

    language = "zh" if _CJK.search(paragraph) else "en"
    out: list[str] = []
    glued = False  # the previous piece ended inside a word ("redis." + "ConnectionPool")
    for piece in segment(language, paragraph):
        if glued and out:
            out[-1] += piece
        else:
            out.append(piece)
        glued = not piece[-1:].isspace() and not _CJK.search(piece[-2:])
    return [s.strip() for s in out if s.strip()]


def _list_units(lines: list[str]) -> list[str]:
    """A list block: numbered steps stay one unit, in order; each bullet item is one.

    A code fence inside an item becomes a unit of its own.
    """
    code: list[str] = []
    items: list[tuple[bool, str]] = []  # (top level, text)
    fenced = False
    for line in lines:
        fence = line.lstrip().startswith("```")
        if fence or fenced:
            code.append(line.strip() if fence else line)
            fenced = fenced != fence
            continue
        if _ITEM.match(line) or not items:
            items.append((not line[:1].isspace(), line.strip()))
        else:  # a wrapped continuation of the item above
            top, text = items[-1]
            items[-1] = (top, f"{text} {line.strip()}")
    top_level = [text for top, text in items if top]
    if len(top_level) > 1 and all(_ORDERED.match(text) for text in top_level):
        return ["\n".join(text for _, text in items), *(["\n".join(code)] if code else [])]
    units = [_ITEM.sub("", text).strip() for _, text in items]
    return [u for u in units if u] + (["\n".join(code)] if code else [])


def table_rows(lines: list[str]) -> list[str]:
    """A table's rows, each read with its header: "Library version: 3.5.3; Supported: 6.2"."""
    header = [cell.strip() for cell in lines[0].split(" | ")]
    rows = []
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.split(" | ")]
        pairs = [f"{h}: {c}" if h else c for h, c in zip(header, cells, strict=False) if c]
        rows.append("; ".join(pairs))
    return rows


def sentences(text: str) -> list[str]:
    """Quotable units of text: whole sentences, list items, numbered steps, code blocks.

    Paragraphs are split at sentence ends only (a hard-wrapped line break is not one, nor
    the dot of "e.g."); a numbered list stays one unit, in order (steps); a bullet list gives
    one unit per item; a fenced code block is one unit, fences included; headings are not
    quoted; a table row is read with its header; a line such as "Default: 30 s" stays with
    the sentence it completes, and a sentence ending in ":" keeps the short list it
    introduces.
    """
    units: list[str] = []
    lead_in = False  # the last unit ends with ":" and may take the list that follows
    for block in blocks(text):
        block = block.strip()
        if block.startswith("#"):
            lead_in = False
            continue
        if block.startswith("```"):
            units.append(block)
            lead_in = False
            continue
        lines = [line for line in block.splitlines() if line.strip()]
        if len(lines) > 1 and all(" | " in line for line in lines):
            units += table_rows(lines)
            lead_in = False
            continue
        if _ITEM.match(lines[0]):
            listed = _list_units(lines)
            if lead_in and len(block) <= _LEAD_IN_LIST_CHARS and not block.count("```"):
                items = [ln.strip() for ln in lines]
                units[-1] = units[-1] + "\n" + "\n".join(items)
            else:
                units += listed
            lead_in = False
            continue
        paragraph = re.sub(r"^>\s*", "", " ".join(line.strip() for line in lines))
        for part in split_sentences(paragraph):
            if len(part) < 3:
                continue
            if units and _COMPLETES.match(part) and not units[-1].startswith("```"):
                units[-1] = f"{units[-1]} {part}"
            else:
                units.append(part)
        lead_in = bool(units) and units[-1].endswith(":")
    return units


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
    for token in _WORD.findall(text):
        parts = _segment_cjk(token) if _CJK.match(token) else (token,)
        for part in parts:
            low = part.lower()
            if low not in STOPWORDS and low not in _CJK_STOPWORDS and low not in seen:
                if len(low) > 1 or _CJK.match(low):
                    seen[low] = part
    return list(seen.values())
