"""Can a judge learned over the shipped embedding models tell an answer from a near miss?

The extractive judge decides "answered or refused" from how close a question's embedding is
to a kept sentence's (issue 31). Cosine alone does not separate answering sentences from
near misses on the paraphrase set (``bench/results/own_words.md``, fifth part). This asks
whether a judge *trained* on question–sentence pairs does better, with the features a
bi-encoder classifier uses (``u*v``, ``|u-v|``, cosine; InferSent / Sentence-BERT's
classification objective) and a logistic regression, trained where labelled pairs exist:

- train: LoCoMo's chat questions of the first conversations — a positive per evidence message,
  negatives the conversation's closest other messages, or (``--matched``) those as close to
  the question as the evidence (for its unanswerable category 5, the closest messages);
  validated on the other conversations;
- measured: the paraphrase set's tuning half and the chat near-miss set — the sentence that
  holds an answerable question's fact, against the closest sentence an unanswerable question
  finds (the pair the judge must tell apart).

Reported: rank AUC (the chance a random answering pair scores above a random non-answering
one; 0.5 is a coin) of cosine and of the learned judge on each.

    python -m bench.pair_judge --locomo ../shared/data/locomo_chat --embedding minilm \
        --json bench/results/pair_judge_minilm.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.datasets import load
from bench.metrics import rank_auc
from bench.readme_corpus import readme
from bench.report import command_line, write
from seekgraph.providers.embeddings import Embedder, load_embedder
from seekgraph.providers.sentences import sentences

DATA = Path(__file__).parent / "data"
DEMO = Path(__file__).parents[1] / "sources" / "demo"
Array = npt.NDArray[np.float64]


def features(q: Array, p: Array) -> Array:
    """Pair features of unit vectors: elementwise product, absolute difference, cosine."""
    return np.hstack([q * p, np.abs(q - p), (q * p).sum(1, keepdims=True)])


def fit_logistic(x: Array, y: Array, l2: float, steps: int = 25) -> Array:
    """L2-regularised logistic regression by Newton's method; weights with the bias last."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    reg = np.full(xb.shape[1], l2)
    reg[-1] = 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(xb @ w)))
        grad = xb.T @ (p - y) + reg * w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(reg)
        w -= np.linalg.solve(hess, grad)
    return w


def predict(w: Array, x: Array) -> Array:
    """Probability of "answers" for each row of ``x``."""
    return 1 / (1 + np.exp(-(np.hstack([x, np.ones((len(x), 1))]) @ w)))


def locomo_pairs(
    embedder: Embedder, folder: Path, conversations: list[str], negatives: int, matched: bool
) -> tuple[Array, Array]:
    """Labelled pairs from LoCoMo's questions over ``conversations``.

    Negatives are the closest other messages, or with ``matched`` the messages whose cosine
    to the question is nearest each evidence message's (so cosine alone cannot separate
    them and the judge must learn from the pair's other features).
    """
    data = load(folder)
    rows: list[Array] = []
    labels: list[int] = []
    for conv in conversations:
        docs = [d for d in data.corpus if d.get("conversation") == conv]
        ids = [d["_id"] for d in docs]
        passages = np.asarray(embedder.embed_passages([d["text"] for d in docs]), np.float64)
        asked = [q for q in data.questions if q.get("conversation") == conv]
        queries = np.asarray(embedder.embed_queries([q["question"] for q in asked]), np.float64)
        for qi, q in enumerate(asked):
            order = np.argsort(-(passages @ queries[qi]))
            support = set(q.get("supporting_ids") or [])
            pos = [] if q.get("category") == 5 else [i for i, d in enumerate(ids) if d in support]
            misses = [int(i) for i in order if ids[i] not in support]
            if matched and pos:  # as close to the question as its evidence: cosine cannot tell
                sims = passages[misses] @ queries[qi]
                near = {
                    int(misses[j])
                    for p in pos
                    for j in np.argsort(np.abs(sims - passages[p] @ queries[qi]))[:negatives]
                }
                neg = sorted(near)
            else:
                neg = misses[:negatives]
            for i, label in [(i, 1) for i in pos] + [(i, 0) for i in neg]:
                rows.append(features(queries[qi : qi + 1], passages[i : i + 1])[0])
                labels.append(label)
    return np.asarray(rows), np.asarray(labels, np.float64)


