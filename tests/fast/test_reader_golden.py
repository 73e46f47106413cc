"""Golden cases of the offline reader on documentation nobody here wrote.

The pages are Starlette's own docs (BSD-3-Clause, ``bench/data/devset_api``), indexed as
``seekgraph index`` indexes a folder; each test is one case an offline rule serves.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from seekgraph.graph.context import Context
from seekgraph.nodes.plumbing.services import Services
from seekgraph.nodes.reader.extractive import NOTHING_FOUND
from seekgraph.providers.rerank import LocalReranker
from seekgraph.sources.base import User
from seekgraph.sources.indexes.embedded import EmbeddedIndex
from seekgraph.sources.indexes.index_source import EmbeddedSource
from seekgraph.sources.indexes.index_vectors import reranker_embedder
from seekgraph.sources.ingestion.workspace import sync_source
from seekgraph.sources.registry import SourceRegistry
from tests.conftest import run_graph

CORPUS = Path(__file__).parents[2] / "bench" / "data" / "devset_api" / "corpus"
PAGES = [
    "templates.md",
    "middleware.md",
    "background.md",
    "staticfiles.md",
    "authentication.md",
    "contributing.md",
]
READER = User("ann", frozenset({"everyone"}))


@pytest.fixture(scope="module")
def starlette(tmp_path_factory: pytest.TempPathFactory, real_embedder) -> Services:
    embedder = real_embedder  # golden cases on real documents: the real model
    folder = tmp_path_factory.mktemp("starlette")
    for page in PAGES:
        shutil.copy(CORPUS / page, folder / page)
    index = EmbeddedIndex(folder / "index.sqlite", embedder)
    sync_source(index, folder, "docs", "docs", ["group:everyone"])
    return Services(
        registry=SourceRegistry([EmbeddedSource(index, "docs", "docs")], users=[READER]),
        embedder=embedder,
        reranker=LocalReranker(reranker_embedder(embedder, index)),
    )


async def test_the_code_a_passage_introduces_is_shown_with_it(starlette) -> None:
    run = await run_graph(
        starlette,
        "I want a `marked` pipe usable inside my Jinja templates. Where do I hook my Python "
        "function in with Jinja2Templates?",
        Context(user="ann"),
    )
    out = run.output
    assert out["status"] in ("answered", "passages")
    assert "templates.env.filters['marked'] = marked_filter" in out["answer"]
    assert "[src:docs/templates#" in out["answer"]
    assert len(out["answer"]) < 1500


async def test_a_near_miss_gets_passages_not_an_answer(starlette) -> None:
    # Starlette ships GZip, not Brotli: the pages are close, the answer is not there
    run = await run_graph(
        starlette,
        "What compression quality does Starlette's built-in Brotli middleware use by default?",
        Context(user="ann"),
    )
    out = run.output
    assert out["status"] == "passages"
    assert not out["answer"].startswith(NOTHING_FOUND)
    assert out["citations"] and len(out["answer"]) < 1500
    assert not any("brotli" in u.lower() for u in out["unanswered"])


async def test_titles_come_from_the_page_never_from_code(starlette) -> None:
    run = await run_graph(
        starlette, "How do I serve static files from a directory?", Context(user="ann")
    )
    titles = {c["title"] for c in run.output["citations"]}
    assert titles and not any(t.startswith("#") or t.endswith(":") for t in titles)


async def test_a_three_part_research_request_gets_a_section_per_part(starlette) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from seekgraph.graph.flows import FLOWS
    from seekgraph.graph.run import run, run_config

    graph = FLOWS["research"].compile(starlette, InMemorySaver())
    request = "Write a guide on authentication, session cookies and CORS in Starlette"
    done = await run(graph, {"question": request}, run_config("r"), Context(user="ann"))
    plan = next(e for e in done.events if e["event"] == "node" and e["node"] == "plan_research")
    titles = [s.get("title") for s in plan["detail"]["plan"]]
    assert titles == ["Authentication", "Session cookies", "CORS"]
    report = done.values["answer"]
    assert "## Authentication" in report and "## CORS" in report
    refs = {r["n"]: r["id"] for r in done.values["references"]}
    assert not any("contributing" in i for i in refs.values())  # never a finding


async def test_an_offline_report_over_documents_quotes_each_parts_passages_whole(
    starlette,
) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from seekgraph.graph.flows import FLOWS
    from seekgraph.graph.run import run, run_config

    graph = FLOWS["research"].compile(starlette, InMemorySaver())
    request = "Write a guide on authentication, session cookies and CORS in Starlette"
    done = await run(graph, {"question": request}, run_config("w"), Context(user="ann"))
    report = done.values["answer"]
    cors = report.split("## CORS", 1)[1].split("\n[1]:", 1)[0]
    # the passage keeps the code its sentence introduces, under its place, cited
    assert "Middleware(CORSMiddleware" in cors and "```python" in cors
    assert "middleware › CORSMiddleware" in cors


#: A page written the way Node.js writes its API reference: each API's versions are an HTML
#: comment of YAML under its heading, which the built site shows as "Added in" and a history.
NODE_STYLE = """# File system

<!-- source_link=lib/files.js -->

## `files.read(path[, options], callback)`

<!-- YAML
added: v0.1.29
changes:
  - version:
      - v15.2.0
      - v14.17.0
    pr-url: https://example.org/pull/35911
    description: The options argument may include an AbortSignal to abort a
                 read that is under way.
  - version: v16.0.0
    description: The error given may be an `AggregateError`.
-->

* `path` {string} the file's name
* `callback` {Function}

Reads the whole content of a file, without blocking.

## `files.watch(path)`

<!-- YAML
added: v0.5.10
deprecated: v20.0.0
-->

Watches a file for changes. Use `files.subscribe()` instead.

<!-- YAML
this: [is not closed
-->

The rest of the page.
"""


async def test_an_api_reference_answers_since_when_from_its_version_metadata(
    tmp_path: Path, real_embedder
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "files.md").write_text(NODE_STYLE)
    index = EmbeddedIndex(tmp_path / "index.sqlite", real_embedder)
    sync_source(index, tmp_path / "docs", "docs", "docs", ["group:everyone"])
    services = Services(
        registry=SourceRegistry([EmbeddedSource(index, "docs", "docs")], users=[READER]),
        embedder=real_embedder,
        reranker=LocalReranker(reranker_embedder(real_embedder, index)),
    )
    # the metadata is on the page as its site shows it; a broken comment loses nothing else
    page = index.read("docs", "docs/files", READER)
    assert page is not None
    text = "\n".join(c["text"] for c in page["chunks"])
    assert "Deprecated since: v20.0.0" in text and "The rest of the page." in text
    assert "Source Code: lib/files.js" in text
    out = (
        await run_graph(
            services,
            "Since which version can I cancel files.read with an AbortSignal?",
            Context(user="ann"),
        )
    ).output
    assert "v15.2.0" in out["answer"] and "[src:docs/files#" in out["answer"]
    out = (await run_graph(services, "When was files.watch added?", Context(user="ann"))).output
    assert "v0.5.10" in out["answer"] and "[src:docs/files#" in out["answer"]
