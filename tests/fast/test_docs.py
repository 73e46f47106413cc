"""The documentation site: its reference is what the code says, and it builds without a
broken link."""

import importlib.util
from dataclasses import fields
from pathlib import Path

from seekgraph.nodes.plumbing.context import GROUPS, Context
from seekgraph.server.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def generator():
    spec = importlib.util.spec_from_file_location("gen_reference", REPO / "docs/gen_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_is_current() -> None:
    page = (REPO / "docs/reference.md").read_text()
    assert page == generator().reference(), "regenerate it: python docs/gen_reference.py"


def test_the_reference_lists_every_setting_and_run_knob() -> None:
    page = (REPO / "docs/reference.md").read_text()
    for name in Settings.model_fields:
        assert f"| `SEEKGRAPH_{name.upper()}` |" in page, name
    for f in fields(Context):
        if f.name in GROUPS:
            for g in fields(GROUPS[f.name]):
                assert f"| `{f.name}.{g.name}` |" in page, f"{f.name}.{g.name}"
        else:
            assert f"| `{f.name}` |" in page, f.name
