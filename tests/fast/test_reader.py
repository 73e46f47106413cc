"""The reader's golden cases that need no graph: Markdown as people write it, passages shown
whole, and the LLM guard leaving right replies alone."""

from __future__ import annotations

from seekgraph.nodes.reader.extractive import EXTRACTIVE_HEADER, with_antecedent
from seekgraph.nodes.reader.guard import guard_reply
from seekgraph.nodes.reader.passages import (
    MAX_REPLY_CHARS,
    PASSAGES_HEADER,
    answer_reply,
    excerpt,
    passages_reply,
)
from seekgraph.providers.sentences import sentences
from seekgraph.sources.ingestion.chunking import HARD_CHUNK_CHARS, chunk_markdown
from seekgraph.sources.ingestion.markdown_text import first_heading, readable_markdown
from tests.factories import make_evidence

VERIFY = """# SSL

## Disabling verification

You can disable SSL verification completely, though it is not recommended.

To disable verification:

```python
>>> httpx.get("https://example.org", verify=False)
```

## Client certificates

Use `cert=` to send a client certificate.
"""

TIMEOUTS = """```python
# Using the top-level API:
httpx.get('http://example.com/api/v1/example', timeout=10.0)
```

HTTPX is careful to enforce timeouts everywhere by default.

The default behavior is to raise a `TimeoutException` after 5 seconds of network inactivity.
"""


def test_a_code_block_stays_with_the_text_that_introduces_it() -> None:
    chunks = chunk_markdown(VERIFY, "docs/ssl")
    holding = [c for c in chunks if "verify=False" in c["text"]]
    assert len(holding) == 1
    assert "To disable verification:" in holding[0]["text"]


def test_a_chunk_carries_the_path_of_sections_it_sits_in() -> None:
    chunks = chunk_markdown(VERIFY, "docs/ssl")
    assert [c["heading"] for c in chunks] == ["Disabling verification", "Client certificates"]
    nested = chunk_markdown("## Routing\n\nA.\n\n### Path parameters\n\nB.", "d")
    assert nested[-1]["heading"] == "Routing › Path parameters"


def test_a_title_is_never_a_comment_inside_code() -> None:
    assert first_heading(TIMEOUTS) is None
    assert first_heading("## Timeouts\n\n```\n# not me\n```") == "Timeouts"
    assert first_heading("Prose first.\n\n## Later") is None


def test_a_passage_is_shown_whole_with_its_code_and_its_likeliest_sentence_marked() -> None:
    chunk = chunk_markdown(VERIFY, "docs/ssl")[0]
    ev = make_evidence("docs/ssl#0", f"# {chunk['heading']}\n\n{chunk['text']}", title="SSL")
    text = excerpt(ev, "To disable verification:", 600)
    assert "**To disable verification:**" in text
    assert 'httpx.get("https://example.org", verify=False)' in text
    assert text.count("```") == 2  # the code block is never cut


def test_a_sentence_that_introduces_code_keeps_it_when_the_blocks_between_give_way() -> None:
    # requests' quickstart: the marked sentence opens the section, the code that answers
    # comes four blocks down; the room holds the sentence, the answer's lead and its code
    example = "```\n" + ">>> r = requests.get('http://github.com/')\n" * 3 + "```"
    page = "\n\n".join(
        [
            "By default Requests will perform location redirection for all verbs except HEAD.",
            "We can use the `history` property of the Response object to track redirection.",
            "For example, GitHub redirects all HTTP requests to HTTPS:",
            example,
            "If you're using GET, you can disable redirection handling with the "
            "`allow_redirects` parameter:",
            "```\n>>> r = requests.get('http://github.com/', allow_redirects=False)\n```",
            "If you're using HEAD, you can enable redirection as well.",
        ]
    )
    ev = make_evidence("docs/quickstart#27", page, title="Quickstart")
    text = excerpt(ev, "By default Requests will perform location redirection", 520, True)
    assert len(text) <= 520
    assert text.startswith("**By default Requests will perform location redirection")
    code = ">>> r = requests.get('http://github.com/', allow_redirects=False)"
    assert f"parameter:\n\n```\n{code}\n```" in text
    assert "HEAD.\n\n…\n\nIf you're using GET" in text
    assert "For example, GitHub" not in text  # what gave way, said by the "…"


def test_an_excerpt_never_ends_on_a_lead_in_whose_code_it_left_out() -> None:
    # Vite's getting started: a code group's tabs read as "npm:" and its command
    command = (
        "```bash\n# npm 7+, extra double-dash is needed:\n"
        + "$ npm create vite@latest my-vue-app -- --template vue\n" * 4
        + "```"
    )
    page = "\n\n".join(
        [
            "You can also directly specify the project name and the template you want to use "
            "via additional command line options.",
            "For example, to scaffold a Vite + Vue project, run:",
            "npm:",
            command,
            "Yarn:",
            "```bash\n$ yarn create vite my-vue-app --template vue\n```",
        ]
    )
    ev = make_evidence("docs/guide/index#5", page, title="Getting Started")
    marked = "You can also directly specify the project name"
    # no room for the command: "For example, … run:" and "npm:" say nothing asked ("the
    # project's name?") and are left out
    text = excerpt(ev, marked, 200, True, frozenset({"name"}))
    assert text.startswith(f"**{marked}**") and len(text) <= 200
    assert "npm:" not in text and "run:" not in text
    # one that names what was asked says something still: it stays ("…project, run:")
    asked = frozenset({"project", "scaffold"})
    text = excerpt(ev, marked, 200, True, asked)
    assert text.rstrip("…\n ").endswith("Vite + Vue project, run:") and "npm:" not in text
    # room for part of it: the tab's label and its command, what is between giving way
    text = excerpt(ev, marked, 300, True)
    assert "…\n\nnpm:\n\n```bash\n# npm 7+" in text
    # room for all: the lead-ins and the commands they introduce, together
    text = excerpt(ev, marked, 700, True)
    assert "run:\n\nnpm:\n\n```bash" in text and "Yarn:\n\n```bash" in text


def test_the_code_a_marked_sentence_introduces_is_never_the_part_that_gives_way() -> None:
    # Caddy's reverse-proxy quick-start: the marked sentence's own command is the answer; the
    # next sentence's command does not fit, so that sentence is left out, not the answer
    page = "\n\n".join(
        [
            "To start a plaintext HTTP proxy from port 2080 to port 9000 on your machine:",
            "```bash\ncaddy reverse-proxy --from :2080 --to :9000\n```",
            "Then try it:",
            "```bash\ncurl -v 127.0.0.1:2080 --header 'Accept: text/html' --compressed\n```",
            "The reverse-proxy command is intended for quick and easy reverse proxies.",
        ]
    )
    ev = make_evidence("caddy/quick-starts/reverse-proxy#1", page, title="Reverse proxy")
    text = excerpt(ev, "To start a plaintext HTTP proxy", 200, True)
    assert len(text) <= 200
    assert "on your machine:\n\n```bash\ncaddy reverse-proxy --from :2080 --to :9000\n```" in text
    assert "Then try it:" not in text  # a lead-in without its command is left out
    # Flask's routes: a paragraph that says more before its colon stays without its code
    page = "\n\n".join(
        [
            "Here for example is a definition for a URL that accepts an optional page:",
            "```python\n@app.route('/users/', defaults={'page': 1})\n```",
            "If a URL contains a default value, it will be redirected with a 308 redirect. "
            "Make sure the default route only handles `GET`:",
            "```python\n@app.route('/region/', defaults={'id': 1})\n" + "    pass\n" * 20 + "```",
        ]
    )
    ev = make_evidence("flask/api#20", page, title="API")
    text = excerpt(ev, "Here for example is a definition", 320, True)
    assert "defaults={'page': 1})\n```" in text and "with a 308 redirect." in text, text


