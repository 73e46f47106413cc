"""Ingestion of real file formats into the embedded index, and ``seekgraph index``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from seekgraph.graph.context import Context, FilteringKnobs
from seekgraph.nodes.plumbing.services import Services
from seekgraph.providers.embeddings import E5Embedder, Embedder
from seekgraph.providers.rerank import LocalReranker
from seekgraph.sources.base import User
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.indexes.index_source import EmbeddedSource
from seekgraph.sources.ingestion.ingest import read_folder
from seekgraph.sources.ingestion.workspace import sync_source
from seekgraph.sources.registry import SourceRegistry
from tests.conftest import run_graph
from tests.factories import write_chat_export

BOB = User("bob", frozenset({"everyone"}))


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF with one line of text (objects and xref offsets computed here)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "team"
    root.mkdir()
    (root / "guide.md").write_text(
        "---\ntitle: Badge guide\nupdated_at: 2026-05-01\nversion: 2\n---\n# Badges\n\n"
        "Lost badges are replaced at reception within one day.\n"
    )
    (root / "page.html").write_text(
        "<html><head><title>Parking rules</title><meta name='updated_at' content='2026-03-03'>"
        "</head><body><nav>menu</nav><h1>Parking</h1><p>Visitors park on level minus two."
        "</p><script>x=1</script></body></html>"
    )
    (root / "notes.txt").write_text("The printer on floor 3 needs a PIN code from IT.\n")
    (root / "handbook.pdf").write_bytes(minimal_pdf("Expense claims are due within 30 days"))
    (root / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    return root


def test_each_format_is_read_and_bad_files_are_reported_by_path_and_line(folder: Path) -> None:
    read = read_folder(folder, "team", "docs", ["group:everyone"])
    titles = {d.title: d for d in read.documents}
    assert {"Badge guide", "Parking rules", "notes", "handbook"} <= set(titles)
    assert titles["Badge guide"].version == "2"
    assert titles["Parking rules"].updated_at == "2026-03-03"
    assert "menu" not in titles["Parking rules"].text and "x=1" not in titles["Parking rules"].text
    assert "Expense claims are due within 30 days" in titles["handbook"].text
    assert titles["handbook"].chunks[0]["heading"] == "page 1"
    problems = "\n".join(read.problems)
    assert re.search(
        re.escape(str(folder / "broken.md")) + r":\d+: front matter is not valid YAML", problems
    )
    assert f"{folder / 'broken.pdf'}: not a readable PDF" in problems
    assert len(read.problems) == 2


def test_chat_exports_and_transcripts(tmp_path: Path) -> None:
    chats = tmp_path / "chat"
    chats.mkdir()
    lines = [
        {
            "id": "1",
            "channel": "ops",
            "author": "kim",
            "ts": "2026-11-01T10:00:00Z",
            "text": "Deploys freeze on Fridays.",
            "thread": "t1",
        },
        "this line is not json",
        {"id": "2", "channel": "ops", "author": "lee", "text": "no timestamp here"},
    ]
    (chats / "ops.jsonl").write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines)
    )
    read = read_folder(chats, "chat", "messages", [], channels={"ops": ["group:eng"]})
    [msg] = read.documents
    assert msg.acl == ["group:eng"] and "(thread t1)" in msg.title
    assert any(p.startswith(f"{chats / 'ops.jsonl'}:2: not valid JSON") for p in read.problems)
    assert any(p.startswith(f"{chats / 'ops.jsonl'}:3: line lacks 'ts'") for p in read.problems)

    meetings = tmp_path / "meetings"
    meetings.mkdir()
    (meetings / "standup.vtt").write_text(
        "WEBVTT\n\n00:00:01.000 --> 00:00:04.000\n<v Alice>We ship the planner on Monday.\n\n"
        "00:02:00.000 --> 00:02:03.000\n<v Bob>Then the retro is on Tuesday.\n"
    )
    (meetings / "review.srt").write_text(
        "1\n00:00:01,000 --> 00:00:03,000\nCarol: Budget approved for Q1.\n"
    )
    (meetings / "bad.srt").write_text("1\nnot a timestamp\nhello\n")
    read = read_folder(meetings, "meetings", "notes", [])
    docs = {d.title: d for d in read.documents}
    assert docs["standup"].acl == ["user:alice", "user:bob"]  # attendees are the ACL
    assert [c["heading"] for c in docs["standup"].chunks] == ["at 00:00:01", "at 00:02:00"]
    assert docs["review"].acl == ["user:carol"]
    assert any("bad.srt" in p and "not a valid transcript" in p for p in read.problems)


def test_reindexing_touches_only_what_changed_and_removes_deleted_files(
    folder: Path, tmp_path: Path, embedder: Embedder
) -> None:
    index = EmbeddedIndex(tmp_path / "idx.sqlite", embedder)
    first = sync_source(index, folder, "team", "docs", ["group:everyone"])
    assert first.indexed == 4 and len(first.problems) == 2
    (folder / "notes.txt").write_text("The printer on floor 3 now needs a badge tap.\n")
    (folder / "page.html").unlink()
    second = sync_source(index, folder, "team", "docs", ["group:everyone"])
    assert (second.indexed, second.unchanged, second.removed) == (1, 2, 1)
    assert index.count("team")[0] == 3


async def test_a_chinese_question_retrieves_the_chinese_document(
    tmp_path: Path, e5: E5Embedder
) -> None:
    root = tmp_path / "zh"
    root.mkdir()
    (root / "vpn.md").write_text(
        "# 远程访问\n\n公司的VPN网关地址是 vpn2.example，使用WireGuard客户端连接。\n"
    )
    (root / "food.md").write_text("# 食堂\n\n食堂周五下午关闭，咖啡在三楼。\n")
    index = EmbeddedIndex(tmp_path / "zh.sqlite", e5)
    sync_source(index, root, "zh", "kb", ["group:everyone"])
    hits = await EmbeddedSource(index, "zh", "kb").search("如何连接公司的VPN网关？", BOB, 2)
    assert hits[0]["doc_id"] == "zh/vpn"
    lexical = index.search("zh", "网关", BOB, 2)  # a word inside a run of Chinese text
    assert lexical and index.chunk_hits(lexical, "网关", 3)[0]["doc_id"] == "zh/vpn"


def _chat_index(
    tmp_path: Path, embedder: Embedder, messages: list[tuple[str, str, str]]
) -> Services:
    chat = write_chat_export(
        tmp_path / "chat",
        "ops",
        [(i, a, f"2026-05-0{n}T09:00", t) for n, (i, a, t) in enumerate(messages, start=1)],
    )
    index = EmbeddedIndex(tmp_path / "chat.sqlite", embedder)
    sync_source(index, chat, "chat", "messages", ["group:everyone"])
    registry = SourceRegistry([EmbeddedSource(index, "chat", "messages")], users=[BOB])
    return Services(registry=registry, embedder=embedder, reranker=LocalReranker(embedder))


async def test_a_short_reply_is_found_through_the_messages_around_it(
    tmp_path: Path, embedder: Embedder
) -> None:
    """ "Yes — renewed Monday, valid until 31 March" repeats none of the question's words."""
    messages = [
        ("m1", "ana", "Has anyone renewed the Harbor Street garage parking permit?"),
        ("m2", "ben", "Yes, renewed it on Monday, valid until 31 March."),
        ("m3", "ana", "Thanks! Lunch is at noon today."),
        ("m4", "cy", "The garage on Harbor Street closes for cleaning on Sunday."),
        ("m5", "cy", "Parking on the street is free after six."),
        ("m6", "dee", "Who has the permit form for the new street festival?"),
    ]
    services = _chat_index(tmp_path, embedder, messages)
    question = "Until when is the Harbor Street garage parking permit valid?"
    alone = await run_graph(
        services,
        question,
        Context(user="bob", filtering=FilteringKnobs(context_weight=0.0), max_rounds=1),
    )
    judged = await run_graph(services, question, Context(user="bob", max_rounds=1))

    def score(run: Any) -> float:
        """The reply's rerank score (0 when the filter dropped it)."""
        replies = [e for e in run.output["evidence"] if e["doc_id"] == "chat/ops/m2"]
        assert all("context" not in e for e in replies)  # judged with, not stored in state
        return max((float(e["scores"]["rerank"]) for e in replies), default=0.0)

    assert score(judged) > score(alone)
    assert "31 March" in judged.output["answer"]
    assert "chat/ops/m2" in {c["doc_id"] for c in judged.output["citations"]}


