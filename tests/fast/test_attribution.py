"""Whom a chat sentence is about, and when no message says a thing of the person asked."""

from __future__ import annotations

from seekgraph.nodes.reader.attribution import about, misattributed, without_name
from tests.factories import make_evidence

PEOPLE = {"Caroline", "Melanie"}


def by(author: str, text: str) -> tuple[str, object]:
    ev = make_evidence(f"chat/c/{author}#0", f"{author}: {text}", kind="messages")
    return f"{author}: {text}", ev


def whom(author: str, text: str) -> set[str]:
    sentence, ev = by(author, text)
    return about(sentence, ev, PEOPLE)  # type: ignore[arg-type]


def test_first_person_is_about_the_author_and_you_about_the_other() -> None:
    assert whom("Melanie", "I ran a charity race last Saturday.") == {"Melanie"}
    assert whom("Caroline", "Your kids are so sweet.") == {"Melanie"}
    assert whom("Caroline", "Melanie ran a race.") == {"Melanie"}


def test_a_reaction_or_a_greeting_speaks_to_the_other_person() -> None:
    assert whom("Caroline", "That charity race sounds great, Mel!") == {"Melanie"}  # "Mel"
    assert whom("Caroline", "Congrats on the new job!") == {"Melanie"}
    # "Hey Mel, I had to…" is still about the one who writes it
    assert whom("Caroline", "Hey Mel, I had to shut down my bank account.") == {"Caroline"}


def test_the_best_match_about_someone_else_means_no_message_says_it_of_the_person() -> None:
    said = [
        by("Melanie", "After the race I realized self-care is important."),
        by("Caroline", "I went to a support group."),
    ]
    note = misattributed("Caroline", said, [0.9, 0.3])  # type: ignore[arg-type]
    assert note is not None and note.startswith("No message found says this of Caroline")
    assert "Melanie's message" in note
    # when the person asked said something nearly as close, it is not claimed
    assert misattributed("Caroline", said, [0.9, 0.88]) is None  # type: ignore[arg-type]
    assert misattributed("Melanie", said, [0.9, 0.3]) is None  # type: ignore[arg-type]


def test_the_name_is_taken_out_of_the_question_for_content_matching() -> None:
    assert without_name("What did Caroline's mom realize?", "Caroline") == "What did mom realize?"


async def test_a_hypothetical_question_is_a_judgement_not_a_quote(embedder) -> None:
    from seekgraph.nodes.reader.attribution import wrong_person
    from seekgraph.providers.rerank import LocalReranker

    reranker = LocalReranker(embedder)
    said = [
        by("Melanie", "After my charity race I realized self-care is important.")[1],
        by("Caroline", "I like green tea in the morning.")[1],
    ]
    asked = "What did Caroline realize after the charity race?"
    assert await wrong_person(asked, said, reranker) is not None  # type: ignore[arg-type]
    hypothetical = "Would Caroline realize anything after a charity race?"
    assert await wrong_person(hypothetical, said, reranker) is None  # type: ignore[arg-type]