def test_a_command_continued_over_lines_is_shown_whole_or_not_at_all() -> None:
    # a code block cut to its lines that say what was asked keeps a command's "\\" lines
    code = "\n".join(
        [
            "```bash",
            "docker compose cp caddy:/data/caddy/pki/authorities/local/root.crt /tmp/root.crt",
            "sudo security add-trusted-cert -d -r trustRoot \\",
            "  -k /Library/Keychains/System.keychain /tmp/root.crt",
            "certutil -addstore -f ROOT root.crt",
            "```",
        ]
    )
    page = "To trust the certificate on macOS:\n\n" + code
    ev = make_evidence("caddy/running#9", page, title="Keep Caddy Running")
    for room in range(150, 260, 10):
        text = excerpt(ev, "To trust the certificate on macOS", room, True)
        if "add-trusted-cert" in text:
            assert "System.keychain /tmp/root.crt" in text, (room, text)
    # a continued command longer than the room is cut by its lines, not emptied to "…"
    long = "```bash\ndocker run \\\n" + "".join(f"  -v /d{i}:/d{i} \\\n" for i in range(12))
    ev = make_evidence("caddy/docker#1", f"To run it:\n\n{long}  -p 443:443 caddy\n```", title="D")
    text = excerpt(ev, "To run it", 200, True, frozenset({"443"}))
    assert "-p 443:443 caddy\n```" in text, text


def test_a_passages_reply_cites_each_passage_and_stays_short() -> None:
    long = "A sentence about pools and limits that goes on. " * 60
    chosen = [
        (make_evidence(f"docs/p{i}#0", long, title=f"Page {i}"), "A sentence about pools")
        for i in range(3)
    ]
    reply = passages_reply(chosen)
    assert reply.startswith(PASSAGES_HEADER)
    assert len(reply) < MAX_REPLY_CHARS
    assert all(f"[src:docs/p{i}#0]" in reply for i in range(3))


PASSAGES = {
    "docs/timeouts#1": "Timeouts HTTPX is careful to enforce timeouts everywhere by default. The "
    "default behavior is to raise a `TimeoutException` after 5 seconds of network inactivity.",
    "docs/http2#0": "HTTP/2 Support To enable HTTP/2 support, install the optional extra with "
    "`pip install httpx[http2]` and then instantiate a client with `http2=True`: "
    "```python\nclient = httpx.Client(http2=True)\n```",
}
ALLOWED = "How long will it wait on a server that stops responding? How do I turn on HTTP/2?"
#: Replies a right model writes, each citing the right passage, in several styles.
RIGHT_REPLIES = {
    "short": "5 seconds [src:docs/timeouts#1].",
    "restating": "It raises a `TimeoutException` after 5 seconds of network inactivity, by "
    "default [src:docs/timeouts#1].",
    "list": "- Install `httpx[http2]` [src:docs/http2#0]\n- Create the client with "
    "`http2=True` [src:docs/http2#0]",
    "code": "Install the extra, then:\n\n```python\nclient = httpx.Client(http2=True)\n```\n\n"
    "[src:docs/http2#0]",
    "own words": "After five seconds with nothing coming back, the request gives up "
    "[src:docs/timeouts#1].",
}


def test_replies_known_to_be_right_pass_the_guard_unchanged() -> None:
    for style, reply in RIGHT_REPLIES.items():
        guarded = guard_reply(reply, ALLOWED, PASSAGES)
        assert not isinstance(guarded, str), (style, guarded)
        assert guarded.body == reply, style
        assert guarded.status == "answered" and guarded.changes == [], style


def test_a_sentence_with_an_invented_number_is_dropped_and_said() -> None:
    reply = (
        "The default is 5 seconds of inactivity [src:docs/timeouts#1]. "
        "You can retry up to 3 times [src:docs/timeouts#1]."
    )
    guarded = guard_reply(reply, ALLOWED, PASSAGES)
    assert not isinstance(guarded, str)
    assert "5 seconds" in guarded.body
    assert "retry up to 3 times" not in guarded.body.split("(Left out")[0]
    assert guarded.status == "partial"
    assert "Left out" in guarded.body and guarded.changes


def test_a_model_saying_the_sources_do_not_answer_stands() -> None:
    guarded = guard_reply("The sources do not say how to set a proxy.", ALLOWED, PASSAGES)
    assert not isinstance(guarded, str) and guarded.status == "not_found"


def test_an_empty_reply_or_only_citations_is_not_shown() -> None:
    assert guard_reply("", ALLOWED, PASSAGES) == "was empty"
    assert guard_reply("[src:docs/timeouts#1]", ALLOWED, PASSAGES) == "stated nothing but citations"


def test_a_code_block_no_cited_passage_holds_is_dropped_and_said() -> None:
    reply = (
        "Turn it on with `http2=True` [src:docs/http2#0].\n\n```python\n"
        "client = httpx.Client(http2=True, retries=5)\n```"
    )
    guarded = guard_reply(reply, ALLOWED, PASSAGES)
    assert not isinstance(guarded, str) and guarded.status == "partial"
    assert "retries=5" not in guarded.body.split("(Left out")[0]


def test_documentation_boilerplate_is_never_a_finding() -> None:
    from seekgraph.nodes.reader.tables import boilerplate

    directive = make_evidence(
        "docs/api#3", "# API\n\n::: httpx.AsyncClient\n    :docstring:\n::: httpx.Client"
    )
    contributing = make_evidence("docs/contributing#0", "Run the linter.", title="Contributing")
    prose = make_evidence("docs/timeouts#0", "The default timeout is 5 seconds.", title="Timeouts")
    assert boilerplate(directive, "Write a guide on timeouts")
    assert boilerplate(contributing, "Write a guide on timeouts")
    assert not boilerplate(contributing, "Summarise the contributing guide")  # asked for
    assert not boilerplate(prose, "Write a guide on timeouts")
    # pip's guide for its own developers (development/): its CI, its release process
    ci = make_evidence(
        "docs/development/ci#1",
        "Pip is tested on CPython 3.10 to 3.15.",
        title="Continuous Integration",
    )
    assert boilerplate(ci, "Write a guide on caching, configuration files and authentication")
    assert not boilerplate(ci, "How is pip's continuous integration set up?")  # its title asked
    handling = make_evidence(
        "docs/development/architecture/configuration-files#0",
        "pip's configuration is loaded in this order.",
        title="Configuration File Handling",
    )
    assert boilerplate(handling, "Write a guide on caching, configuration files and authentication")
    plugins = make_evidence("docs/dev/write#0", "A plugin is a module.", title="Write a plugin")
    assert not boilerplate(plugins, "Write a guide on writing PDM plugins")
    assert boilerplate(plugins, "Write a guide on locking dependencies")  # "write" frames it


def test_a_request_naming_three_parts_in_a_library_gets_three() -> None:
    from seekgraph.nodes.reader.request_parts import named_parts, part_questions

    request = "Write a guide on timeouts, retries and connection pooling in httpx"
    assert named_parts(request) == ["timeouts", "retries", "connection pooling"]
    assert [q["question"] for q in part_questions(request)][2] == (
        "Write a guide on connection pooling in httpx"
    )


