"""When quotes answer a question, and when the honest answer is "not found"."""

from __future__ import annotations

from seekgraph.nodes.reader.answerable import not_answered, required_words
from seekgraph.nodes.reader.needs import question_parts
from seekgraph.nodes.reader.question_kind import default_asked, extra_units, kind_bonus, kind_of
from seekgraph.nodes.reader.variants import extractive_variants
from tests.factories import make_evidence, make_state

ORJSON = make_evidence("docs/orjson#5", title="orjson")
CHAT = make_evidence("chat/general/m1#0", kind="messages", title="#general")


def test_the_words_that_only_frame_a_question_are_not_required() -> None:
    words = required_words("What is the difference between dotenv_values and load_dotenv?")
    assert words == ["dotenv_values", "load_dotenv"]
    # what the question sets aside need not be in the answer
    assert "file" not in required_words(
        "How can I load configuration from a stream instead of a file?"
    )


def test_a_contraction_is_read_as_the_words_it_stands_for() -> None:
    """Contractions ("don't", "what's", "isn't") are their stopwords; a possessive, its noun."""
    for question in [
        "What's the timeout if I don't set one, and why isn't it shorter?",
        "What\u2019s the timeout if I don\u2019t set one, and why isn\u2019t it shorter?",
    ]:
        assert required_words(question) == ["timeout", "shorter"], question
    # a refusal's "what was asked" never names a contraction: the quote holds every term
    quoted = [("The default timeout is 5 seconds; set a shorter one per request.", ORJSON)]
    gaps, _ = not_answered("What's the timeout if I don't set one? Can't it be shorter?",
                           quoted, [0.7], {})  # fmt: skip
    assert not any("'" in gap or "\u2019" in gap for gap in gaps), gaps
    assert required_words("Where is brew's cache?") == ["brew", "cache"]


def test_a_quote_that_misses_what_the_question_is_about_does_not_answer() -> None:
    quoted = [("orjson.dumps returns bytes; json.dumps returns a str.", ORJSON)]
    gaps, nothing = not_answered("How do I write YAML with orjson?", quoted, [0.75], {})
    assert "YAML" in gaps and nothing


def test_a_strong_paraphrase_answers_without_the_exact_word() -> None:
    quoted = [("Set PYTHON_DOTENV_DISABLED=1 to disable load_dotenv().", ORJSON)]
    question = "How do I stop load_dotenv from loading files?"
    assert not_answered(question, quoted, [0.85], {}) == ([], False)
    assert not_answered(question, quoted, [0.6], {})[0] == ["stop", "files"]


def test_an_amount_needs_a_number() -> None:
    quoted = [("Keep-Alive and connection pooling are supported.", ORJSON)]
    gaps, _ = not_answered("What is the maximum number of pooled connections?", quoted, [0.9], {})
    assert gaps == ["an amount"]
    counted = [("At most 100 connections are pooled.", ORJSON)]
    assert not_answered(
        "What is the maximum number of pooled connections?", counted, [0.9], {}
    ) == (
        [],
        False,
    )


def test_every_typed_need_needs_its_type_even_when_every_word_is_quoted() -> None:
    # "Request a VPN profile in the IT portal" names every word of "when" and gives no date
    undated = [("Request a VPN profile in the IT portal.", ORJSON)]
    question = "By when must I have requested my VPN profile?"
    assert not_answered(question, undated, [0.9], {}) == (["a date or time"], True)
    dated = [("Request a VPN profile in the IT portal by 30 November.", ORJSON)]
    assert not_answered(question, dated, [0.9], {}) == ([], False)
    who = "Who approves a VPN profile?"
    nobody = [("A VPN profile is approved in the IT portal.", ORJSON)]
    assert not_answered(who, nobody, [0.9], {})[0] == []  # "IT" is a team: a role
    assert not_answered(who, [("A VPN profile is approved within a day.", ORJSON)], [0.9], {})[
        0
    ] == ["a person or role"]


def test_a_two_part_question_keeps_the_part_that_is_answered() -> None:
    question = "How do I install the VPN client, and what is the Zanzibar parking rule?"
    assert len(question_parts(question)) == 2
    quoted = [("Install the VPN client from Self Service.", ORJSON)]
    gaps, nothing = not_answered(question, quoted, [0.9], {})
    assert gaps == ["Zanzibar", "parking", "rule"] and not nothing


def test_since_when_asks_for_a_date_it_names_no_subject() -> None:
    # Qwen 1.5B's right answer "Since version 1.20, the CLI prints JSON…" fell back for
    # saying "since", taken for a word of the question's subject
    assert required_words("Since when does the charset-normalizer CLI print JSON?") == [
        "charset-normalizer", "CLI", "print", "JSON",
    ]  # fmt: skip
    assert "since" in required_words("What changed since the last release?")


