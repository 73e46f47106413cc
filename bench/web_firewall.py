"""The web firewall: no word of private evidence in any query sent to the web.

    python -m bench.web_firewall --json bench/results/web_firewall.json

The permission probe's workspace (``bench.fault_inputs.workspace``: the demo plus a finance-only
trap) is opened as the CLI opens it, with the web on: a SearxNG-compatible engine and pages on
loopback (``tests/fakes/web_server.py``, whose pages share topics with the workspace so web
evidence and multi-hop bridges happen). Every question runs in extractive mode as ``carol``,
who may read every restricted document (security, engineering, finance, sales), so restricted
evidence is in hand while web queries are built. Questions: the fault campaign's canary
questions, the paraphrase dev set, and one question per passage of the workspace generated from
its title and heading and one naming three of its longest words (public and restricted passages
alike), and the docs-QA questions of ``bench.answers`` — at least 200 in all.

Every query the engine received is checked, word by word (lower case):

- **restricted**: a word of a restricted document that is neither in the question nor on any
  web page — the issue's measure, must be 0;
- **private**: the same for any workspace document, restricted or not — stricter, also 0.

The control: the private search's own variants in the same runs that hold restricted words
(what a web search fed the usual query variants would have sent). Reported beside them: how
many runs had restricted evidence kept while the web was searched
(the firewall was under test, not idle), queries sent, runs with web evidence kept.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.fault_inputs import BOB_QUESTIONS, workspace
from bench.report import command_line, write
from bench.runner import GraphRunner
from seekgraph.providers.terms import STOPWORDS
from seekgraph.server.bootstrap import build_services, index_path
from seekgraph.server.settings import Settings
from tests.support.processes import start_fake

PAGES = [
    {
        "slug": "wireguard",
        "title": "WireGuard",
        "text": "WireGuard is a VPN protocol designed by Jason Donenfeld. It completes a "
        "handshake every two minutes using the Noise protocol framework.",
        "links": ["noise"],
    },
    {
        "slug": "noise",
        "title": "Noise protocol framework",
        "text": "The Noise protocol framework was designed by Trevor Perrin.",
    },
    {
        "slug": "saml",
        "title": "Security Assertion Markup Language",
        "text": "SAML 2.0 is an XML standard for single sign-on between an identity provider "
        "such as Okta and a service provider.",
    },
    {
        "slug": "pentest",
        "title": "Penetration test",
        "text": "A penetration test is an authorised simulated attack. Findings are rated by "
        "severity and a retest confirms the fixes.",
    },
    {
        "slug": "lidar",
        "title": "Lidar",
        "text": "Lidar measures distance with laser light. Suppliers include Velodyne and "
        "Ouster; lead times for automotive lidar units can exceed six months.",
    },
    {
        "slug": "github-actions",
        "title": "GitHub Actions",
        "text": "GitHub Actions is a continuous integration service. Teams migrating from "
        "Jenkins port their pipelines to workflow files.",
    },
    {
        "slug": "expense-report",
        "title": "Expense report",
        "text": "An expense report lists each cost with its receipt. Most companies ask for "
        "claims within thirty days; per diem rates cap meals and lodging.",
    },
    {
        "slug": "discount",
        "title": "Sales discount",
        "text": "A sales discount is a reduction of the list price. Larger discounts usually "
        "need approval from a sales manager or director.",
    },
]

_WORD = re.compile(r"\w+")


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def documents(db: Path) -> list[tuple[str, str, bool]]:
    """Every indexed document: its title, its text, and whether it is restricted."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT d.title, d.text, NOT EXISTS (SELECT 1 FROM acl a WHERE a.doc_id = d.doc_id "
            "AND a.principal = 'group:everyone') FROM documents d"
        ).fetchall()
    return [(str(t), str(x), bool(r)) for t, x, r in rows]