def test_a_request_listing_its_parts_after_its_verb_gets_them() -> None:
    """pip's docs: "Compare A, B and C" and "Explain how X works and what to do when …"."""
    from seekgraph.nodes.reader.request_parts import named_parts, part_questions, subject_of

    compare = "Compare requirements files, constraints files and lock files in pip"
    assert named_parts(compare) == ["requirements files", "constraints files", "lock files"]
    assert subject_of(compare) == ""  # the verb is no subject
    explain = "Explain how pip's dependency resolver works and what to do when it fails"
    assert named_parts(explain) == [
        "how pip's dependency resolver works",
        "what to do when it fails",
    ]
    asked = part_questions(explain)
    assert [q["title"] for q in asked] == [
        "How pip's dependency resolver works",
        "What to do when it fails",
    ]
    assert "dependency resolver" in asked[1]["question"]  # "it" is the resolver
    support = (
        "Explain pip's support for installing from version control, hash-checking secure "
        "installs, and verifying GPG signatures of downloaded packages"
    )
    assert named_parts(support) == [
        "installing from version control",
        "hash-checking secure installs",
        "verifying GPG signatures of downloaded packages",
    ]
    # one question about two things is no list of parts
    assert named_parts("Explain how authentication and authorization work") == []


def test_an_overview_of_three_kinds_gets_three() -> None:
    from seekgraph.nodes.reader.request_parts import named_parts

    request = (
        "Write an overview of native histograms, classic histograms and summaries in "
        "Prometheus, and when to pick each."
    )
    assert named_parts(request) == ["native histograms", "classic histograms", "summaries"]
    assert named_parts("Write a summary of the meeting") == []  # one thing is no list


def test_a_list_of_clauses_names_one_part_per_clause() -> None:
    from seekgraph.nodes.reader.request_parts import named_parts

    request = (
        "Write a guide on protecting a Starlette app: plugging in an authentication backend "
        "and guarding views by scope, keeping users logged in with signed session cookies, "
        "and letting a separate front-end origin call the API (CORS)."
    )
    assert named_parts(request) == [
        "plugging in an authentication backend and guarding views by scope",
        "keeping users logged in with signed session cookies",
        "letting a separate front-end origin call the API (CORS)",
    ]


def test_a_list_of_clauses_with_lists_inside_names_one_part_per_clause() -> None:
    from seekgraph.nodes.reader.request_parts import named_parts, part_questions

    # a clause's own list ("such as A, B or C") is inside its part, and its "such as" opens
    # no list of the request's: the colon's does
    request = (
        "Write a guide on taking a web app to production: running it under a server such as "
        "Gunicorn, Waitress or uWSGI instead of the development one, putting a reverse proxy "
        "in front and trusting the headers it forwards, and hardening the app with security "
        "headers, cookie options and a real secret key."
    )
    questions = part_questions(request)
    assert [q["title"] for q in questions] == [
        "Running it under a server such as Gunicorn, Waitress or uWSGI instead of the "
        "development one",
        "Putting a reverse proxy in front and trusting the headers it forwards",
        "Hardening the app with security headers, cookie options and a real secret key",
    ]
    # each part's question is that part's, under the request's own words before the list
    assert questions[1]["question"] == (
        "Write a guide on putting a reverse proxy in front and trusting the headers it forwards"
    )
    # the list's last item, after its "and", is a part of its own, a clause or not
    named = named_parts(
        "Write a guide on environments: choosing interpreters with `use`, creating "
        "virtualenvs, and the alternative __pypackages__ mode with its editor setup."
    )
    assert named == [
        "choosing interpreters with `use`",
        "creating virtualenvs",
        "the alternative __pypackages__ mode with its editor setup",
    ]


def test_a_list_of_clauses_keeps_each_clause_whole() -> None:
    from seekgraph.nodes.reader.request_parts import named_parts

    request = (
        "Write a guide on shipping a desktop app: what the updater, the installer and the crash "
        "reporter do by default, signing the binaries for every platform from the build "
        "server, and choosing which features and settings the users may change."
    )
    assert named_parts(request) == [
        "what the updater, the installer and the crash reporter do by default",
        "signing the binaries for every platform from the build server",
        "choosing which features and settings the users may change",
    ]
    # a part may be a long phrase: fourteen words name one part, not a paragraph
    request = (
        "Write a guide on a kiosk app: a full-screen window on the second monitor with its own "
        "menu and no title bar, starting at boot, and recovering from crashes."
    )
    assert len(named_parts(request)) == 3


def test_a_bare_value_cited_is_an_answer() -> None:
    guarded = guard_reply("5 [src:docs/timeouts#1].", ALLOWED, PASSAGES)
    assert not isinstance(guarded, str) and guarded.status == "answered"
    assert guarded.body == "5 [src:docs/timeouts#1]."


def test_a_short_passage_is_shown_whole_beside_a_long_one() -> None:
    # the answering line of a short passage ("Code in a tap can run with your user's
    # privileges.") is its last; a long page of code ranked above it must not squeeze it out
    code = "```sh\n" + "\n".join(f"brew tap user/repo{i}" for i in range(60)) + "\n```"
    long = make_evidence("docs/taps#1", f"# Taps\n\nTap a repository:\n\n{code}", title="Taps")
    short = make_evidence(
        "docs/taps#0",
        "# Taps\n\nThe `brew tap` command adds repositories. Code in a tap can run with your "
        "user's privileges. Read Tap Trust first.",
        title="Taps",
    )
    reply = passages_reply([(long, "Tap a repository:"), (short, "The `brew tap` command")])
    assert "Code in a tap can run with your user's privileges." in reply
    assert len(reply) < MAX_REPLY_CHARS


OPTIONS = "### `reporter.start(options)`\n\n* `options` Object\n" + "".join(
    f"  * `option{i}` boolean (optional) - If true, the reporter does thing number {i}.\n"
    f"    It is a long description that wraps. Default is `false`.\n"
    for i in range(30)
)


def test_a_long_options_list_keeps_one_option_per_line() -> None:
    # an API reference's parameter list longer than a chunk: cut between its items, never
    # run into one line at its sentence ends (the option asked about was then out of reach)
    chunks = chunk_markdown(readable_markdown(OPTIONS), "docs/reporter")
    assert len(chunks) > 1
    # each piece says whose items it lists
    assert all(c["text"].startswith("- `options` Object\n  - `option") for c in chunks)
    lines = [line for c in chunks for line in c["text"].splitlines()]
    for i in range(30):
        assert (
            f"  - `option{i}` boolean (optional) - If true, the reporter does thing number {i}."
            f" It is a long description that wraps. Default is `false`." in lines
        )
    code = "```python\n" + "\n".join(f"settings.value_{i} = {i}  # the {i}th" for i in range(90))
    pieces = chunk_markdown(f"## Settings\n\n{code}\n```", "docs/settings")
    assert len(pieces) > 1
    for piece in pieces:  # each piece a fenced block of whole lines
        assert piece["text"].startswith("```python\n") and piece["text"].endswith("\n```")
    shown = [line for p in pieces for line in p["text"].splitlines()[1:-1]]
    assert shown == code.splitlines()[1:]
    rows = "\n".join(f"| `flag{i}` | what flag number {i} turns on |" for i in range(60))
    table = chunk_markdown(readable_markdown(f"| Flag | Effect |\n|---|---|\n{rows}"), "d")
    assert len(table) > 1
    assert all(t["text"].startswith("Flag | Effect\n") for t in table)  # rows under the header


