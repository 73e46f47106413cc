"""VitePress's code snippet imports, read as its site shows them: the file's code is in the page.

A line ``<<< @/snippets/app.js`` (``@`` is the site's source folder, here the folder being
indexed) or ``<<< ./deploy.yaml`` (beside the page) puts the file there as a code block:
``#name`` takes the lines between ``#region name`` and ``#endregion name`` (in a comment of any
language), ``{2,4 js}`` highlights lines and may name the language (else the file's suffix
does), ``[deploy.yaml]`` titles the block. A file is included as mdBook's includes are
(``mdbook._Reader``): only from the folder being indexed, never from a hidden or passed-over
folder, never into a page naming its own readers; a line whose file cannot be included is left
out, the page's other text kept.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

from seekgraph.sources.ingestion.markdown_text import fence_after, fence_for
from seekgraph.sources.ingestion.mdbook import _Reader

_IMPORT = re.compile(
    r"^(?P<indent>[ \t]{0,3})<<<[ \t]+(?P<path>[^\s#{\[]+)(?:#(?P<region>[\w-]+))?"
    r"(?:\{(?P<settings>[^}\n]*)\})?(?:[ \t]+\[(?P<title>[^\]\n]+)\])?[ \t]*$",
    re.M,
)
# a region's marker line, in a comment of any language: ``// #region name``, ``# #endregion``,
# ``<!-- #region name -->``, ``/* #endregion */``
_REGION = re.compile(r"(?://|#|<!--|/\*)?[ \t]*#(end)?region\b[ \t]*([\w-]*)[ \t]*(?:-->|\*/)?")
#: A file's suffix, when it is not the name of its language in a code block.
_LANGUAGES = {"yml": "yaml", "mjs": "js", "cjs": "js", "mts": "ts", "cts": "ts", "sh": "bash"}


def expand_imports(
    text: str,
    page: Path,
    root: Path,
    passed_over: Collection[str] = (),
    includes: bool = True,
) -> str:
    """``text`` of ``page`` with its ``<<<`` lines replaced by the code they import."""
    if "<<<" not in text:
        return text
    reader = _Reader(root.resolve(), frozenset(passed_over), includes)
    out, fence = [], ""
    for line in text.split("\n"):
        fence, is_code_line = fence_after(line, fence)
        found = None if is_code_line else _IMPORT.match(line)
        if found is None:
            out.append(line)
            continue
        target = found.group("path")
        path = root / target[2:] if target.startswith("@/") else page.parent / target
        read = reader.read(path, (page.resolve(),))
        if read is None:
            continue  # outside the folder, another type, the page's own readers: left out
        code = _region(read[1], found.group("region"))
        settings = (found.group("settings") or "").split()
        words = [s.split(":")[0] for s in settings if not re.fullmatch(r"[\d,\-]+", s)]
        suffix = path.suffix.lstrip(".").lower()
        language = words[0] if words else _LANGUAGES.get(suffix, suffix)
        indent = found.group("indent")
        if found.group("title"):
            out += [f"{indent}{found.group('title').strip()}:", ""]
        body = "\n".join(f"{indent}{x}" if x else x for x in code.splitlines())
        ticks = fence_for(code)  # an imported page's own fences stay inside
        out.append(f"{indent}{ticks}{language}\n{body}\n{indent}{ticks}")
    return "\n".join(out)


def _region(text: str, name: str | None) -> str:
    """The lines of region ``name``, without any region's marker lines.

    The whole file for no name or a region the file does not have, as VitePress does; an
    unnamed ``#endregion`` ends the region too.
    """
    kept: list[str] = []
    whole: list[str] = []
    inside, found = name is None, False
    for line in text.splitlines():
        mark = _REGION.fullmatch(line.strip())
        if mark is None:
            whole.append(line)
            if inside:
                kept.append(line)
            continue
        if name is not None and not mark.group(1) and mark.group(2) == name:
            inside = found = True
        elif name is not None and mark.group(1) and inside and mark.group(2) in ("", name):
            inside = False
    lines = kept if name is None or found else whole
    return "\n".join(lines).strip("\n")