async def test_a_question_about_one_person_is_not_answered_with_another_persons_words(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Melanie ran the charity race; asked what Caroline realised after it, say nobody said."""
    services = _chat_index(
        tmp_path,
        embedder,
        [
            ("m1", "Caroline", "Hey Mel! How was your weekend?"),
            ("m2", "Melanie", "I ran a charity race for mental health on Saturday."),
            ("m3", "Melanie", "After the charity race I realized self-care is really important."),
            ("m4", "Caroline", "I went to an LGBTQ support group yesterday, it was powerful."),
            ("m5", "Caroline", "I'm thinking about counseling as a career now."),
        ],
    )
    swapped = await run_graph(
        services, "What did Caroline realize after her charity race?", Context(user="bob")
    )
    asked_right = await run_graph(
        services, "What did Melanie realize after her charity race?", Context(user="bob")
    )
    assert "No message found says this of Caroline" in swapped.output["answer"]
    assert any("Caroline" in u for u in swapped.output["unanswered"])
    # The right person's question is answered from her own message, without the warning.
    assert "self-care" in asked_right.output["answer"]
    assert "No message found says this of" not in asked_right.output["answer"]
    assert "chat/ops/m3" in {c["doc_id"] for c in asked_right.output["citations"]}


def test_html_is_read_as_the_text_it_renders_as_in_a_page_or_inside_markdown(
    tmp_path: Path,
) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    # a generated CLI reference: Markdown headings around HTML definition lists
    (root / "cli.md").write_text(
        "# CLI\n\n## tool run\n\n<h3>Options</h3>\n\n"
        '<dl><dt id="run--frozen"><a href="#run--frozen"><code>--frozen</code></a></dt>'
        "<dd><p>Run without updating the lockfile.</p>\n"
        "<p>May also be set with the <code>TOOL_FROZEN</code> environment variable.</p></dd>"
        "<dt><code>--quiet</code></dt><dd><p>Print less.</p></dd></dl>\n"
    )
    (root / "limits.html").write_text(
        "<html><head><title>Limits</title></head><body><div>Uploads are capped per file."
        "<ul><li><p>Images: <code>20 MB</code></p></li><li><p>Videos: 2 GB</p></li></ul>"
        "<table><tr><th>Plan</th><th>Seats</th></tr><tr><td>Team</td><td>25</td></tr></table>"
        "</div></body></html>"
    )
    docs = {d.title: d for d in read_folder(root, "docs", "docs", ["group:everyone"]).documents}
    cli = docs["CLI"]
    frozen = next(c for c in cli.chunks if "--frozen" in c["text"])
    assert (
        "`--frozen`: Run without updating the lockfile. May also be set with the `TOOL_FROZEN`"
        " environment variable." in frozen["text"]
    )
    assert frozen["heading"] == "tool run › Options"
    assert "<dl>" not in cli.text and "<code>" not in cli.text
    limits = docs["Limits"].text
    assert "Uploads are capped per file.\n\n- Images: `20 MB`\n- Videos: 2 GB" in limits
    assert "Plan | Seats\nTeam | 25" in limits
    assert limits.count("Videos: 2 GB") == 1  # a paragraph inside a list item is read once


RST_PAGE = """\
:orphan:

.. _config:

======================
Configuration Handling
======================

.. |key| replace:: ``SECRET_KEY``

Applications need configuration. Set |key|_ before the first request.

.. contents::
   :local:

Debug Mode
----------

To enable debug mode, use the ``--debug`` option::

    $ flask --app hello run --debug

.. note::

   The debugger allows executing arbitrary code.

Quoted from the design notes:

    A block quote: its words are prose, not code.

``FLASK_DEBUG``
    Turns debug mode on, as the option does.

Converters
~~~~~~~~~~

=========== =======================================
``string``  accepts any text without a slash
``int``     accepts positive integers, and is
            the one to use for ids
=========== =======================================

+-------------+---------------+
| Setting     | Default       |
+=============+===============+
| ``timeout`` | 5 seconds,    |
|             | per read      |
+-------------+---------------+

#. First step, see :ref:`the tutorial <tutorial>`.
#. Then :func:`~flask.Flask.run` it (see :doc:`/cli`).

>>> app.config["DEBUG"]
False

----

Deployment
----------

.. autoclass:: flask.Flask
   :members:

Served by ``gunicorn``, with :data:`.g` per request.

.. warning:: The private key *must* be unencrypted.
   Encrypted keys are refused, see the `TLS
   guide <https://example.org/tls>`_ and Kerberos_. Release v\\ |version|, ``name_``.

.. code-block:: python
    :caption: ``wsgi.py``

    app = create_app()
"""


def test_a_restructuredtext_page_is_read_as_its_sphinx_site_shows_it(tmp_path) -> None:
    # a Sphinx project's pages are .rst: read as the site renders them, not skipped
    (tmp_path / "config.rst").write_text(RST_PAGE)
    read = read_folder(tmp_path, "docs", "docs", ["group:everyone"])
    assert not read.unsupported and not read.problems
    page = read.documents[0]
    assert page.title == "Configuration Handling"  # the overlined title, not the file name
    text = page.text
    # section titles are headings, a level per adornment style in the order first used
    assert "## Debug Mode" in text and "### Converters" in text and "## Deployment" in text
    # a literal block is code, kept with the sentence that introduces it
    assert "use the `--debug` option:\n\n```\n$ flask --app hello run --debug\n```" in text
    debug = next(c for c in page.chunks if "--debug" in c["text"])
    assert "$ flask --app hello run --debug" in debug["text"]
    assert debug["heading"].endswith("Debug Mode")
    assert "Note: The debugger allows executing arbitrary code." in text
    assert "A block quote: its words are prose, not code." in text
    assert "```\nA block quote" not in text
    assert "`FLASK_DEBUG`\n\nTurns debug mode on, as the option does." in text  # a definition
    # a simple table is a table, its continued cells joined; a substitution its text
    assert "`int` | accepts positive integers, and is the one to use for ids" in text
    assert "Setting | Default\n`timeout` | 5 seconds, per read" in text  # a grid table too
    assert "Set `SECRET_KEY` before the first request." in text
    # numbered items, roles and a doctest as the site shows them
    assert "1. First step, see the tutorial.\n2. Then `flask.Flask.run` it (see cli)." in text
    assert '```pycon\n>>> app.config["DEBUG"]\nFalse\n```' in text
    # what the site fills from elsewhere, and the markup, are not words of the page
    for markup in (":orphan:", "_config", "contents", ":local:", "autoclass", "|key|", "----"):
        assert markup not in text, markup
    # a call-out's first line is its text; a link over a line break, a reference, Sphinx's
    # own substitution and an escaped space read as the site shows them; a literal is as is
    assert (
        "Warning: The private key must be unencrypted. Encrypted keys are refused, see the TLS"
        " guide and Kerberos. Release v, `name_`." in text
    )
    assert "## Deployment\n\nServed by `gunicorn`, with `g` per request.\n\nWarning:" in text
    # a code block's caption leads it
    assert text.endswith("`wsgi.py`:\n\n```python\napp = create_app()\n```")


def test_a_docs_folder_is_read_without_its_build_output_templates_or_tools(tmp_path) -> None:
    # a Sphinx project as it sits after `make html`: its pages, and every page again as HTML
    (tmp_path / "index.rst").write_text("Guide\n=====\n\nSet ``DEBUG`` to see errors.\n")
    for name, text in {
        "_build/html/index.html": "<html><title>Guide</title><p>Set DEBUG.</p></html>",
        "_templates/sidebar.html": "<h3>{{ _('Useful Links') }}</h3>",
        ".git/description": "Unnamed repository",
        "node_modules/pkg/README.md": "# pkg\n\nA dependency.",
        ".DS_Store": "binary",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    read = read_folder(tmp_path, "docs", "docs", ["group:everyone"])
    assert [d.title for d in read.documents] == ["Guide"]  # each page once, as written
    assert read.passed == [".git", "_build", "_templates", "node_modules"]
    assert read.unsupported == [] and read.problems == []


def test_a_plain_text_file_is_shown_as_written_not_read_as_markdown(tmp_path) -> None:
    # a requirements file beside the docs: its comments are no headings, its pins no prose
    (tmp_path / "requirements.txt").write_text(
        "# Runtime dependencies\nhttpx[socks]>=0.27\nrich==13.7.1  # pretty output\n\n"
        "# tests only\npytest>=8\n"
    )
    (tmp_path / "notes.txt").write_text(
        "Release notes for the\nbuild: this paragraph is wrapped at the width people use in"
        " plain text,\nso its lines are long, and a *star* or a # sign is meant as written.\n\n"
        "Contact:\nJane Doe\n12 Main St\n"
    )
    read = read_folder(tmp_path, "docs", "docs", ["group:everyone"])
    pages = {d.title: d for d in read.documents}
    assert set(pages) == {"requirements", "notes"}  # the file's name: a comment is no title
    reqs = pages["requirements"]
    assert all(not c["heading"] for c in reqs.chunks)
    assert (
        "```text\n# Runtime dependencies\nhttpx[socks]>=0.27\nrich==13.7.1  # pretty" in reqs.text
    )
    notes = pages["notes"].text
    assert notes.startswith(
        "Release notes for the build: this paragraph is wrapped at the width people use in plain"
        " text, so its lines are long, and a *star* or a # sign is meant as written."
    )
    assert "```text\nContact:\nJane Doe\n12 Main St\n```" in notes  # lines kept as lines


HUGO_PAGE = """---
title: "Dependency specification"
type: docs
menu:
  docs:
    weight: 20
---

# Dependency specification

See the [Introduction]({{< relref "docs" >}} "Introduction") first.

{{% note %}}
Only main dependencies can be declared in the `project` section.
{{% /note %}}

TABS

{{< tab tabID="git-project" >}}
```toml
dependencies = ["requests @ git+https://github.com/requests/requests.git"]
```
{{< /tab >}}

{{< tab tabID="git-poetry" >}}
```toml
requests = { git = "https://github.com/requests/requests.git" }
```

{{% warning %}}
The `git` key needs Git installed.
{{% /warning %}}


{{< /tab >}}
{{< /tabs >}}

{{< steps >}}
{{< step >}}
**Install pipx**

    pipx is a tool.
{{< /step >}}
{{< /steps >}}

```text
{{< relref "kept-in-code" >}}
```
""".replace(
    "TABS",
    '{{< tabs tabTotal="2" tabID1="git-project" tabID2="git-poetry" tabName1="[project]" '
    'tabName2="[tool.poetry]">}}',
)


def test_a_hugo_page_is_read_as_its_site_shows_it(tmp_path) -> None:
    # Poetry's docs are Hugo pages: shortcodes are the theme's markup, never words
    (tmp_path / "dependency-specification.md").write_text(HUGO_PAGE)
    read = read_folder(tmp_path, "docs", "docs", ["group:everyone"])
    page = read.documents[0]
    assert page.title == "Dependency specification"
    text = page.text
    assert "See the Introduction first." in text  # a relref link reads as its text
    assert "Note: Only main dependencies can be declared in the `project` section." in text
    # each tab is titled by its name, and keeps its code (and a call-out inside it)
    assert '[project]:\n\n```toml\ndependencies = ["requests @ git+https' in text
    assert "[tool.poetry]:\n\n```toml\nrequests = { git = " in text
    assert "Warning: The `git` key needs Git installed." in text
    assert "Install pipx" in text
    assert '```text\n{{< relref "kept-in-code" >}}\n```' in text  # code is as written
    shown = text.replace('{{< relref "kept-in-code" >}}', "")
    for markup in ("{{", "}}", "tabID", "!!!", "///", "weight"):
        assert markup not in shown, markup


def test_an_mdx_page_is_read_as_its_site_shows_it(tmp_path) -> None:
    # Docusaurus and Starlight pages are .mdx: Markdown with imports and JSX components
    (tmp_path / "installation.mdx").write_text(
        "---\ntitle: Installation\nsidebar_position: 2\n---\n\n"
        "import Tabs from '@theme/Tabs';\nimport {\n  Highlight,\n} from '@site/src/components';\n"
        "export const Version = () => <span>3.4</span>;\n\n"
        "# Installation\n\n{/* keep this page short */}\n\n"
        "Docusaurus needs **Node.js 18.0** or above.\n\n"
        '<Tabs groupId="package-manager">\n  <TabItem value="npm" label="npm" default>\n\n'
        "```bash\nnpm install --save @docusaurus/core\n```\n\n  </TabItem>\n"
        '  <TabItem value="yarn" label="Yarn">\n\n```bash\nyarn add @docusaurus/core\n```\n\n'
        "  </TabItem>\n</Tabs>\n\n"
        '<Admonition type="warning" title="Windows">\nRun the commands from WSL.\n'
        "</Admonition>\n\n"
        "<Image src={require('./img/setup.png').default} alt=\"setup\" />\n\n"
        "import the module first, then run it.\n\n"
        "```jsx\nimport Tabs from '@theme/Tabs';\n```\n"
    )
    read = read_folder(tmp_path, "docs", "docs", ["group:everyone"])
    assert not read.unsupported and not read.problems
    text = read.documents[0].text
    assert read.documents[0].title == "Installation"
    assert "npm:\n\n```bash\nnpm install --save @docusaurus/core\n```" in text  # a tab
    assert "Yarn:\n\n```bash\nyarn add @docusaurus/core\n```" in text
    assert "Windows: Run the commands from WSL." in text  # a call-out component
    assert "import the module first, then run it." in text  # prose, not a module line
    assert text.endswith("```jsx\nimport Tabs from '@theme/Tabs';\n```")  # code as written
    shown = text.removesuffix("```jsx\nimport Tabs from '@theme/Tabs';\n```")
    for markup in ("@theme", "Highlight", "Version", "keep this page", "<Tab", "<Image", "{/*"):
        assert markup not in shown, markup


def test_a_docusaurus_md_page_is_read_as_mdx(tmp_path) -> None:
    # Docusaurus reads every .md page as MDX: Prettier's pages import their tabs in a .md
    (tmp_path / "sharing.md").write_text(
        "---\ntitle: Sharing configurations\n---\n\n"
        'import Tabs from "@theme/Tabs";\nimport TabItem from "@theme/TabItem";\n\n'
        "Install the shared config:\n\n"
        '<Tabs groupId="package-manager">\n  <TabItem value="npm">\n\n'
        "```bash\nnpm install --save-dev @username/prettier-config\n```\n\n  </TabItem>\n"
        '  <TabItem value="yarn">\n\n```bash\nyarn add --dev @username/prettier-config\n```\n\n'
        "  </TabItem>\n</Tabs>\n"
    )
    # a plain page keeps its indented code, and prose that mentions an import
    (tmp_path / "plain.md").write_text(
        "# Plain\n\nRun this:\n\n    import os\n    print(os.getcwd())\n\n"
        'Write `import X from "y"` at the top.\n\n<details>\n<summary>More</summary>\n\n'
        "Hidden text.\n\n</details>\n"
    )
    read = read_folder(tmp_path, "docs", "docs", ["group:everyone"])
    pages = {d.doc_id: d.text for d in read.documents}
    text = pages["docs/sharing"]
    assert "@theme" not in text and "<Tab" not in text
    assert "npm:\n\n```bash\nnpm install --save-dev @username/prettier-config\n```" in text
    assert "yarn:\n\n```bash\nyarn add --dev" in text
    plain = pages["docs/plain"]
    assert "```\nimport os\nprint(os.getcwd())\n```" in plain
    assert 'Write `import X from "y"` at the top.' in plain


def test_a_sphinx_site_s_own_markup_is_read_as_its_pages_show_it(tmp_path) -> None:
    # pip's documentation (Sphinx, MyST and rST): what a new user met there
    (tmp_path / "vcs-support.md").write_text(
        "(vcs support)=\n\n# VCS Support\n\n"
        "pip can install from a repository[^1], see {doc}`../topics/caching` and "
        "{ref}`pypug:dependency-specifiers` and {doc}`../deploying/index`.\n\n"
        "[^1]: Git, Mercurial, Subversion or Bazaar.\n\n"
        "- `PIP_TIMEOUT=60` is the same as `--timeout=60`\n"
        "- ```\n  PIP_FIND_LINKS=http://mirror\n  ```\n\n  is the same as\n\n"
        "  ```\n  --find-links=http://mirror\n  ```\n\n"
        "```{note}\nAn empty variable is not read as false.\n```\n\n"
        "Global\n: The file for every user.\n\n"
        "`~=` means any compatible{sup}`1` version.\n"
    )
    (tmp_path / "ci.rst").write_text(
        ".. note::\n\n    This page is out of date.\n\n"
        "Continuous Integration\n======================\n\nWe test on Linux.\n"
    )
    (tmp_path / "pip_list.rst").write_text(
        ".. meta::\n    :http-equiv=refresh: 3; url=../../cli/pip_list/\n\n"
        "pip list\n========\n\nUsage\n-----\n\n.. tab:: Unix/macOS\n\n"
        '   .. pip-command-usage:: list "python -m pip"\n\n'
        ".. pip-command-description:: list\n\nExamples\n--------\n\n"
        "#. List installed packages.\n\n   .. tab:: Unix/macOS\n\n      .. code-block:: console\n\n"
        "         $ python -m pip list\n\n"
        "#. List outdated packages.\n\n   .. code-block:: console\n\n"
        "      $ python -m pip list --outdated\n"
    )
    (tmp_path / "resolution.md").write_text(
        "# Dependency resolution\n\n"
        + "pip backtracks when two requirements conflict. " * 12
        + "\n\nThis can look like:\n\n```console\n"
        + "Collecting requests\n  Downloading requests-2.31.tar.gz\n" * 18
        + "```\n"
    )
    read = read_folder(tmp_path, "docs", "docs", ["group:everyone"])
    pages = {d.doc_id: d for d in read.documents}
    vcs, ci, pip_list = pages["docs/vcs-support"], pages["docs/ci"], pages["docs/pip_list"]
    # a label (spaces and all) is markup: the page is titled by its heading
    assert vcs.title == "VCS Support" and "(vcs support)=" not in vcs.text
    # a footnote's mark is a raised number, its note after the paragraph that marks it; a
    # cross-reference reads as words
    assert (
        "from a repository¹, see caching and dependency specifiers and deploying.\n\n¹ Git, "
        in (vcs.text)
    )
    assert "[^1]" not in vcs.text and "Git, Mercurial, Subversion or Bazaar." in vcs.text
    # a code block inside a list item stays a code block, and the call-out after it reads
    assert "```\nis the same as\n```" in vcs.text
    assert "Note: An empty variable is not read as false." in vcs.text
    assert "Global: The file for every user." in vcs.text  # a definition list
    assert "`~=` means any compatible¹ version." in vcs.text  # a superscript, not markup
    # a call-out above the title does not hide it
    assert ci.title == "Continuous Integration"
    # an extension's directive says nothing of its own; auto-numbered items count on
    assert pip_list.title == "pip list"
    for leaked in ('"python -m pip"', "http-equiv", "\nlist\n", "Unix/macOS."):
        assert leaked not in pip_list.text, leaked
    assert "1. List installed packages." in pip_list.text
    assert "2. List outdated packages." in pip_list.text
    # a lead-in stays in the chunk of the block it introduces
    shown = [c["text"] for c in pages["docs/resolution"].chunks]
    assert any(c.startswith("This can look like:\n\n```console") for c in shown), shown


def test_a_starlight_page_is_read_as_its_site_shows_it(tmp_path) -> None:
    # Starlight's own documentation: components over several lines, bodies indented for
    # layout (MDX has no indented code), tabs inside numbered steps
    (tmp_path / "plugins.mdx").write_text(
        "---\ntitle: Plugins\n---\n\n"
        "import { LinkCard, Tabs, TabItem } from '@astrojs/starlight/components';\n\n"
        '## Community plugins\n\n<CardGrid>\n\t<LinkCard\n\t\thref="https://github.com/x/links"\n'
        '\t\ttitle="starlight-links-validator"\n'
        '\t\tdescription="Check for broken links in your Starlight pages."\n\t/>\n</CardGrid>\n\n'
        '<Card title="Powered by Astro" icon="rocket">\n'
        "\tLeverage the full power of Astro.\n</Card>\n\n"
        '<TabItem label="Stars">Sirius, Vega</TabItem>\n\n'
        ':::tip{icon="heart"}\nA tip with an icon.\n:::\n\n'
        "1. Step one.\n\n   :::caution\n   Back up first.\n   :::\n\n2. Step two.\n\n"
        '## Install\n\n1.  Install the font:\n\n    <Tabs>\n\n    <TabItem label="npm">\n\n'
        "    ```sh\n    npm install @fontsource/ibm-plex-serif\n    ```\n\n    </TabItem>\n\n"
        "    </Tabs>\n\n2.  Add it to `customCss`.\n\n"
        '## Manual\n\n<Tabs>\n    <TabItem label="pnpm">\n'
        "        ```sh\n        pnpm astro add starlight\n        ```\n    </TabItem>\n</Tabs>\n"
    )
    (tmp_path / "authoring.md").write_text(
        "# Authoring\n\nWrite this in your page:\n\n"
        "````md\n:::note\nHello:\n\n```sh\nnpm run dev\n```\n\n:::\n````\n\nDone.\n\n"
        'Then:\n\n```js title="astro.config.mjs" {2} ins={3}\nexport default {}\n```\n\n'
        'Marked:\n\n```mdx \'title="Watch out!"\'\n<Aside title="Watch out!" />\n```\n'
    )
    read = read_folder(tmp_path, "docs", "docs", ["group:everyone"])
    pages = {d.doc_id: d for d in read.documents}
    text = pages["docs/plugins"].text
    assert "starlight-links-validator: Check for broken links in your Starlight pages." in text
    assert "Powered by Astro:\n\nLeverage the full power of Astro." in text  # prose, not code
    assert "Stars: Sirius, Vega" in text
    assert "Tip: A tip with an icon." in text
    assert "1. Step one. Caution: Back up first.\n2. Step two." in text  # an aside in a step
    assert "```sh\nnpm install @fontsource/ibm-plex-serif\n```" in text  # one code block
    assert "2. Add it to `customCss`." in text  # the list goes on after the tab
    assert "pnpm:\n\n```sh\npnpm astro add starlight\n```" in text
    for markup in ("<", "/>", "import ", ":::", "icon="):
        assert markup not in text, markup
    # an example of Markdown holding a code block of its own stays one block, as written
    chunks = [c["text"] for c in pages["docs/authoring"].chunks]
    assert any(
        "````md\n:::note\nHello:\n\n```sh\nnpm run dev\n```\n\n:::\n````" in c for c in chunks
    )
    # a code block's title names its file, said before it; the site's other settings are not
    assert "astro.config.mjs:\n\n```js\nexport default {}\n```" in pages["docs/authoring"].text
    # a quoted string marked in the code is no title
    assert "Marked:\n\n```mdx\n<Aside" in pages["docs/authoring"].text


def test_a_vitepress_page_is_read_as_its_site_shows_it(tmp_path) -> None:
    """Containers with a space after their marks (``::: tip Title``), a code group's tabs,
    a code block's title in brackets, twoslash's hidden lines, a step's title in bold."""
    (tmp_path / "guide.md").write_text(
        "# Getting Started\n\n::: code-group\n\n```bash [npm]\n$ npm create vite@latest\n```\n\n"
        "```bash [Yarn]\n$ yarn create vite\n```\n\n:::\n\n"
        "::: tip Compatibility Note\nVite requires Node.js version 20.19+, 22.12+.\n:::\n\n"
        ":::: details Using create vite with command line options\n\n"
        "You can directly specify the project name.\n\n::::\n\n"
        "::: warning\nDo not commit secrets.\n:::\n\n"
        "```js twoslash [vite.config.js]\nimport 'vite/client'\n// @noErrors\n// ---cut---\n"
        "import shaderString from './shader.glsl?raw'\n```\n\n"
        "```[.env]\nVITE_SOME_KEY=123\n```\n\n"
        "1. **Update Vite Config**\n\n   Set the correct `base`.\n\n2. **Enable Pages**\n\n"
        "   Go to Settings.\n\n- **Fast**\n- **Lean** and small\n"
    )
    (tmp_path / "api.md").write_text("# API\n\n::: mypackage.Client\n\nThe client.\n")
    (tmp_path / "api2.md").write_text(
        "# API\n\n::: httpx\n    options:\n      show_source: false\n\nThe client.\n\n"
        ":::note\nA note.\n:::\n"
    )
    # a code snippet import: a file of the folder (a region of it), titled; none from outside
    (tmp_path / "deploy.md").write_text(
        "# Deploy\n\nCreate the workflow:\n\n<<< ./pages.yaml#content [deploy.yml]\n\n"
        "Setup:\n\n<<< @/snippets/app.js{2 ts:line-numbers}\n\n<<< ../outside.js\n"
    )
    (tmp_path / "pages.yaml").write_text(
        "name: Deploy\n# #region content\non:\n  push:\n    branches: [main]\n"
        "# #endregion content\njobs: {}\n"
    )
    (tmp_path / "snippets").mkdir()
    (tmp_path / "snippets" / "app.js").write_text(
        "// #region a\nexport default {}\n// #endregion a\n"
    )
    (tmp_path.parent / "outside.js").write_text("const secret = 1\n")
    # an imported page with code blocks of its own stays one block; the page goes on after it
    (tmp_path / "snippets" / "usage.md").write_text("Intro\n\n```js\nINNER\n```\n\nAFTER\n")
    (tmp_path / "usage.md").write_text("# Usage\n\n<<< @/snippets/usage.md\n\nThe end.\n")
    read = read_folder(tmp_path, "docs", "docs", ["group:everyone"])
    pages = {d.doc_id: d for d in read.documents}
    text = pages["docs/guide"].text
    assert "npm:\n\n```bash\n$ npm create vite@latest\n```" in text  # a code group's tab
    assert "Yarn:\n\n```bash\n$ yarn create vite\n```" in text
    # a call-out right after a code group is kept, titled (it was read as mkdocstrings' ::: x)
    assert "Compatibility Note: Vite requires Node.js version 20.19+, 22.12+." in text
    assert "Using create vite with command line options: You can directly specify" in text
    assert "Warning: Do not commit secrets." in text
    assert "vite.config.js:\n\n```js\nimport shaderString from './shader.glsl?raw'\n```" in text
    assert ".env:\n\n```\nVITE_SOME_KEY=123\n```" in text
    steps = "1. Update Vite Config: Set the correct `base`.\n2. Enable Pages: Go to Settings."
    assert steps in text  # a step's title in bold leads its text
    assert "- Fast\n- Lean and small" in text  # a bold item with nothing under it: no colon
    for markup in (":::", "---cut---", "@noErrors", "vite/client", "[npm]", "code-group"):
        assert markup not in text, markup
    # mkdocstrings' directive has no closing marks: still the site's generated reference
    assert pages["docs/api"].text == "# API\n\nThe client."
    # nor does a bare module name, though a call-out closes later on its page
    assert pages["docs/api2"].text.startswith("# API\n\nThe client.\n\nNote: A note.")
    assert "Httpx" not in pages["docs/api2"].text and "options" not in pages["docs/api2"].text
    deploy = pages["docs/deploy"].text
    assert "deploy.yml:\n\n```yaml\non:\n  push:\n    branches: [main]\n```" in deploy
    assert "Setup:\n\n```ts\nexport default {}\n```" in deploy
    assert "<<<" not in deploy and "secret" not in deploy and "name: Deploy" not in deploy
    usage = pages["docs/usage"].text
    assert "````md\nIntro\n\n```js\nINNER\n```\n\nAFTER\n````\n\nThe end." in usage


def test_an_mdbook_page_is_read_as_its_book_shows_it(tmp_path) -> None:
    # mdBook's user guide (rust-lang/mdBook, guide/src): its links put files in the page, its
    # Rust blocks hide lines, and a code block goes with the words above it
    book = tmp_path / "src"
    (book / "format").mkdir(parents=True)
    (book / "format" / "file.rs").write_text(
        "fn main() {\n    let x = add_one(2);\n}\n// ANCHOR: component\nstruct Paddle {\n"
        "    hello: f32,\n}\n// ANCHOR_END: component\n"
    )
    (book / "format" / "arg-watcher.md").write_text("#### `--watcher`\n\nPicks the watcher.\n")
    (book / "format" / "secret.md").write_text("---\nacl: [group:hr]\n---\nSalary bands.\n")
    # front matter as indexing reads it, however it is written: these have readers of their own
    (book / "format" / "s2.md").write_text('\n---\n"acl": [group:hr]\n---\nBonus pool.\n')
    (book / "format" / "s3.md").write_text("---\n{attendees: [bob]}\n---\nMinutes.\n")
    (book / "format" / "m.eml").write_text("From: a@x\nTo: bob@x\nSubject: s\n\nMail body.\n")
    (book / "format" / "id_rsa").write_text("PRIVATE KEY\n")
    (book / "format" / "loop.md").write_text("Loop {{#include loop.md}} {{#include loop.md}}\n")
    (book / "format" / "wide.md").write_text(
        "---\nacl: [group:everyone]\n---\nWide page. {{#include arg-watcher.md}}\n"
    )
    (tmp_path / "outside.md").write_text("Outside the indexed folder.\n")
    (book / "format" / "mdbook.md").write_text(
        "{{#title mdBook features}}\n# Features\n\n"
        "Write \\{{#include file.rs:component}} to show a part.\n\n"
        "```rust\n{{#include file.rs:component}}\n```\n\n"
        "```rust\n{{#rustdoc_include file.rs:2}}\n```\n\n"
        "{{#playground file.rs editable}}\n\n{{#include arg-watcher.md}}\n\n"
        "{{#include secret.md}}\n\n{{#include ../../outside.md}}\n\n"
        "{{#include s2.md}} {{#include s3.md}} {{#include m.eml}} {{#include id_rsa}}\n\n"
        "{{#include loop.md}}\n\n"
        "Hidden:\n\n```rust\n# fn main() {\nlet x = 5;\n#[derive(Debug)]\n# }\n```\n\n"
        'An eyeball icon (<i class="fa fa-eye"></i>) toggles them. Wrap it with ```` ``` ````'
        ' or <code class="language-html">\\<html></code>.\n\n'
        '<div class="hidden">This will not be seen.</div>\n\n'
        "A note[^n] here.\n\nterm B\n  : First definition.\n  : Second definition.\n\n"
        "## Zoom-in\n\nImages zoom.\n\n[^n]: The note's text.\n\n    ```sh\n    mdbook build\n"
        "    ```\n"
    )
    prose = "Words that fill a chunk so the next block does not fit in it. " * 12
    (book / "format" / "general.md").write_text(
        f'# General\n\n{prose}\n\n**book.toml**\n```toml\n[book]\ntitle = "Example"\n'
        + 'authors = ["A", "B"]\n' * 8
        + "```\n\n## Summary\n\n"
        + "".join(
            f"{n}. ***Kind {n}*** - {prose[:300]}\n   ```markdown\n   - [Kind {n}](k{n}.md)\n"
            "   ```\n\n"
            for n in range(1, 5)
        )
    )
    read = read_folder(book, "docs", "docs", ["group:everyone"])
    pages = {d.doc_id: d for d in read.documents}
    page = pages["docs/format/mdbook"]
    assert page.title == "mdBook features"
    text = page.text
    assert "Write {{#include file.rs:component}} to show a part." in text  # shown as written
    assert "```rust\nstruct Paddle {\n    hello: f32,\n}\n```" in text  # the anchor's lines
    assert "```rust\n    let x = add_one(2);\n```" in text  # the other lines hidden
    assert "```rust,editable\nfn main() {" in text  # the playground's file, its anchors out
    assert "ANCHOR" not in text
    assert "#### `--watcher`" in text or "`--watcher`\n\nPicks the watcher." in text
    assert "Salary bands" not in text and "Outside the indexed folder" not in text
    for private in ("Bonus pool", "Minutes.", "Mail body", "PRIVATE KEY"):
        assert private not in text, private
    assert "Loop" in text and len(text) < 5_000  # a file including itself: once
    # a page naming its own readers includes nothing (the file's readers may not cover them)
    assert pages["docs/format/wide"].text.strip() == "Wide page."
    assert "```rust\nlet x = 5;\n#[derive(Debug)]\n```" in text
    assert "An eyeball icon toggles them." in text
    assert "```` ``` ````" in text and "`<html>`" in text
    assert "This will not be seen" not in text
    # beside what it notes, its code and all
    assert "A note¹ here.\n\n¹ The note's text.\n\n```sh\nmdbook build\n```" in text
    assert "term B: First definition.\n\nterm B: Second definition." in text
    zoom = [c["text"] for c in page.chunks if c["heading"] == "Zoom-in"]
    assert zoom == ["Images zoom."]
    # a code block in the chunk of the words above it: a label, an item
    chunks = [c["text"] for c in pages["docs/format/general"].chunks]
    assert any(c.startswith("book.toml\n\n```toml\n[book]") for c in chunks), chunks
    for n in range(1, 5):
        holding = [c for c in chunks if f"- [Kind {n}](k{n}.md)" in c]
        assert len(holding) == 1 and f"{n}. Kind {n} - Words" in holding[0], chunks