def test_no_chunk_passes_the_bound_and_no_line_is_lost() -> None:
    wide = " | ".join(f"Column heading {i}" for i in range(30))  # a header too wide to repeat
    yaml = "".join(f"  - key{i}: value number {i}\n" for i in range(60))
    cases = {
        "wide table": f"| {wide} |\n|{'---|' * 30}\n" + "| v |\n" * 40,
        "fence line only": "```" + "x" * 2000 + "\n```",
        "text on the heading's block": "## H\n" + "word " * 1000,
        "many short blocks": "a\n\n" * 1000,
        "code a list item holds": f"- Configure it:\n  ```yaml\n{yaml}  ```\n- next item",
    }
    for name, text in cases.items():
        chunks = chunk_markdown(text, "d")
        assert chunks and all(len(c["text"]) <= HARD_CHUNK_CHARS for c in chunks), name
    pieces = chunk_markdown(cases["code a list item holds"], "d")
    assert len(pieces) > 1
    for piece in pieces:  # each piece: under its item, its code fenced
        lines = piece["text"].splitlines()
        assert lines[:2] == ["- Configure it:", "  ```yaml"]
        assert sum(line.strip().startswith("```") for line in lines) == 2
    keys = [line for p in pieces for line in p["text"].splitlines() if "key" in line]
    assert keys == yaml.rstrip("\n").splitlines()  # each once, in order


def test_a_reply_shows_the_last_passage_when_only_its_marks_overflow() -> None:
    # a passage that fits the room left only without its bold and "…" marks was left out
    # whole; it is quoted a block shorter instead
    blocks = ["Block one says a thing. " * 8, "Block two says more. " * 9, "Tail. " * 12]
    page = make_evidence("docs/rejected#0", "\n\n".join(blocks), title="Rejected")
    for budget in range(120, 700, 3):
        text = excerpt(page, "Block one says a thing.", budget, True)
        assert len(text) <= budget or not text
    first = make_evidence("docs/a#0", "Alpha beta gamma delta. " * 17, title="A")
    second = make_evidence("docs/b#0", "Epsilon zeta eta theta. " * 21, title="B")
    reply = passages_reply(
        [(first, "Alpha beta"), (second, "Epsilon zeta"), (page, "Block one says a thing.")]
    )
    assert "[src:docs/rejected#0]" in reply
    assert len(reply) < MAX_REPLY_CHARS


def test_a_changelog_comes_after_the_page_about_how_things_are() -> None:
    from seekgraph.nodes.reader.offline import ranked_passages
    from seekgraph.nodes.reader.tables import asks_history

    note = make_evidence(
        "docs/release-notes#9",
        "- Allow `StaticFiles` to follow symlinks #1337.",
        title="Release notes",
        scores={"rerank": 0.7},
    )
    page = make_evidence(
        "docs/staticfiles#1",
        "`follow_symlink` - whether symbolic links are followed. Defaults to `False`.",
        title="StaticFiles",
        scores={"rerank": 0.6},
    )
    asked = "Will StaticFiles serve a file that is really a symlink, by default?"
    assert [ev["source_id"] for _, ev in ranked_passages([], [note, page], (), asked)] == [
        "docs/staticfiles#1",
        "docs/release-notes#9",
    ]
    since = "Since which version can StaticFiles follow symlinks?"  # asks about history
    assert ranked_passages([], [note, page], (), since)[0][1]["source_id"] == note["source_id"]
    # ... and the release note comes first even when the search ranks it below the pages
    weaker = {**note, "scores": {"rerank": 0.3}, "score": 0.3}
    other = make_evidence(
        "docs/staticfiles#2",
        "`html` - run in HTML mode.",
        title="StaticFiles",
        scores={"rerank": 0.5},
    )
    pages = [page, other, *[{**other, "source_id": f"docs/staticfiles#{i}"} for i in (3, 4)]]
    shown = [ev["source_id"] for _, ev in ranked_passages([], [*pages, weaker], (), since)]
    # ... among the passages shown, last, even when the search ranks it below them; never
    # their anchor
    assert shown[:3] == ["docs/staticfiles#1", "docs/staticfiles#2", note["source_id"]]
    assert ranked_passages([], [*pages, weaker], (), asked)[-1][1] is weaker
    # a release or a version named for what it is, or the verb, asks no history: the
    # changelog stays after the pages however the search ranks it
    assert asks_history("Has the default port of StaticFiles changed?")
    assert asks_history("Since 0.47, does StaticFiles follow symlinks?")
    for plain in [
        "Will StaticFiles give up after 1.5 seconds?",
        "How do I make StaticFiles release a file handle it holds?",
        "Can StaticFiles serve an older release of my files instead of the newest?",
        "Does StaticFiles follow symlinks behind a proxy that only speaks HTTP/1.1?",
    ]:
        assert ranked_passages([], [note, page], (), plain)[0][1] is page, plain
    # the same in Chinese: a page titled 更新日志 (changelog) comes after, unless the question
    # asks 从哪个版本 (since which version)
    log = {**note, "title": "更新日志", "doc_id": "docs/gengxin"}
    asked_zh = "StaticFiles 默认会跟随符号链接吗？"
    assert ranked_passages([], [log, page], (), asked_zh)[0][1] is page
    since_zh = "StaticFiles 从哪个版本开始跟随符号链接？"
    assert ranked_passages([], [log, page], (), since_zh)[0][1] is log


def test_code_a_passage_introduces_is_cut_to_the_lines_that_answer_not_dropped() -> None:
    # a long config block whose answering line sits deep inside: the sentence introducing it
    # without the code is half an answer, so the block is cut to the lines that say most of
    # what was asked, its fences kept and "…" where lines were left out
    filler = "\n".join(
        f"  - job_name: 'job{i}'\n    static_configs: [{{targets: [h{i}]}}]" for i in range(12)
    )
    swarm = "  - job_name: 'swarm'\n    dockerswarm_sd_configs:\n      - role: tasks"
    config = f"```yaml\nscrape_configs:\n{filler}\n{swarm}\n{filler}\n```"
    long = make_evidence(
        "docs/swarm#7", f"# Containers\n\nA minimal file to monitor it:\n\n{config}", title="Swarm"
    )
    others = [
        make_evidence(f"docs/other#{i}", f"# Other\n\n{'Some related prose. ' * 25}", title="Other")
        for i in range(2)
    ]
    asked = "Which dockerswarm_sd_configs role gives one target per running container?"
    chosen = [
        (long, "A minimal file to monitor it:"),
        *[(ev, "Some related prose.") for ev in others],
    ]
    reply = passages_reply(chosen, question=asked)
    assert "role: tasks" in reply
    shown = reply.split("[src:docs/swarm#7]")[1].split("[src:")[0]
    assert shown.count("```") == 2 and "…" in shown
    assert all(f"[src:{ev['source_id']}]" in reply for ev in others)
    assert len(reply) < MAX_REPLY_CHARS


