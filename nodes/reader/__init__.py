"""The reader: every judgement about text the graph makes, by a model or offline.

Nodes orchestrate; the reader judges. ``write`` turns the kept evidence into a ``Reply`` with
a ``status`` a program can act on:

- ``answered`` — the reply states what was asked, every claim cited;
- ``passages`` (offline only) — no confident answer: the closest passages, quoted whole;
- ``partial`` (LLM only) — the model answered part and said which part is missing, or a
  sentence of its reply was dropped because the passage it cites does not hold it;
- ``not_found`` — nothing relevant was retrieved, or the model said the sources do not answer.

The LLM reader (``nodes.reader.guard``) lets the model decide and overrides it only on what a
program can check exactly; the offline reader (``nodes.reader.passages`` and the extractive
modules it builds on) answers only when it is sure, and otherwise shows passages.
"""

from nodes.reader.base import STATUSES, Reply

__all__ = ["STATUSES", "Reply"]