def generated_questions(db: Path) -> list[str]:
    """Two questions per passage: by its document's title and heading, and by three of its
    longest words (the rest of the passage is what the firewall must keep in)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT d.title, c.heading, c.text FROM chunks c JOIN documents d USING (doc_id) "
            "ORDER BY d.doc_id, c.ord"
        ).fetchall()
    out = []
    for title, heading, text in rows:
        about = heading if heading and heading != title else "the main points"
        out.append(f"What does {title} say about {about}?")
        rare = sorted(words(text) - STOPWORDS, key=lambda w: (-len(w), w))[:3]
        if rare:  # a question naming a few of the passage's own words, the rest unsaid
            out.append(f"What is known about {' '.join(rare)}?")
    return list(dict.fromkeys(out))


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="seekgraph-firewall-"))
    root = workspace(tmp)
    config = json.loads((root / "workspace.json").read_text())
    config["users"]["carol"] = {
        "name": "Carol, reads everything",
        "groups": ["everyone", "engineering", "security", "finance", "sales"],
    }
    (root / "workspace.json").write_text(json.dumps(config))
    pages = tmp / "pages.json"
    pages.write_text(json.dumps(PAGES))
    web = start_fake(tmp, "web_server", "--pages", str(pages), ready="/calls")
    engine = web.url.replace("127.0.0.1", "localhost")
    try:
        settings = Settings(
            data_dir=tmp / "data",
            workspace=root,
            searxng_url=engine,
            web_allow_hosts="localhost",
            web_requests_per_second=1000,
        )
        services, _ = build_services(settings)
        runner = GraphRunner(services)
        db = index_path(settings, root)
        docs = documents(db)
        paraphrases = [
            json.loads(line)["question"]
            for line in Path(args.paraphrases).read_text().splitlines()
            if line.strip()
        ]
        readme_sets = [json.loads(line)["question"] for path in args.readme_questions
                       for line in Path(path).read_text().splitlines() if line.strip()]  # fmt: skip
        questions = list(
            dict.fromkeys([*BOB_QUESTIONS, *paraphrases, *readme_sets, *generated_questions(db)])
        )
        on_web = set().union(*(words(f"{p['title']} {p['text']}") for p in PAGES))
        restricted = set().union(*(words(f"{t} {x}") for t, x, r in docs if r))
        private = set().union(*(words(f"{t} {x}") for t, x, _ in docs))
        leaks: dict[str, list[dict[str, Any]]] = {"restricted": [], "private": []}
        under_test = with_web = sent_total = control = 0
        for question in questions:
            httpx.post(f"{engine}/script", json={"reset": True}).raise_for_status()
            values, _ = await runner.run_graph(question, "carol")
            sent = httpx.get(f"{engine}/queries").json()
            sent_total += len(sent)
            kept = [e for e in values.get("evidence", []) if e["kept_by"] != "none"]
            restricted_kept = any(words(e["snippet"]) & (restricted - on_web) for e in kept)
            under_test += int(bool(sent) and restricted_kept)
            with_web += int(any(e["kind"] == "web" for e in kept))
            for query in set(values.get("tried_queries", [])) - set(sent):
                # the control: private variants of the same run, which never leave
                control += int(bool((words(query) - words(question) - on_web) & restricted))
            for query in sent:
                extra = words(query) - words(question) - on_web
                for name, vocabulary in (("restricted", restricted), ("private", private)):
                    if extra & vocabulary:
                        leaks[name].append({"question": question, "query": query,
                                            "words": sorted(extra & vocabulary)})  # fmt: skip
    finally:
        web.stop()
    return {
        "questions": len(questions),
        "queries_sent": sent_total,
        "runs_with_restricted_evidence_kept_while_the_web_was_searched": under_test,
        "runs_with_web_evidence_kept": with_web,
        "queries_with_restricted_words": len(leaks["restricted"]),
        "share_of_queries_with_restricted_words": round(
            len(leaks["restricted"]) / max(1, sent_total), 4
        ),
        "queries_with_private_words": len(leaks["private"]),
        "control_private_variants_with_restricted_words": control,
        "leaks": leaks,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=Path("bench/results/web_firewall.json"))
    parser.add_argument("--paraphrases", default="bench/data/paraphrase/questions.jsonl")
    parser.add_argument(  # other products' docs: no workspace answer, the web is the only help
        "--readme-questions",
        nargs="+",
        default=[
            "bench/data/answers_dev/questions.jsonl",
            "bench/data/answers_heldout/questions.jsonl",
        ],
    )
    args = parser.parse_args()
    started = time.time()
    result = asyncio.run(evaluate(args))
    write(args.json, {"command": command_line("bench.web_firewall", args), **result}, started)


if __name__ == "__main__":
    main()
