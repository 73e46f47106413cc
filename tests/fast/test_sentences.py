"""Quotable units of real, hard-wrapped Markdown: whole sentences, steps, never markup."""

from __future__ import annotations

from seekgraph.providers.sentences import sentences
from seekgraph.sources.ingestion.markdown_text import readable_markdown

DOC = """# Path

<!-- YAML
added: v0.1.16
-->

## path.join([...paths])

The `path.join()` method joins all given `path` segments together using the
platform-specific separator as a delimiter, then normalizes the resulting
path. See the [path docs][] for more.

* `timeout` {number} Milliseconds to wait.
  Default: `30000`.

To set up SSO:

1. Sign in as an admin.
2. Choose **Create App Integration**, then
   select SAML 2.0.

```js
path.join('/foo', 'bar');
```

[path docs]: https://nodejs.org/api/path.html
"""


def test_hard_wrapped_markdown_becomes_whole_clean_units() -> None:
    units = sentences(readable_markdown(DOC))
    assert units[0] == "Added in: v0.1.16"  # the API's metadata, as its site shows it
    assert units[1] == (
        "The `path.join()` method joins all given `path` segments together using the "
        "platform-specific separator as a delimiter, then normalizes the resulting path."
    )
    assert "`timeout` {number} Milliseconds to wait. Default: `30000`." in units
    # the lead-in keeps the steps it introduces, in order
    assert (
        "To set up SSO:\n1. Sign in as an admin.\n2. Choose Create App Integration, then "
        "select SAML 2.0." in units
    )
    assert "```js\npath.join('/foo', 'bar');\n```" in units  # whole, fences included
    text = "\n".join(units)
    for junk in ("<!--", "YAML", "added:", "https://nodejs.org", "[path docs]", "**", "# Path"):
        assert junk not in text, junk


def test_plain_text_with_line_breaks_is_not_cut_at_each_line() -> None:
    units = sentences("The gateway moved to vpn2.example for\nevery new laptop. Restart it.")
    assert units == ["The gateway moved to vpn2.example for every new laptop.", "Restart it."]


def test_a_line_that_completes_a_sentence_stays_with_it() -> None:
    assert sentences("Requests time out after a while.\nDefault: 30 seconds.") == [
        "Requests time out after a while. Default: 30 seconds."
    ]


def test_abbreviations_do_not_end_a_sentence() -> None:
    text = (
        "Load it when present (e.g. in\ndevelopment) from the environment. Then run it, i.e. now."
    )
    assert sentences(text) == [
        "Load it when present (e.g. in development) from the environment.",
        "Then run it, i.e. now.",
    ]


def test_a_code_block_with_blank_lines_stays_one_unit_and_its_comments_are_not_headings() -> None:
    text = "Use it:\n\n```python\nimport x\n\n# Code of your app\nx.run()\n```\n\nDone here."
    units = sentences(text)
    # whole, with the sentence that introduces it: "Use it:" is half an answer without it
    assert "Use it:\n```python\nimport x\n\n# Code of your app\nx.run()\n```" in units
    assert units[-1] == "Done here."
    # a line that completes a sentence does not follow the code's closing fence
    units = sentences("Use it:\n\n```python\nx = 1\n```\n\nDefault: 30 s.")
    assert units == ["Use it:\n```python\nx = 1\n```", "Default: 30 s."]
    long = "```python\n" + "x.run()\n" * 80 + "```"
    assert sentences(f"Use it:\n\n{long}") == ["Use it:", long]  # too long to go with it


def test_chinese_sentences_split_at_chinese_punctuation() -> None:
    assert sentences("我们在北京。你好吗？很好！") == ["我们在北京。", "你好吗？", "很好！"]


def test_a_table_row_is_read_with_its_header() -> None:
    table = "| Library version | Supported redis versions |\n|---|---|\n| 3.5.3 | <= 6.2 |\n"
    assert sentences(readable_markdown(table)) == [
        "Library version: 3.5.3; Supported redis versions: <= 6.2"
    ]


def test_a_dotted_name_does_not_end_a_sentence() -> None:
    text = "You can define your own redis.ConnectionPool. Then use it."
    assert sentences(text) == ["You can define your own redis.ConnectionPool.", "Then use it."]


def test_a_list_items_example_holding_a_code_block_keeps_its_lines() -> None:
    # mdBook's guide: an item's example of Markdown holds a Rust block; its inner fence
    # closed the example, and the Rust lines were read as the item's words, the quote empty
    text = readable_markdown(
        "- edition: Rust edition to use. Blocks can be marked, such as:\n"
        "  ````text\n  ```rust,edition2015\n  // This only works in 2015.\n  let try = true;\n"
        "  ```\n  ````\n"
    )
    units = sentences(text)
    assert units[-1] == (
        "````text\n```rust,edition2015\n// This only works in 2015.\nlet try = true;\n```\n````"
    ), units
    assert "let try" not in units[0]


def test_a_list_items_heading_leads_its_text_and_opens_no_section() -> None:
    # Caddy's menu: each item is a heading and a line under it (CommonMark keeps both in the
    # item); the descriptions were lost and the headings read as the page's sections
    menu = (
        "## Menu\n\n"
        "- #### [Quick start guide](/docs/quick-starts/caddyfile)\n"
        "  A good place to begin getting familiar with the Caddyfile.\n"
        "- #### [Caddyfile concepts](/docs/caddyfile/concepts)\n"
        "  Required reading! Structure, site addresses, matchers, placeholders, and more.\n\n"
        "After the menu."
    )
    assert readable_markdown(menu).split("\n\n") == [
        "## Menu",
        "- Quick start guide: A good place to begin getting familiar with the Caddyfile.\n"
        "- Caddyfile concepts: Required reading! Structure, site addresses, matchers, "
        "placeholders, and more.",
        "After the menu.",
    ]


def test_a_pages_own_table_of_contents_is_not_read_as_a_passage() -> None:
    # Caddy's concepts page opens with links to its own sections; it came back as a passage
    page = (
        "This document will help you learn about the Caddyfile.\n\n"
        "1. [Structure](#structure)\n\t- [Blocks](#blocks)\n2. [Addresses](#addresses)\n\n"
        "Before you start:\n\n1. [Install](#install) Caddy first.\n2. [Other page](other.md)\n\n"
        "## Structure\n\nThe Caddyfile's structure."
    )
    assert readable_markdown(page).split("\n\n") == [
        "This document will help you learn about the Caddyfile.",
        "Before you start:",  # a list that says more than its links is read
        "1. Install Caddy first.\n2. Other page",
        "## Structure",
        "The Caddyfile's structure.",
    ]


def test_a_links_image_leaves_no_space_before_the_full_stop() -> None:
    # Caddy marks links out of the site with an arrow image inside the link's text
    arrow = '<img src="/resources/images/external-link.svg" class="external-link">'
    text = f"Certificates come from [Let's Encrypt {arrow}](https://x.org) or [ZeroSSL {arrow}](https://y.com)."
    assert readable_markdown(text) == "Certificates come from Let's Encrypt or ZeroSSL."
    assert readable_markdown(f"Install [`go` {arrow}](https://go.dev), then build.") == (
        "Install `go`, then build."
    )
    assert readable_markdown(f"Add the {arrow} .env file.") == "Add the .env file."  # a dotfile
