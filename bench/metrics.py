"""Retrieval and answer metrics (each one checked against hand-computed values in tests)."""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


def ndcg_at_k(ranked: Sequence[str], relevant: dict[str, int], k: int = 10) -> float:
    """nDCG@k with graded relevance (BEIR / trec_eval definition: gain = rel, log2 discount)."""
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(rel / math.log2(i + 2) for i, rel in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranked: Sequence[str], relevant: Sequence[str] | set[str], k: int) -> float:
    """Share of the relevant documents found in the top ``k``."""
    wanted = set(relevant)
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


def all_supporting_at_k(ranked: Sequence[str], supporting: Sequence[str], k: int) -> float:
    """1 when every supporting document is in the top ``k``, else 0."""
    return 1.0 if supporting and set(supporting) <= set(ranked[:k]) else 0.0


def _zh_chars(text: str) -> list[str]:
    punct = set(string.punctuation) | set("，。、；：？！“”‘’（）《》【】…—·「」『』〈〉～")
    return [c for c in text.lower() if not c.isspace() and c not in punct]


def char_f1(prediction: str, answers: Sequence[str]) -> float:
    """CMRC 2018's character-level F1 against the best of the reference answers."""
    pred = _zh_chars(prediction)
    best = 0.0
    for answer in answers:
        ref = _zh_chars(answer)
        common = sum((Counter(pred) & Counter(ref)).values())
        if common == 0:
            continue
        precision, recall = common / len(pred), common / len(ref)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


def strip_citations(text: str) -> str:
    """An answer without its ``[src:ID]`` markers and list bullets."""
    return re.sub(r"\[src:[^\]]+\]|^\s*[-*]\s*", "", text, flags=re.M).strip()


_CJK = re.compile(r"[\u3400-\u9fff]")


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation or articles, single spaces."""
    text = "".join(c for c in text.lower() if c not in set(string.punctuation))
    return " ".join(re.sub(r"\b(?:a|an|the)\b", " ", text).split())


def contains_answer(text: str, answers: Sequence[str]) -> bool:
    """Whether ``text`` holds one of the gold answers (both normalised, as whole words).

    Chinese has no spaces between words: a Chinese answer is looked for as a substring.
    """
    haystack = f" {normalize_answer(text)} "
    for answer in answers:
        gold = normalize_answer(answer)
        if gold and (f" {gold} " in haystack or (_CJK.search(gold) and gold in haystack)):
            return True
    return False


def halves(per: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, dict[str, float]]]:
    """Each system's mean metrics on the first half of the questions (``tuning``: where
    defaults may be chosen) and on the second (``report``: what is reported), in order."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for part in ("tuning", "report"):
        out[part] = {}
        for name, metrics in per.items():
            means = {}
            for metric, values in metrics.items():
                half = (
                    values[: len(values) // 2] if part == "tuning" else values[len(values) // 2 :]
                )
                if half:
                    means[metric] = round(sum(half) / len(half), 4)
            out[part][name] = means
    return out


def rank_auc(labels: npt.NDArray[np.float64], scores: npt.NDArray[np.float64]) -> float:
    """ROC AUC by ranks: the chance a positive (label 1) outscores a negative; ties count half."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    for s in np.unique(scores):  # average ranks over ties
        tied = scores == s
        ranks[tied] = ranks[tied].mean()
    pos = labels == 1
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
