"""The offline reader's tables: what documentation holds that is never a finding.

Data, not rules scattered through nodes: each entry names the golden case it serves
(``tests/fast/test_reader.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: A line that is a documentation generator's directive, not prose: mkdocstrings' "::: pkg.mod",
#: Sphinx's ".. autoclass::", admonition openers ("??? abstract", "!!! note").
DIRECTIVE = re.compile(r"^\s*(?::::\s+\S|\.\.\s+\w+::|\?\?\?\+?\s|!!!\s)", re.M)
#: Pages about the project rather than its subject: how to contribute, what changed when.
#: A request that names them ("the changelog") gets them.
ABOUT_THE_PROJECT = re.compile(
    r"\b(?:contribut\w*|change\s?log|changes|release\s+notes|history|code\s+of\s+conduct|"
    r"sponsor\w*)\b",
    re.I,
)


def boilerplate(hit: Mapping[str, Any], request: str) -> bool:
    """A passage of documentation boilerplate a research report never quotes as a finding.

    Golden case: ``test_documentation_boilerplate_is_never_a_finding``.
    """
    text = str(hit["snippet"])
    lines = [x for x in text.splitlines() if x.strip() and not x.startswith("# ")]
    directives = len(DIRECTIVE.findall(text))
    if lines and directives * 2 >= len(lines):
        return True
    about = ABOUT_THE_PROJECT.search(f"{hit['title']} {hit['doc_id']}")
    return about is not None and ABOUT_THE_PROJECT.search(request) is None
