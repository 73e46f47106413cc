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

The research flow's nodes call the reader too: ``ReportReader`` (plan the report, ask the
gap questions again, write the sections, check them, read the names an answer gives a later
sub-question); ``report_reader_for`` picks its implementation by the same rule:

- ``ModelReportReader`` (``nodes.reader.report_model``): the model plans (told the corpus's
  topics), asks the gap questions and writes each section, then edits the report, each with
  structured output; the offline reader stands in for a step the model cannot take;
- ``OfflineReportReader`` (``nodes.reader.report_offline``): the parts the request names and
  the corpus's topics (``nodes.reader.report_plan``, ``nodes.reader.request_parts``), quotes
  chosen to fit the report's length (``nodes.reader.report_text``), and the check that every
  quote is one (``nodes.reader.report_check``), which both readers use.

The research nodes hold no language rules either, and neither kind of node asks for a chat
model itself.
"""

from __future__ import annotations

from seekgraph.nodes.plumbing.context import Context
from seekgraph.nodes.plumbing.services import Services, chat_model_for
from seekgraph.nodes.reader.base import STATUSES, Reader, Reply, ReportReader
from seekgraph.nodes.reader.model import ModelReader
from seekgraph.nodes.reader.offline import OfflineReader
from seekgraph.nodes.reader.report_model import ModelReportReader
from seekgraph.nodes.reader.report_offline import OfflineReportReader
from seekgraph.state.research import ResearchState, SubRun
from seekgraph.state.schemas import SearchState


def reader_for(services: Services, state: SearchState, ctx: Context) -> Reader:
    """The run's reader: the model's when one serves it (``chat_model_for``), else offline."""
    model = chat_model_for(services, state)
    if model is None:
        return OfflineReader(services, ctx)
    return ModelReader(model, state.get("model"), services, ctx)


def report_reader_for(
    services: Services, state: ResearchState | SubRun, ctx: Context
) -> ReportReader:
    """The research run's reader, by ``reader_for``'s rule: the model's, else offline.

    The model's calls carry the run's trace id.
    """
    model = chat_model_for(services, state)  # type: ignore[arg-type]
    if model is None:
        return OfflineReportReader(services, ctx)
    model = model.with_config(metadata={"trace_id": state.get("trace_id", "")})
    return ModelReportReader(model, services, ctx)


__all__ = [
    "STATUSES",
    "ModelReader",
    "ModelReportReader",
    "OfflineReader",
    "OfflineReportReader",
    "Reader",
    "ReportReader",
    "Reply",
    "reader_for",
    "report_reader_for",
]
