"""The search graph's nodes, one per file, each ``async def verb_noun(state, runtime) -> dict``."""
