"""The research flow's nodes, and how its plan and its report are written.

Wired by ``graph/research.py``; the modules that are no node (``plan_checks``, ``report_text``,
``llm``, ``budgets``, ``events``) serve only this flow.
"""
