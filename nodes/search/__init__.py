"""The search flow's nodes, one per file (``graph/search.py``, ``graph/quick.py``)."""
