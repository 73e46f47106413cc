"""HTML as the readable blocks a person sees, in the Markdown form the rest of ingestion reads.

One walk of the tree, in document order: a heading becomes ``## title``, a paragraph or any
other block one line, a list one block of ``- item`` lines, a definition list one line per term
(``--frozen: Run without updating the lockfile.``), a table one block of ``a | b`` rows under
its header row, preformatted text a code fence, and ``<code>`` a code span. Comments, scripts,
styles, images and what the page hides (``hidden``) are dropped. Text is never read twice (a
``<p>`` inside an ``<li>`` is part of the item). Used for HTML files, for the HTML that
connectors return, and for the HTML blocks a Markdown page embeds (generated references often
are ``<dl>`` lists inside Markdown).
"""

from __future__ import annotations

from typing import Any

from bs4 import BeautifulSoup
from bs4.element import NavigableString, PageElement, PreformattedString, Tag

_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_SKIPPED = {"script", "style", "template", "noscript", "img", "svg", "head", "ac:parameter"}
_BLOCKS = {
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "center",
    "details",
    "div",
    "dd",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "header",
    "hr",
    "html",
    "li",
    "main",
    "nav",
    "p",
    "section",
    "summary",
    "ac:rich-text-body",
    "ac:structured-macro",
    "ac:layout",
    "ac:layout-section",
    "ac:layout-cell",
}


def html_blocks(html: str | Tag) -> list[str]:
    """The readable blocks of an HTML fragment or a parsed tree, in document order."""
    root = BeautifulSoup(html, "html.parser") if isinstance(html, str) else html
    out: list[str] = []
    _walk(root, out)
    return out


def _hidden(tag: Tag) -> bool:
    """An element the page never shows: ``hidden``, ``class="hidden"``, ``display: none``.

    Not one shown on some screens (Tailwind's ``hidden lg:block``) or found by searching the
    page (``hidden="until-found"``).
    """
    classes: Any = tag.get("class") or []
    style = str(tag.get("style") or "").replace(" ", "").lower()
    shown_somewhere = any(":" in c for c in classes)
    return (
        (tag.has_attr("hidden") and str(tag.get("hidden")).lower() != "until-found")
        or ("hidden" in classes and not shown_somewhere)
        or "display:none" in style
    )


def _walk(node: Tag, out: list[str]) -> None:
    words: list[str] = []

    def flush() -> None:
        text = " ".join("".join(words).split())
        if text:
            out.append(text)
        words.clear()

    for child in node.children:
        if not isinstance(child, Tag):
            if _is_text(child):
                words.append(str(child))
            continue
        name = child.name
        if name in _SKIPPED or _hidden(child):
            continue
        if name in _HEADINGS:
            flush()
            if text := _flat(child):
                out.append(f"{'#' * _HEADINGS[name]} {text}")
        elif name in ("ul", "ol"):
            flush()
            _list(child, out)
        elif name == "dl":
            flush()
            _definitions(child, out)
        elif name == "table":
            flush()
            rows = [
                " | ".join(_flat(cell) for cell in row.find_all(["th", "td"], recursive=False))
                for row in child.find_all("tr")
            ]
            if rows := [r for r in rows if r.strip(" |")]:
                out.append("\n".join(rows))
        elif name in ("pre", "ac:plain-text-body"):
            flush()
            if code := child.get_text().strip("\n"):
                out.append(f"```\n{code.rstrip()}\n```")
        elif name in _BLOCKS:
            flush()
            _walk(child, out)
        else:
            words.append(_inline(child))
    flush()


def _is_text(element: PageElement) -> bool:
    """Plain text, not a comment, a doctype, a declaration or CDATA."""
    return isinstance(element, NavigableString) and not isinstance(element, PreformattedString)


def _inline(tag: Tag) -> str:
    if tag.name in _SKIPPED:
        return ""
    if tag.name == "code":
        code = " ".join(tag.get_text().split())
        return f"`{code}`" if code else ""
    if tag.name == "br":
        return " "
    parts = []
    for child in tag.children:
        if isinstance(child, Tag):
            parts.append(_inline(child))
        elif _is_text(child):
            parts.append(str(child))
    return "".join(parts)


def _flat(tag: Tag) -> str:
    """A tag's blocks as one line (a list item's paragraphs, a definition's paragraphs)."""
    blocks: list[str] = []
    _walk(tag, blocks)
    return " ".join(" ".join(b.split()) for b in blocks)


def _list(tag: Tag, out: list[str]) -> None:
    numbered = tag.name == "ol"
    items = [_flat(li) for li in tag.find_all("li", recursive=False)]
    lines = [f"{f'{i}.' if numbered else '-'} {t}" for i, t in enumerate(items, 1) if t]
    if lines:
        out.append("\n".join(lines))


def _definitions(tag: Tag, out: list[str]) -> None:
    term = ""
    for child in tag.find_all(["dt", "dd"], recursive=False):
        text = _flat(child)
        if child.name == "dt":
            if term:  # a term without its definition
                out.append(term)
            term = text
        elif text:
            out.append(f"{term}: {text}" if term else text)
            term = ""
    if term:
        out.append(term)
