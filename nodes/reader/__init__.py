"""The reader: every judgement about text the graph makes, by a model or offline.

Nodes orchestrate; the reader judges. ``write`` turns the kept evidence into a ``Reply`` with
a ``status`` a program can act on:

- ``answered`` — the reply states what was asked, every claim cited;
- ``passages`` (offline only) — no confident answer: the closest passages, quoted whole;
- ``partial`` (LLM only) — the model answered part and said which part is missing, or a
  sentence of its reply was dropped because the passage it cites does not hold it;
- ``not_found`` — nothing relevant was retrieved, or the model said the sources do not answer.

The graph's nodes call one interface, ``Reader`` (write the query variants, grade passages,
judge whether the evidence answers, write the answer, check it); ``reader_for`` picks its
implementation for a run:

- ``ModelReader`` (``nodes.reader.model``) when a chat model serves the run: the model
  decides, with structured output; ``nodes.reader.guard`` overrides it only on what a program
  can check exactly, and every change is recorded on the run;
- ``OfflineReader`` (``nodes.reader.offline``) otherwise (extractive mode, or once the run's
  tokens are spent): word coverage and the quotes an answer would give
  (``nodes.reader.coverage``, ``nodes.reader.quote_verdict`` and the extractive modules they
  build on); it answers only when it is sure, and otherwise shows passages
  (``nodes.reader.passages``).
"""

from __future__ import annotations

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import Services, chat_model_for
from seekgraph.nodes.reader.base import STATUSES, Reader, Reply
from seekgraph.nodes.reader.model import ModelReader
from seekgraph.nodes.reader.offline import OfflineReader
from seekgraph.state.schemas import SearchState


def reader_for(services: Services, state: SearchState, ctx: Context) -> Reader:
    """The run's reader: the model's when one serves it (``chat_model_for``), else offline."""
    model = chat_model_for(services, state)
    if model is None:
        return OfflineReader(services, ctx)
    return ModelReader(model, state.get("model"), services, ctx)


__all__ = ["STATUSES", "ModelReader", "OfflineReader", "Reader", "Reply", "reader_for"]
