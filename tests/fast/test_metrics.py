import math

import numpy as np
import pytest

from bench.metrics import (
    all_supporting_at_k,
    char_f1,
    contains_answer,
    halves,
    ndcg_at_k,
    normalize_answer,
    rank_auc,
    recall_at_k,
    strip_citations,
)


def test_ndcg_matches_a_hand_computed_value() -> None:
    # relevant d1 (rel 1) at rank 2 and d3 (rel 2) at rank 3; ideal: d3 then d1
    got = ndcg_at_k(["x", "d1", "d3"], {"d1": 1, "d3": 2}, k=10)
    dcg = 1 / math.log2(3) + 2 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert got == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["d3", "d1"], {"d1": 1, "d3": 2}) == pytest.approx(1.0)
    assert ndcg_at_k(["x"], {"d1": 1}) == 0.0


def test_recall_and_all_supporting() -> None:
    assert recall_at_k(["a", "b", "c"], {"a", "c", "z"}, 2) == pytest.approx(1 / 3)
    assert all_supporting_at_k(["a", "b", "c"], ["a", "c"], 3) == 1.0
    assert all_supporting_at_k(["a", "b", "c"], ["a", "c"], 2) == 0.0


def test_char_f1_as_cmrc_defines_it() -> None:
    assert char_f1("光荣和ω-force", ["光荣和ω-force"]) == pytest.approx(1.0)
    # prediction 光荣公司 vs answer 光荣: common 2, precision 2/4, recall 1 -> f1 2/3
    assert char_f1("光荣公司。", ["光荣"]) == pytest.approx(2 / 3)
    assert char_f1("无关", ["光荣"]) == 0.0


def test_strip_citations() -> None:
    assert strip_citations("- It is 5 [src:kb/a#0].") == "It is 5 ."


def test_containment_normalises_like_squad_and_matches_whole_words() -> None:
    assert contains_answer("She won the Tony for Best Actress, in 1954.", ["best actress"])
    assert contains_answer("Moved to Paris.", ["paris"])
    assert not contains_answer("Parisian cafés", ["Paris"])  # a word, not a prefix
    assert not contains_answer("anything", ["", "   "])
    assert normalize_answer("The  U.S. Army!") == "us army"
    assert contains_answer("导航系统将于十二月发布。", ["十二月"])  # Chinese: no spaces


def test_halves_split_each_system_in_question_order() -> None:
    per = {"bm25": {"recall@5": [1.0, 0.0, 0.0, 0.0, 1.0]}, "graph": {"recall@5": [1.0, 1.0]}}
    split = halves(per)
    # five questions: the first two tune, the last three are reported
    assert split["tuning"]["bm25"] == {"recall@5": 0.5}
    assert split["report"]["bm25"] == {"recall@5": 0.3333}
    assert split["tuning"]["graph"] == split["report"]["graph"] == {"recall@5": 1.0}


def test_rank_auc_matches_hand_counted_pairs() -> None:
    labels = np.array([1.0, 1.0, 0.0, 0.0, 0.0])
    # positives 0.9 and 0.4; negatives 0.5, 0.4, 0.1: of 6 pairs 4 won, 1 tied, 1 lost
    assert rank_auc(labels, np.array([0.9, 0.4, 0.5, 0.4, 0.1])) == pytest.approx(4.5 / 6)
    assert rank_auc(labels, np.array([0.9, 0.8, 0.3, 0.2, 0.1])) == 1.0
    assert rank_auc(labels, np.array([0.1, 0.2, 0.3, 0.8, 0.9])) == 0.0
