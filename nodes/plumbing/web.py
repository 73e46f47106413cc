"""The web as the nodes see it: the pages a person named in their own words."""

from __future__ import annotations

import re

from seekgraph.sources.web.fetch import canonical_url
from seekgraph.state.schemas import SearchState

_URL = re.compile(r"https?://[^\s<>()\[\]\"']+", re.IGNORECASE)


def typed_urls(state: SearchState) -> list[str]:
    """Pages the person named in their own words, canonical, not read yet (web on only).

    Only these and the web engine's results are ever fetched: a URL found in private
    evidence is never requested (the request itself would tell its server about it).
    """
    if not state.get("outbound"):
        return []
    asked = state.get("asked")
    text = state["question"] if asked is None else asked
    done = set(state.get("documents_read", []))
    urls = (canonical_url(u.rstrip(".,;:!?")) for u in _URL.findall(text))
    return [u for u in dict.fromkeys(urls) if u not in done]