def test_a_cut_configuration_keeps_the_keys_and_the_table_its_lines_sit_under() -> None:
    # "port: 9090" under "…" says where it goes no more than a table row without its header:
    # a configuration cut to the lines that answer keeps the keys (YAML) and the table (TOML)
    # those lines sit under
    members = "\n".join(f'  "member{i}" = "{i}.0"' for i in range(80))
    toml = (
        f'```toml\n[project]\nname = "foobar"\nversion = "0.1.0"\n\n[tool.poetry.dependencies]'
        f'\n{members}\n\n[tool.poetry]\npackages = [{{ include = "foobar", from = "src" }}]\n'
        'include = [{ path = "tests", format = "sdist" }]\n```'
    )
    yaml = (
        "```yaml\nglobal:\n  scrape_interval: 15s\nscrape_configs:\n"
        + "\n".join(
            f"  - job_name: job{i}\n    static_configs:\n      - targets: [h{i}]" for i in range(40)
        )
        + "\n  - job_name: secure\n    scheme: https\n    tls_config:\n      ca_file: ca.pem\n```"
    )
    for block, asked, line, above in (
        (toml, "How do I get my tests folder into the sdist format?", 'format = "sdist"',
         ["[tool.poetry]"]),
        (yaml, "Which setting names the CA file, ca.pem, for a scrape over https?",
         "ca_file: ca.pem", ["scrape_configs:", "  - job_name: secure", "    tls_config:"]),
    ):  # fmt: skip
        ev = make_evidence("docs/config#3", f"# Config\n\nA full example:\n\n{block}", title="C")
        reply = passages_reply([(ev, "A full example:")], question=asked)
        shown = reply.split("```")[1]
        assert line in shown and "…" in shown, reply
        lines = shown.splitlines()
        at = [lines.index(x) for x in above]
        assert at == sorted(at) and at[-1] < lines.index(next(x for x in lines if line in x))


def _options_page(before_description: bool) -> str:
    """An API reference section: a method, its long options list, its one-line description."""
    options = [
        f"  - `option{i}` string (optional) - Sets the dialog's behaviour number {i} when the "
        f"window shows it. Default is `value{i}`."
        for i in range(14)
    ]
    listing = "\n".join(
        [
            "- `options` Object",
            "  - `buttons` string[] (optional) - Texts for the dialog's buttons, shown in order.",
            *options[:7],
            "  - `dismissIndex` Integer (optional) - The button reported when the user presses "
            'Escape. By default the first button labelled "Close" is used.',
            *options[7:],
        ]
    )
    description = "Shows a dialog and waits for the user to press one of its buttons."
    parts = [listing, description] if before_description else [description, listing]
    return "# Dialogs › Methods › `dialog.ask(options)`\n\n" + "\n\n".join(parts)


def test_a_long_options_list_shows_the_option_asked_about_not_the_marked_ones_neighbours() -> None:
    # an API reference keeps one answer per option, far apart in one list: a run of lines
    # around the reader's likeliest line showed the options next to it, not the one asked
    # about. The list is cut to its items that hold the question's rarest terms, each under
    # the item it is nested in, "…" where items were left out.
    asked = "Which button is reported when the user hits Escape and I set no dismissIndex?"
    others = [
        make_evidence(f"docs/other#{i}", f"# Other\n\n{'Some related prose. ' * 25}", title="Other")
        for i in range(2)
    ]
    for before in (False, True):
        page = make_evidence("docs/dialog#16", _options_page(before), title="Dialogs")
        marked = "Sets the dialog's behaviour number 2 when the window shows it."
        for sentence in (
            marked,
            "Shows a dialog and waits for the user to press one of its buttons.",
        ):
            reply = passages_reply(
                [(page, sentence), *[(ev, "Some related prose.") for ev in others]],
                question=asked,
            )
            shown = reply.split("[src:docs/dialog#16]")[1].split("[src:")[0]
            assert 'labelled "Close" is used' in shown, (before, sentence)
            assert "- `options` Object" in shown  # the item it is nested in
            assert "…" in shown and "`option13`" not in shown
            assert all(f"[src:{ev['source_id']}]" in reply for ev in others)
            assert len(reply) < MAX_REPLY_CHARS


def test_a_long_table_is_cut_to_the_rows_that_answer_under_its_header() -> None:
    # a parameter table longer than the passage's room: the sentence introducing it alone
    # says nothing, and a row without its header is a row of values
    rows = "\n".join(
        f"option{i} | Optional. Setting number {i}. Defaults to {i}." for i in range(30)
    )
    table = (
        f"Name | Description\n--- | ---\n{rows}\nheight | Optional. Height. Defaults to 200 pixels."
    )
    long = make_evidence(
        "docs/consoles#9",
        f"# Graph Library\n\nParameters to the graph library:\n\n{table}",
        title="Consoles",
    )
    others = [
        make_evidence(f"docs/other#{i}", f"# Other\n\n{'Some related prose. ' * 25}", title="Other")
        for i in range(2)
    ]
    chosen = [
        (long, "Parameters to the graph library:"),
        *[(ev, "Some related prose.") for ev in others],
    ]
    reply = passages_reply(chosen, question="How tall is a graph if I set no height?")
    shown = reply.split("[src:docs/consoles#9]")[1].split("[src:")[0]
    assert "Defaults to 200 pixels" in shown
    assert "Name | Description\n--- | ---\n…" in shown  # the header and its rule, then the cut
    assert "option0 |" not in shown
    assert len(reply) < MAX_REPLY_CHARS


def test_a_passage_whose_one_line_answers_comes_before_a_closer_page_of_generalities() -> None:
    # a bi-encoder reads a passage as one point: a block of setup code with one answering
    # line sits far from the question; its closest line does not
    import asyncio

    from seekgraph.nodes.reader.closeness import closeness, passage_order
    from seekgraph.providers.embeddings import load_embedder

    pools = make_evidence(
        "docs/pools#0",
        "# Connection pools\n\nConnection pools keep sockets open between requests. The size "
        "of a pool is limited by `max_connections`. Idle keep-alive connections expire after "
        "5 seconds. Pools are shared by every request a client sends.",
        title="Resource limits",
        scores={"rerank": 0.62},
    )
    transports = make_evidence(
        "docs/transports#2",
        "# Transports\n\nA transport can be configured at construction:\n\n```python\n"
        "import httpx\n\nlimits = httpx.Limits(max_connections=10)\n"
        "transport = httpx.HTTPTransport(retries=3)  # connection attempts that fail are "
        "retried\nclient = httpx.Client(transport=transport, limits=limits)\n```",
        title="Transports",
        scores={"rerank": 0.55},
    )
    timeouts = make_evidence(
        "docs/timeouts#0",
        "# Timeouts\n\nHTTPX enforces timeouts everywhere by default.",
        title="Timeouts",
        scores={"rerank": 0.5},
    )
    pool = [pools, transports, timeouts]
    asked = "How can I have connection attempts that failed tried again automatically?"
    close = asyncio.run(closeness(load_embedder("minilm"), asked, pool))
    assert [ev["source_id"] for ev in passage_order(pool, close)][0] == "docs/transports#2"
    # without the lines' closeness, the search's relevance alone decides
    assert passage_order(pool, {})[0] is pools
    # a chat message is one remark, judged by its conversation: its lines are not read
    said = [{**ev, "kind": "messages"} for ev in pool]
    assert asyncio.run(closeness(load_embedder("minilm"), asked, said)) == {}