def paraphrase_units() -> list[tuple[str, str]]:
    """(document id, sentence) for the demo workspace and the READMEs the set is over."""
    docs: dict[str, str] = {}
    for path in DEMO.rglob("*.md"):
        docs[str(path.relative_to(DEMO).with_suffix(""))] = path.read_text(encoding="utf-8")
    for line in (DEMO / "chat" / "messages.jsonl").read_text(encoding="utf-8").splitlines():
        message = json.loads(line)
        docs[f"chat/{message['channel']}/{message['id']}"] = message["text"]
    listed = (DATA / "paraphrase" / "packages.txt").read_text(encoding="utf-8").splitlines()
    for name in (line.strip() for line in listed):
        if name and not name.startswith("#"):
            docs[name] = readme(name)
    return [(doc, s) for doc, text in docs.items() for s in sentences(text) if len(s) > 15]


def paraphrase_pairs(
    embedder: Embedder, sets: list[str], half: str
) -> tuple[Array, Array, list[dict[str, Any]]]:
    """The pair each question's verdict turns on: its fact's sentence, or its closest miss."""
    units = paraphrase_units()
    vectors = np.asarray(embedder.embed_passages([s for _, s in units]), np.float64)
    asked = [
        q
        for name in sets
        for line in (DATA / name / "questions.jsonl").read_text(encoding="utf-8").splitlines()
        if (q := json.loads(line))["half"] == half
    ]
    queries = np.asarray(embedder.embed_queries([q["question"] for q in asked]), np.float64)
    rows, labels, shown = [], [], []
    for qi, q in enumerate(asked):
        sims = vectors @ queries[qi]
        if q["doc"]:
            holding = [
                i
                for i, (doc, text) in enumerate(units)
                if any(doc.startswith(d) for d in q["doc"]) and any(m in text for m in q["must"])
            ]
            if not holding:  # the fact spans sentences (a list, a code block): not a pair
                continue
            i = max(holding, key=lambda i: sims[i])
        else:
            i = int(np.argmax(sims))
        rows.append(features(queries[qi : qi + 1], vectors[i : i + 1])[0])
        labels.append(1 if q["doc"] else 0)
        shown.append({"id": q["_id"], "answers": bool(q["doc"]), "sentence": units[i][1][:100]})
    return np.asarray(rows), np.asarray(labels, np.float64), shown


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    """Train on LoCoMo, measure there and on the paraphrase pairs."""
    embedder = load_embedder(args.embedding, threads=1)
    conversations = sorted({d["conversation"] for d in load(args.locomo).corpus})
    train, held = (
        conversations[: args.train_conversations],
        conversations[args.train_conversations :],
    )
    x, y = locomo_pairs(embedder, args.locomo, train, args.negatives, args.matched)
    xv, yv = locomo_pairs(embedder, args.locomo, held, args.negatives, args.matched)
    px, py, shown = paraphrase_pairs(embedder, ["paraphrase", "paraphrase_chat"], "tune")
    out: dict[str, Any] = {
        "command": command_line("bench.pair_judge", args),
        "embedding": args.embedding,
        "locomo_pairs": {"train": len(y), "validation": len(yv), "positive_share": float(y.mean())},
        "paraphrase_pairs": {"answering": int(py.sum()), "near_misses": int(len(py) - py.sum())},
        "auc": {
            "cosine": {
                "locomo_validation": rank_auc(yv, xv[:, -1]),
                "paraphrase": rank_auc(py, px[:, -1]),
            }
        },
    }
    for l2 in args.l2:
        w = fit_logistic(x, y, l2)
        out["auc"][f"learned_l2_{l2:g}"] = {
            "locomo_validation": rank_auc(yv, predict(w, xv)),
            "paraphrase": rank_auc(py, predict(w, px)),
        }
    best = max(args.l2, key=lambda l2: out["auc"][f"learned_l2_{l2:g}"]["locomo_validation"])
    scores = predict(fit_logistic(x, y, best), px)
    out["paraphrase_scores"] = sorted(
        (
            {**s, "learned": round(float(p), 3), "cosine": round(float(c), 3)}
            for s, p, c in zip(shown, scores, px[:, -1], strict=True)
        ),
        key=lambda r: -r["learned"],
    )
    return out


def main() -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, required=True, help="the locomo_chat folder")
    parser.add_argument("--embedding", default="minilm", choices=["minilm", "e5"])
    parser.add_argument("--train-conversations", type=int, default=3)
    parser.add_argument("--negatives", type=int, default=5, help="closest misses per question")
    parser.add_argument(
        "--matched", action="store_true", help="negatives as close to the question as evidence"
    )
    parser.add_argument("--l2", type=float, nargs="+", default=[0.1, 1.0, 10.0])
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    started = time.time()
    write(args.json, evaluate(args), started)


if __name__ == "__main__":
    main()
