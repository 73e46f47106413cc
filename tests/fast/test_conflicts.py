"""Which sentences of two documents disagree, and what the person is told to trust."""

from __future__ import annotations

import datetime as dt

from seekgraph.nodes.reader.conflicts import find_conflicts
from seekgraph.state.models import conflict_lines
from tests.factories import make_evidence

TODAY = dt.date(2026, 12, 1)


def _pair(a: str, b: str, a_date: str | None, b_date: str | None) -> list:
    return [
        (a, make_evidence("docs/vpn-guide#1", a, updated_at=a_date)),
        (b, make_evidence("docs/remote-work#3", b, updated_at=b_date)),
    ]


def test_code_attribute_paths_are_not_host_names_two_pages_disagree_on() -> None:
    said = _pair(
        "If the env doesn't exist in `import.meta.env`, e.g. `%NON_EXISTENT%`, it is ignored.",
        "To open a browser you like, set the env `process.env.BROWSER` (e.g. `firefox`).",
        "2026-11-02",
        "2026-11-02",
    )
    assert find_conflicts(said, TODAY) == []
    # a company's own hosts are hosts (a private top-level name)
    corp = _pair(
        "The VPN gateway for remote staff is vpn1.acme.corp since the move.",
        "The VPN gateway for remote staff is vpn2.acme.corp since the move.",
        "2026-11-02",
        "2026-11-20",
    )
    assert len(find_conflicts(corp, TODAY)) == 1


def test_one_authority_and_one_date_trusts_neither() -> None:
    a = "The VPN gateway for remote staff is vpn1.fernhill.example since the move."
    b = "The VPN gateway for remote staff is vpn2.fernhill.example since the move."
    (same,) = find_conflicts(_pair(a, b, "2026-11-02", "2026-11-02"), TODAY)
    assert same["trust"] == ""
    line = conflict_lines([same])[0]
    assert "Trust" not in line and "newer" not in line
    assert line.endswith("Both sources have the same authority and date: check which is right.")
    # a later date decides
    (dated,) = find_conflicts(_pair(a, b, "2026-11-02", "2026-11-20"), TODAY)
    assert dated["trust"] == "docs/remote-work#3"
    assert "the newer one is preferred" in conflict_lines([dated])[0]