def test_chat_messages_are_judged_by_names_and_type_not_by_words() -> None:
    # a message says things in its own words: "retest" need not be in it; a date must
    booked = [("sam: booked for 1 December", CHAT)]
    assert not_answered("When is the retest?", booked, [0.4], {}) == ([], False)
    chatter = [("sam: sounds good", CHAT)]
    assert not_answered("When is the retest?", chatter, [0.4], {}) == (["a date or time"], True)
    # nor a name it does not say
    other = [("sam: the Brightline retest is booked for 1 December", CHAT)]
    gaps, nothing = not_answered("When is the Kestrel retest?", other, [0.4], {})
    assert nothing and gaps == ["a date or time (Kestrel)"]
    # unless the conversation around it says it: a reply names less than its thread
    reply = {**CHAT, "around_terms": ["kestrel", "retest"]}
    in_thread = [("sam: booked for 1 December", reply)]
    assert not_answered("When is the Kestrel retest?", in_thread, [0.4], {}) == ([], False)


def test_the_kind_of_question() -> None:
    assert kind_of("How do I set up SSO for a new application?") == "how"
    assert kind_of("What is the default timeout?") == "value"
    assert kind_of("What is Okta?") == "definition"
    assert kind_of("Who approved the budget?") == "other"


def test_a_default_asked_for_in_other_words_is_a_value_searched_as_a_default() -> None:
    """A page says "Defaults to 200 pixels"; the asker says "if I don't set it"."""
    asked = [
        "How tall is the chart if I don't set it?",
        "If I build a window without giving it any dimensions, how big does it come up?",
        "Unless I change it, how long does the session cookie stay valid?",
        "Out of the box, how many files will the form parser accept?",
        "Which close code is used if I raise the exception without passing a code?",
    ]
    for question in asked:
        assert kind_of(question) == "value", question
        assert default_asked(question) == "default", question
        first = extractive_variants(make_state(question))
        assert any(q.endswith(" default") for q in first), (question, first)
        assert question in first  # the question itself is still searched as asked
    assert default_asked("What\u2019s the timeout if I don\u2019t set it?") == "default"
    assert default_asked("What value does max_connections have if it isn't set?") == "default"
    assert default_asked("如果不设置超时，请求会等多久？") == "默认"
    assert default_asked("为什么事件不传播？") is None
    # not asked that way, or already said: nothing added
    for question in [
        "How do I release a lock?",
        "What is the default timeout if I don't set it?",
        "Why won't it take the data unless I flip a switch?",
        "Why does the build fail if I don't set JAVA_HOME?",  # why, not what
        "Can I rename a channel without changing its link?",  # whether one may
        "How do I rotate keys without changing the client config?",  # steps
    ]:
        assert default_asked(question) is None, question
        assert not any(q.endswith(" default") for q in extractive_variants(make_state(question)))


def test_asked_for_a_default_the_unit_that_says_the_default_ranks_first() -> None:
    # Prettier's Print Width: the table row says the default; the prose holds other numbers
    question = "If I never configure anything, how long will it let my lines get?"
    row = "Default: `80`; CLI Override: `--print-width <int>`; API Override: `printWidth: <int>`"
    prose = "In code styleguides, maximum line length rules are often set to 100 or 120."
    assert kind_bonus(question, row) > kind_bonus(question, prose) > 0
    # a value asked without a default: any value counts alike
    plain = "How long can a line be?"
    assert kind_bonus(plain, row) == kind_bonus(plain, prose) > 0


def test_a_steps_section_is_read_as_numbered_steps_for_a_how_question() -> None:
    ev = make_evidence(
        "kb/sso#1", snippet="# Steps\n\nRequest the admin role.\n\nCreate the app. Test it."
    )
    [(steps, _)] = extra_units("How do I set up SSO?", [ev])
    assert steps == "1. Request the admin role.\n2. Create the app.\n3. Test it."
    assert kind_bonus("How do I set up SSO?", steps) > 0
    assert extra_units("Who set up SSO?", [ev]) == []


def test_a_version_number_is_not_an_amount() -> None:
    quoted = [("Redis 8.10 adds the HIMPORT command for hashes in a cluster slot.", ORJSON)]
    gaps, _ = not_answered("How many hash slots does a Redis cluster have?", quoted, [0.9], {})
    assert gaps == ["an amount"]


def test_a_question_that_asks_for_a_version_is_answered_by_one() -> None:
    httpx = make_evidence("docs/httpx#2", title="httpx")
    quoted = [("HTTPX requires Python 3.9+.", httpx)]
    # "oldest" names the type asked (an amount), not what a quote must repeat
    assert not_answered("What is the oldest Python for HTTPX?", quoted, [0.7], {}) == (
        [],
        False,
    )
    # a version still answers no count
    gaps, nothing = not_answered("How many workers does HTTPX start?", quoted, [0.7], {})
    assert gaps and nothing


def test_a_short_word_is_no_form_of_a_long_one_it_opens() -> None:
    from seekgraph.nodes.reader.answerable import mentions

    assert mentions("highest", {"high"})
    assert mentions("musicians", {"music"})
    # "Pass override=True" says nothing about password-protecting a file
    assert not mentions("password-protect", {"pass", "override"})


def test_an_overview_question_requires_its_topic_not_who_asks() -> None:
    question = "What does a new Fernhill employee need to know about expenses?"
    assert required_words(question) == ["expenses"]
    # not an overview: every word naming the subject is required
    assert required_words("Who approves a larger discount?") == ["approves", "larger", "discount"]
