"""MkDocs hooks: the benchmark pages, made from ``bench/results/`` when the site is built.

Every ``bench/results/*.md`` (written by ``bench/report.py`` with the command that produced
it, or by hand) becomes ``benchmarks/<name>.md``, the screenshots become
``benchmarks/screenshots/``, and ``benchmarks.md`` lists them all with
``bench/results/README.md``'s account of what each file measures. Nothing is copied into
``docs/``, so the pages are never stale.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files, InclusionLevel

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"


def title_of(text: str, fallback: str) -> str:
    """The page's first heading, without Markdown code marks."""
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip().replace("`", "")
    return fallback


def date_of(text: str) -> str:
    """When the result was recorded, as the file says (``bench/report.py``'s ``date``)."""
    found = re.search(r"\*\*date\*\*: (\S+)", text) or re.search(r"(\d{4}-\d{2}-\d{2}) ", text)
    return found.group(1) if found else ""


def index_page(pages: dict[str, str]) -> str:
    """``benchmarks.md``: every recorded result, then what each one measures."""
    lines = [
        "# Benchmarks",
        "",
        "Every result recorded in `bench/results/`, as the benchmark wrote it: the command that",
        "produced it, the machine, the date, then its numbers. This page and the pages it links",
        "are made from those files when the site is built. For the headline numbers and their",
        "targets, see [the summary](measured.md); to record a result, run the command it names",
        "(each benchmark writes `name.json` for scripts and `name.md` for people).",
        "",
        "| result (`bench/results/NAME.md`) | its heading | recorded |",
        "|---|---|---|",
    ]
    for stem, text in pages.items():
        heading = title_of(text, stem).replace("|", "\\|")
        lines.append(f"| [{stem}](benchmarks/{stem}.md) | {heading} | {date_of(text)} |")
    readme = RESULTS / "README.md"
    if readme.exists():
        body = readme.read_text().split("\n", 1)[1]  # below its own title
        lines += ["", "## What each file measures", "", body.strip()]
    return "\n".join(lines) + "\n"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the benchmark pages and screenshots to the site."""
    pages = {
        path.stem: path.read_text()
        for path in sorted(RESULTS.glob("*.md"))
        if path.name != "README.md"
    }
    for stem, text in pages.items():
        uri = f"benchmarks/{stem}.md"  # linked from benchmarks.md, not listed in the nav
        files.append(File.generated(config, uri, content=text, inclusion=InclusionLevel.NOT_IN_NAV))
    for image in sorted((RESULTS / "screenshots").glob("*.png")):
        uri = f"benchmarks/screenshots/{image.name}"
        files.append(File.generated(config, uri, abs_src_path=str(image)))
    files.append(File.generated(config, "benchmarks.md", content=index_page(pages)))
    return files
