"""What an answer reports as not found: content words only, Chinese segmented."""

from __future__ import annotations

from seekgraph.nodes.reader.coverage import missing_words
from tests.factories import make_evidence


def test_question_words_like_much_are_never_reported_missing() -> None:
    kept = [make_evidence("kb/price#0", "The Pathfinder kit costs $900.", title="Price list")]
    assert missing_words("How much does the Pathfinder freeze cost?", kept) == ["freeze"]


def test_a_chinese_question_is_compared_word_by_word() -> None:
    kept = [make_evidence("news/1#0", "新版本的导航系统将于十二月发布。", title="导航")]
    assert missing_words("新版本的导航系统什么时候发布？", kept) == []  # 什么时候 asks "when"
    assert missing_words("新版本的导航系统什么时候在上海发布？", kept) == ["上海"]
