"""The freshness rule: a newer announcement of a change outranks an older article once due."""

from __future__ import annotations

import datetime as dt

from seekgraph.nodes.reader.freshness import dates_in, verdict

TODAY = dt.date(2026, 12, 1)


def test_a_change_already_in_effect_makes_the_article_out_of_date() -> None:
    said = "Policy change: from 1 November the meal allowance is $75, up from $50."
    assert verdict(said, "2026-11-03T08:30:00Z", TODAY) == "current"


def test_a_change_announced_for_later_is_upcoming() -> None:
    said = "From 1 January 2027 expense claims move to the Tallybook portal."
    assert verdict(said, "2026-11-20", TODAY) == "upcoming"


def test_the_latest_date_named_is_when_the_change_is_complete() -> None:
    said = (
        "The new gateway goes live on 10 November; the old gateway is switched off on 30 November."
    )
    assert verdict(said, "2026-11-05", dt.date(2026, 11, 20)) == "upcoming"
    assert verdict(said, "2026-11-05", TODAY) == "current"


def test_a_plain_statement_announces_nothing() -> None:
    assert verdict("The daily meal allowance is $60 per person.", "2026-11-03", TODAY) is None


def test_dates_are_read_in_the_usual_ways() -> None:
    text = "on 30 November, by December 5th, 2026 and 2027-01-15"
    assert dates_in(text, 2026) == [
        dt.date(2026, 11, 30),
        dt.date(2026, 12, 5),
        dt.date(2027, 1, 15),
    ]


def test_abbreviated_months_are_read_and_an_impossible_date_is_none() -> None:
    text = "from Sept 9th, Nov. 3, 2027 and 31 February"
    assert dates_in(text, 2026) == [dt.date(2026, 9, 9), dt.date(2027, 11, 3)]


def test_the_newer_fact_takes_the_place_of_the_one_it_makes_out_of_date() -> None:
    from seekgraph.nodes.reader.conflicts import current_first

    old = "While travelling the daily meal allowance is $50 per person."
    new = "From 1 November the daily meal allowance is $75 per person."
    conflict = {
        "topic": "meal allowance",
        "claims": [
            {"id": "kb/travel#0", "text": old, "kind": "kb", "updated_at": "2026-01-15"},
            {"id": "chat/m2#0", "text": new, "kind": "messages", "updated_at": "2026-11-03"},
        ],
        "trust": "chat/m2#0",
        "reason": "the newer message announces a change; the knowledge base is out of date",
    }
    asked = "- The nightly limit is $180 in most cities. [src:kb/travel#1]"
    lines = [asked, f"- {old} [src:kb/travel#0]"]
    # what the question asked keeps its place; the newer fact stands where the stale one was
    assert current_first(lines, [conflict]) == [  # type: ignore[list-item]
        asked,
        f"- {new} [src:chat/m2#0]",
        f"- (out of date) {old} [src:kb/travel#0]",
    ]