def test_each_named_part_is_asked_on_its_own() -> None:
    # "…: the events of their life, their work, interests…" once asked "the events of
    # interests", which found nothing: a part's question names that part, not another's words
    from seekgraph.nodes.reader.request_parts import part_questions

    request = (
        "Write a report on John: the events of their life, their work, interests, plans and "
        "the people close to them, with dates where the conversation gives them."
    )
    asked = {q["title"]: q["question"] for q in part_questions(request)}
    assert asked["Interests"] == "Write a report on John interests"
    assert all("events" not in q for t, q in asked.items() if t != "Events of their life")


def test_parts_that_say_whose_keep_their_subject() -> None:
    # "her dog" is Priya's: without the name the question asks about anyone's dog
    from seekgraph.nodes.reader.request_parts import part_questions

    asked = part_questions("Write a report on Priya: her dog, her new job, and her plans")
    assert [q["question"] for q in asked] == [
        "Write a report on Priya her dog",
        "Write a report on Priya her new job",
        "Write a report on Priya her plans",
    ]
    # a list's name is still not each part's subject
    asked = part_questions("What should a new hire know about IT access: VPN, SSO, and expenses?")
    assert asked[0]["question"] == "What should a new hire know about VPN"


INSTALL = """# Installation

Install the tool with its standalone installer:

=== "macOS and Linux"

    Use `curl` to download the script and run it with `sh`:

    ```console
    $ curl -LsSf https://example.org/install.sh | sh
    ```

=== "Windows"

    Use `irm` to download the script and run it with `iex`:

    ```pwsh-session
    PS> powershell -c "irm https://example.org/install.ps1 | iex"
    ```

!!! tip "Pinning a version"

    Put the version in the URL: `https://example.org/0.4.0/install.sh`.

/// warning | Behind a proxy

Set `HTTPS_PROXY` before you run the installer.

///

:::caution
Do not pipe the script to `sudo sh`.
:::
"""


def test_tabs_admonitions_and_blocks_are_read_as_the_prose_they_render_as() -> None:
    chunks = chunk_markdown(readable_markdown(INSTALL), "docs/install")  # as ingest reads it
    text = "\n\n".join(c["text"] for c in chunks)
    # a tab's body is its label's prose and its own code block, not one code block of both
    windows = next(c for c in chunks if "install.ps1" in c["text"])
    ev = make_evidence("docs/install#0", windows["text"], title="Installation")
    shown = excerpt(ev, "Windows: Use `irm` to download the script and run it with `iex`:", 600)
    assert "**Windows: Use `irm` to download the script and run it with `iex`:**" in shown
    assert "```pwsh-session\nPS> powershell" in shown
    assert "Pinning a version: Put the version in the URL" in text
    assert "Behind a proxy: Set `HTTPS_PROXY` before you run the installer." in text
    assert "Caution: Do not pipe the script to `sudo sh`." in text
    assert "///" not in text and "!!!" not in text and '=== "' not in text and ":::" not in text
    # an API reference the site generates there (mkdocstrings) is not on the page: no words
    autodoc = '??? abstract "API Reference"\n    ::: pkg.mod.Client\n        options:\n'
    assert readable_markdown(autodoc + "          show_root_heading: true\n\nNext.") == "Next."


def test_attribute_lists_snippets_and_icons_are_markup_never_words() -> None:
    page = (
        "# Settings {#settings}\n\n"
        "### [`cache-dir`](#cache-dir) {: #cache-dir }\n\n"
        "Path to the cache directory.\n\n"
        "[Get started](install.md){ .md-button .md-button--primary } now.\n\n"
        "- one\n- two\n{: .annotate }\n\n"
        '| Query | Meaning |\n|---|---|\n| `rate(cpu{mode="system"}[1m])` | CPU time |\n\n'
        "Write `{: #id }` after a heading; {{ .Value }} is a template.\n"
    )
    text = readable_markdown(page)
    assert first_heading(page) == "Settings"
    assert "### `cache-dir`\n\nPath to the cache directory." in text  # its section's name
    assert "Get started now." in text and "- two\n" in text
    # braces that are words stay: code, a template
    assert '`rate(cpu{mode="system"}[1m])` | CPU time' in text
    assert "Write `{: #id }` after a heading; {{ .Value }} is a template." in text
    assert "{:" not in text.replace("`{: #id }`", "") and ".md-button" not in text
    # an included file (pymdownx.snippets) is not on the page, nor is an icon a word
    page = (
        '--8<-- "includes/header.md"\n\nDone :material-check: here.\n\n'
        '```python\n--8<-- "examples/run.py"\nprint(1)\n```\n\n--8<--\na.md\n--8<--\n\nEnd.'
    )
    assert readable_markdown(page) == "Done here.\n\n```python\nprint(1)\n```\n\nEnd."
    # where Python-Markdown reads no attribute list, braces are words; a lone mark is text
    prose = "Query up{job=prometheus} or {:.2f}\n\nIntro.\n\n--8<--\n\nThe rest."
    assert readable_markdown(prose) == (
        "Query up{job=prometheus} or {:.2f}\n\nIntro.\n\n--8<--\n\nThe rest."
    )


MYST_PAGE = """(options)=

# Options

```{eval-rst}
.. currentmodule:: click
```

Options are added with the {func}`option` decorator, unlike {ref}`positional arguments
<arguments>`.

```{contents}
:depth: 1
:local:
```

(multiple-options)=

## Multiple Options

```{versionadded} 4.0
```

```{note}
:class: tip

Set `multiple=True` to pass the flag several times.
```

```{code-block} python
@click.option('--message', '-m', multiple=True)
```

```{eval-rst}
.. click:example::

    @click.command()
    def commit(message):
        click.echo(message)

Run it:

.. click:run::

    invoke(commit, args=['-m', 'a'])

.. caution::

   Writing to :attr:`~click.Context.params` skips the ``type`` conversion.

.. tabs::

    .. group-tab:: Bash

        Add this to ``~/.bashrc``:

        .. code-block:: bash

            eval "$(_FOO_COMPLETE=bash_source foo)"

.. autoclass:: Option
   :members:

A literal block follows::

    $ foo --help
```

```{admonition} Note on files
:class: note

   Use `click.File` for files.
```

```{toctree}
:hidden:

quickstart
```
"""


def test_myst_directives_labels_and_roles_are_read_as_the_site_renders_them() -> None:
    # Sphinx's Markdown (MyST), as Click's documentation is written
    assert first_heading(MYST_PAGE) == "Options"  # not the file name: a label is an anchor
    text = readable_markdown(MYST_PAGE)
    assert text.startswith("# Options\n\nOptions are added with the `option` decorator, unlike ")
    assert "unlike positional arguments." in text  # a cross-reference reads as its text
    assert "## Multiple Options\n\nAdded in version 4.0.\n\nNote: Set" in text
    assert "Note: Set `multiple=True` to pass the flag several times." in text
    assert "```python\n@click.option('--message', '-m', multiple=True)\n```" in text
    assert "```python\n@click.command()\ndef commit(message):" in text and "Run it:" in text
    # reStructuredText inside {eval-rst}: its call-outs, tabs, code and literal blocks
    assert "Caution: Writing to `click.Context.params` skips the `type` conversion." in text
    assert "Bash: Add this to `~/.bashrc`:\n\n```bash\neval" in text
    assert "A literal block follows:\n\n```\n$ foo --help\n```" in text
    assert "autoclass" not in text and ":members:" not in text  # autodoc fills it on the site
    assert "Note on files: Use `click.File` for files." in text
    # what the site fills from elsewhere, and the markup, are not words of the page
    for markup in ("currentmodule", "{", ":depth:", ":class:", "quickstart", "(options)=", ".. "):
        assert markup not in text, markup
    # a directive in a code block is code
    code = "```markdown\n```{note}\nText.\n```\n````"
    assert "```{note}" in readable_markdown(code.replace("```markdown", "````markdown"))
    # a tab is its label, then its body; a Quarto or R Markdown chunk is code in its language
    tabs = "````{tab-set}\n```{tab-item} Linux\n:sync: linux\n\nRun `a`.\n```\n````"
    assert readable_markdown(tabs) == "Linux: Run `a`."
    chunk = "```{python}\n#| echo: false\nprint(1)\n```"
    assert readable_markdown(chunk) == "```python\n#| echo: false\nprint(1)\n```"


