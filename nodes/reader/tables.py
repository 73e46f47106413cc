"""The offline reader's tables: what documentation holds that is never a finding.

Data, not rules scattered through nodes: each entry names the golden case it serves
(``tests/fast/test_reader.py``); the words and the pattern of a page about the project
(``about_the_project``) are the language tables' (``providers/language/en.toml``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from seekgraph.providers.language import alternation, compiled, words
from seekgraph.providers.terms import term_set

#: A line that is a documentation generator's directive, not prose: mkdocstrings' "::: pkg.mod",
#: Sphinx's ".. autoclass::", admonition openers ("??? abstract", "!!! note").
DIRECTIVE = re.compile(r"^\s*(?::::\s+\S|\.\.\s+\w+::|\?\?\?\+?\s|!!!\s)", re.M)
#: Pages about the project rather than its subject: how to contribute, its sponsors, what
#: changed when (the history pages ``history_page`` knows). A request that names them ("the
#: changelog") gets them.
ABOUT_THE_PROJECT = compiled("about_the_project", flags=re.I)
#: Folders holding the guide for the project's own developers (``development/``, ``internals/``)
PROJECT_FOLDERS = words("project_folders")
#: The words of a request's frame ("write a guide on"): they name no page's subject
_FRAME = term_set(" ".join(words("request_frame")))


def boilerplate(hit: Mapping[str, Any], request: str) -> bool:
    """A passage of documentation boilerplate a research report never quotes as a finding.

    Golden case: ``test_documentation_boilerplate_is_never_a_finding``.
    """
    text = str(hit["snippet"])
    lines = [x for x in text.splitlines() if x.strip() and not x.startswith("# ")]
    directives = len(DIRECTIVE.findall(text))
    if lines and directives * 2 >= len(lines):
        return True
    if ABOUT_THE_PROJECT.search(request) is not None:  # asked for ("the contributing guide")
        return False
    if ABOUT_THE_PROJECT.search(f"{hit['title']} {hit['doc_id']}") is not None:
        return True
    # a page of the guide for the project's own developers (``development/ci``), unless the
    # request names all its title does ("Write a guide on writing plugins": ``dev/write``,
    # "Write a plugin"; "configuration files" is not pip's "Configuration File Handling")
    folders = str(hit["doc_id"]).lower().split("/")[:-1]
    titled = term_set(str(hit["title"])) - _FRAME
    asked = bool(titled) and titled <= term_set(request)
    return bool(PROJECT_FOLDERS & set(folders)) and not asked


def _any_of(name: str) -> re.Pattern[str]:
    """The words of list ``name``: English ones as whole words, Chinese ones anywhere."""
    return re.compile(
        rf"(?<![^\W_])(?:{alternation(words(name))})(?![^\W_])|{alternation(words(name, 'zh'))}",
        re.I,
    )


#: A page about the project's history (a changelog, release notes), by its title or path.
_HISTORY_PAGE = _any_of("history_pages")
#: A question about history: what changed, since which version, since when.
_HISTORY_QUESTION = compiled("history_question", "en", "zh", flags=re.I)


def history_page(hit: Mapping[str, Any]) -> bool:
    """A passage of a page about what changed when (a changelog, release notes).

    Golden case: ``test_a_changelog_comes_after_the_page_about_how_things_are``.
    """
    where = re.sub(r"[-_/.]+", " ", f"{hit['title']} {hit['doc_id']}")
    return _HISTORY_PAGE.search(where) is not None


def asks_history(question: str) -> bool:
    """The question asks about history: a version, a release, what changed or since when.

    Golden case: ``test_a_changelog_comes_after_the_page_about_how_things_are``.
    """
    return _HISTORY_QUESTION.search(question) is not None
