"""The graphs' nodes, one per file, each ``async def verb_noun(state, runtime) -> dict``.

One room per flow: ``search`` and ``research`` hold the nodes each flow's graph wires (and,
in ``research``, how its plan and report are written); ``reader`` judges and writes text (a
model or offline); ``plumbing`` is what every flow's nodes use (``Context``, ``Services``,
admission, prompts, model decisions, views of the evidence). No node imports another node,
and neither flow imports the other: what two nodes share lives in a module that is no node.
"""