def test_myst_markup_at_its_edges_loses_no_text_and_turns_no_prose_into_code() -> None:
    # a code directive holding a fence keeps the page after it as prose
    code = "````{code-block} markdown\n```python\nx = 1\n```\n````\n\nAfter.\n\n## Next"
    assert readable_markdown(code).endswith("```\n\nAfter.\n\n## Next")
    # an rST title's underline (~~~) is no code fence
    rst = "```{eval-rst}\nSub section\n~~~~~~~~~~~\n\nBody.\n```\n\n## Later\n\nLater."
    assert readable_markdown(rst) == "Sub section\n\nBody.\n\n## Later\n\nLater."
    # a call-out inside a list item stays in its item
    listed = "- item\n\n  ```{versionadded} 2.0\n  Details.\n  ```\n- item2\n\nAfter."
    assert readable_markdown(listed) == ("- item Added in version 2.0: Details.\n- item2\n\nAfter.")
    roles = "See {pep}`538`, {class}`Commands <Command>` and :meth:`~a.B.c`."
    assert readable_markdown(roles) == "See PEP 538, `Commands` and `a.B.c`."
    described = (
        "```{envvar} CLICK_HOME\n\nWhere it lives.\n```\n\n```{figure} a.png\n\nCaption.\n```"
    )
    assert readable_markdown(described) == "`CLICK_HOME`: Where it lives.\n\nCaption."
    comments = "```{eval-rst}\n.. _args:\n\n.. a comment\n\nSee `the docs <https://x.org>`_.\n```"
    assert readable_markdown(comments) == "See the docs."
    # what looks like a directive in an indented code block, or inline code, is not one
    indented = "Example:\n\n    ```{note}\n    Text.\n    ```\n\nEnd."
    assert "```{note}" in readable_markdown(indented)
    inline = "```{a}``` is a set.\n\nNext.\n\n```python\nx=1\n```"
    assert readable_markdown(inline) == "`{a}` is a set.\n\nNext.\n\n```python\nx=1\n```"
    # directives nested past any page's depth are read as text, not recursed into
    assert readable_markdown("```{note}\n" * 3000 + "deep")


def test_version_metadata_that_does_not_parse_or_fit_loses_nothing_else() -> None:
    for body in ("changes: true", "added: 2020-13-45", "[" * 2000, "- a\n- b", "{"):
        page = f"# Files\n\n<!-- YAML\n{body}\n-->\n\nReads a file."
        assert readable_markdown(page) == "# Files\n\nReads a file.", body
    page = "<!-- YAML\nadded: v1.2.0\nchanges:\n  - version: v2.0.0\n    description:\n-->"
    assert (
        readable_markdown(page)
        == "History:\n\nVersion | Changes\nv2.0.0 | \nv1.2.0 | Added in: v1.2.0"
    )


def test_a_quoted_lead_in_shows_its_own_code_and_the_answer_stays_short() -> None:
    text = (
        "## Reading\n\nRead a file and wait for it. Example:\n\n```js\nreadFileSync('a');\n```"
        "\n\nOr pass a callback. Example:\n\n```js\nreadFile('a', done);\n```"
    )
    ev = make_evidence("api/fs#0", text, title="fs")
    unit = next(u for u in sentences(text) if "readFile('a', done)" in u)
    assert unit.startswith("Example:\n```js")  # the sentence keeps the code it introduces
    shown = excerpt(ev, unit, 120)
    assert "**Example:**\n\n```js\nreadFile('a', done);" in shown  # that one, not the first
    # an answering lead-in with a long list and paragraph stays inside the reply's bound
    intro = "Options change how the client behaves. " * 20 + "The options are:"
    items = "\n".join(f"- `opt{i}`: sets thing {i} of the client to its value" for i in range(18))
    ev = make_evidence("api/client#0", f"## Client\n\n{intro}\n\n{items}", title="Client")
    lead = next(u for u in sentences(f"{intro}\n\n{items}") if u.startswith("The options"))
    reply = answer_reply([(ev, lead)], EXTRACTIVE_HEADER, [])
    assert len(reply) <= MAX_REPLY_CHARS and "**The options are:**" in reply
    assert "- `opt0`" in reply


def test_a_cut_before_a_code_block_leaves_the_fence_on_its_own_line() -> None:
    # "… ```yaml" is no fence: Markdown reads the code after it as prose
    intro = "Some setup the page explains at length before the example. " * 12
    code = "```yaml\nscrape_configs:\n  - job_name: 'node'\n```"
    page = make_evidence(
        "docs/setup#3",
        f"# Setup\n\n{intro.strip()}\n\n{code}\n\nThe job above scrapes every node.",
        title="Setup",
    )
    text = excerpt(page, "The job above scrapes every node.", 200, strict=True)
    assert "job_name: 'node'" in text and text.startswith("…")
    assert all(line.startswith("```") for line in text.splitlines() if "```" in line)


def test_a_list_cut_to_its_items_keeps_an_items_code_block_whole() -> None:
    # "- job_name:" inside an item's YAML is code, not an item: a fence left open would turn
    # the rest of the reply into code
    options = [
        f"- `opt{i}` option number {i} for the exporter, described at length." for i in range(12)
    ]
    block = "\n".join(
        [
            *options[:6],
            "- Configure the scrape job:",
            "  ```yaml",
            "  - job_name: 'swarm'",
            "    role: tasks",
            "  - job_name: 'other'",
            "  ```",
            *options[6:],
        ]
    )
    page = make_evidence("docs/swarm#2", f"# Swarm\n\n{block}", title="Swarm")
    text = excerpt(page, "", 300, strict=True, wanted=frozenset({"role", "task"}))
    assert "role: tasks" in text and text.count("```") == 2
    assert "`opt11`" not in text and "…" in text


def test_an_item_longer_than_the_room_is_cut_to_its_sentences_around_the_marked_one() -> None:
    values = ", ".join(f"`value{i}`" for i in range(80))
    item = (
        f"- `role` string (optional) - Can be {values}. Defines the item's action. When set, "
        "the `click` handler is ignored. See roles."
    )
    page = make_evidence(
        "docs/menu-item#1", f"# MenuItem\n\n{item}\n{item.replace('role', 'kind')}", title="M"
    )
    marked = "When set, the `click` handler is ignored."
    text = excerpt(page, marked, 200, strict=True, wanted=frozenset({"click", "role"}))
    assert "the `click` handler is ignored" in text and len(text) <= 200


