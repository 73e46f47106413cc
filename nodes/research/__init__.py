"""The research flow's nodes: they orchestrate a report; the reader judges its text.

Wired by ``graph/research.py``; the modules that are no node (``plan_checks``, ``budgets``,
``events``) serve only this flow. Every judgement about text (the plan, the gap questions,
the sections, the quote check) is the reader's (``nodes.reader.report_reader_for``).
"""