def test_the_likeliest_item_is_cut_to_fit_rather_than_dropped_for_its_short_neighbours() -> None:
    values = ", ".join(f"`value{i}`" for i in range(150))  # one sentence, longer than the room
    item = f"- `role` string (optional) - Can be {values}"
    short = "- `id` string (optional) - Unique within a menu.\n- `type` string - normal."
    page = make_evidence("docs/menu-item#1", f"# MenuItem\n\n{item}\n{short}", title="M")
    for budget in (120, 300, 600):
        text = excerpt(page, f"Can be {values}", budget, strict=True, wanted=frozenset({"role"}))
        assert text.startswith("- `role` string") and len(text) <= budget, budget
    reply = answer_reply([(page, f"Can be {values}")], EXTRACTIVE_HEADER, [])
    assert "`role`" in reply and len(reply) < MAX_REPLY_CHARS


def test_a_numbered_list_cut_to_its_items_keeps_their_numbers() -> None:
    # a "…" line under item 2 would join it and make step 8 the list's second step
    steps = [f"{i}. Step {i}: {'do the routine thing with care ' * 3}" for i in range(1, 11)]
    steps[7] = "8. Step 8: restart the server after the xyzzy flag is set."
    page = make_evidence("docs/steps#1", "# Upgrade\n\n" + "\n".join(steps), title="Upgrade")
    text = excerpt(page, "", 300, strict=True, wanted=frozenset({"xyzzi", "restart"}))
    assert "\n\n…\n\n8. Step 8" in text or text.startswith("…\n\n8. Step 8")


def test_a_ranked_list_cut_to_what_was_asked_keeps_its_first_items() -> None:
    # "from highest to lowest": without item 1, item 2 reads as the highest (a new user on
    # Poetry's docs was shown "…" then "2. The local poetry.toml" as the answer)
    page = make_evidence(
        "docs/configuration#7",
        "# Configuration sources\n\nWhen a setting is set in multiple places, Poetry applies the"
        " following precedence (from highest to lowest):\n\n"
        "1. Environment variables (for example, `POETRY_VIRTUALENVS_CREATE`)\n"
        "2. The local `poetry.toml` file (created with `poetry config --local`)\n"
        "3. The global `config.toml` file\n4. The setting's default value\n\n"
        "For repository credentials, Poetry may also read from `auth.toml` and the keyring.",
        title="Configuration",
    )
    marked = "When a setting is set in multiple places, Poetry applies the following precedence"
    wanted = frozenset({"poetry.toml", "config.toml", "global", "local"})
    text = excerpt(page, marked, 260, strict=True, wanted=wanted)  # the list does not fit
    assert "1. Environment variables" in text
    assert text.index("1. Environment") < text.index("2. The local") < text.index("3. The")
    assert "…\n\n…" not in text  # the list's own "…" is the excerpt's last


def test_short_numbered_steps_keep_their_code_in_place() -> None:
    """Starlight's install steps: the command is the answer, not the sentence before it."""
    steps = (
        "1. Install the plugin:\n```sh\nnpm install @astrojs/starlight-docsearch\n```\n"
        "2. Add it to `plugins` in `astro.config.mjs`:\n```js\nplugins: [starlightDocSearch()]\n```"
    )
    units = sentences(steps)
    assert units[0].startswith("1. Install the plugin:\n```sh\nnpm install")
    assert "2. Add it to `plugins`" in units[0] and "starlightDocSearch()" in units[0]
    # long steps are read as before: the steps, then their code
    long_code = "\n".join(f"line_{n} = {n}" for n in range(120))
    units = sentences(f"1. Write this:\n```python\n{long_code}\n```\n2. Run it.")
    assert units[0] == "1. Write this:\n2. Run it." and units[1].startswith("```python")


def test_a_quote_that_points_back_keeps_the_sentence_it_points_to() -> None:
    # Prettier's rationale: quoted alone, "In such cases, …" says nothing of which cases
    ev = make_evidence(
        "docs/rationale#15",
        "# Rationale\n\nSome calls take a single function as their last argument. "
        "In such cases, wrapping the arguments to new lines doesn't help much.\n\n"
        "```js\nfoo(() => {})\n```\n\nThis will cause an error.",
    )
    units = sentences(ev["snippet"])
    assert with_antecedent(units[1], ev) == (
        "Some calls take a single function as their last argument. "
        "In such cases, wrapping the arguments to new lines doesn't help much."
    )
    # not when the sentence before is quoted already, or is code, or for a plain sentence
    assert with_antecedent(units[1], ev, {units[0]}) == units[1]
    assert with_antecedent(units[3], ev) == units[3]
    assert with_antecedent(units[0], ev) == units[0]
    zh = make_evidence("docs/zh#1", "# 说明\n\n超时默认为五秒。这会导致长请求失败。")
    zh_units = sentences(zh["snippet"])
    assert with_antecedent(zh_units[1], zh) == "超时默认为五秒。这会导致长请求失败。"


def test_a_passage_keeps_room_for_the_code_a_later_one_introduces() -> None:
    # Ruff's formatter page: the second passage's marked sentence introduces a tab of code
    # ("pyproject.toml:" and its block); a long first passage used to leave it "…"
    lead = (
        "For example, to configure the formatter to use single quotes and tab indentation, "
        "add the following to your configuration file:"
    )
    config = (
        '```toml\n[tool.ruff]\nline-length = 100\n\n[tool.ruff.format]\nquote-style = "single"\n'
        'indent-style = "tab"\ndocstring-code-format = true\n```'
    )
    second = make_evidence(
        "docs/formatter#5",
        f"# The Ruff Formatter › Configuration\n\nRuff reads its settings from a file.\n\n"
        f"{lead}\n\npyproject.toml:\n\n{config}\n\nruff.toml:\n\n{config}",
    )
    # the lead-in with its tab's label and code, even when the room is short
    alone = excerpt(second, lead, len(lead))
    assert "pyproject.toml:\n\n```toml\n[tool.ruff]" in alone and 'quote-style = "single"' in alone
    lines = "\n".join(f"f'{{x{i}=}}'  # quote style" for i in range(40))
    long_code = f"```python\n{lines}\n```"
    first = make_evidence(
        "docs/formatter#25",
        "# The Ruff Formatter › Quotes\n\nWhen an f-string holds the configured quote style:"
        f"\n\n{long_code}\n\nWhen a self-documenting f-string holds it:\n\n{long_code}",
    )
    question = "I'd like single quotes instead of double ones. What do I add to my settings?"
    reply = passages_reply(
        [(first, "When an f-string holds the configured quote style:"), (second, lead)],
        question=question,
    )
    assert len(reply) <= MAX_REPLY_CHARS
    assert 'quote-style = "single"' in reply  # the code the second passage's sentence introduces


def test_a_lead_in_above_a_code_title_stays_in_the_chunk_of_its_code() -> None:
    # Prettier's sharing page: "Example `package.json`:", the block's title, then the code
    # (```json title="package.json"``` reads as "package.json:" and the code)
    prose = "A minimal package should have at least two files. " * 16
    code = '```json\n{\n  "name": "@username/prettier-config",\n  "version": "1.0.0"\n}\n```'
    page = f"# Sharing\n\n{prose}\n\nExample `package.json`:\n\npackage.json:\n\n{code}\n"
    chunks = chunk_markdown(page, "docs/sharing")
    holding = [c["text"] for c in chunks if "@username/prettier-config" in c["text"]]
    assert len(chunks) == 2 and holding
    assert holding[0].startswith("Example `package.json`:\n\npackage.json:\n\n```json")
