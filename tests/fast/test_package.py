"""What import-linter's contracts (``[tool.importlinter]``) cannot say about the package.

The contracts check the arrows between the layers, the server's rooms and cycles, inside
``seekgraph``. These check the name the layers are imported by everywhere (the product, the
tests, the benchmarks, the docs' scripts) and the server's loose modules.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAYERS = ("state", "providers", "sources", "nodes", "graph", "server")
#: Folders that hold no code of ours (or only links to it).
NOT_OURS = {"seekgraph", "build", "site"}


def python_files() -> list[Path]:
    out = []
    for top in sorted(REPO.iterdir()):
        if top.is_dir() and not top.is_symlink() and not top.name.startswith("."):
            if top.name not in NOT_OURS and not top.name.endswith(".egg-info"):
                out += [p for p in top.rglob("*.py") if "data" not in p.relative_to(REPO).parts]
    return out


def test_seekgraph_links_every_layer() -> None:
    links = {p.name: os.readlink(p) for p in (REPO / "seekgraph").iterdir() if p.is_symlink()}
    assert links == {layer: f"../{layer}" for layer in LAYERS}


def test_every_layer_is_imported_by_its_package_name() -> None:
    """``import nodes.x`` works from a checkout too, and loads a second copy of the module."""
    wrong = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            wrong += [
                f"{path.relative_to(REPO)}:{node.lineno}: {name}"
                for name in names
                if name.split(".")[0] in LAYERS
            ]
    assert not wrong, "import these as seekgraph.<layer>:\n" + "\n".join(wrong)


def test_the_server_is_split_into_rooms() -> None:
    """No run machinery, door or command left loose at the top of ``server/``."""
    loose = {p.stem for p in (REPO / "server").glob("*.py")} - {"__init__"}
    shared = {"app_state", "audit", "auth", "bootstrap", "caller", "images", "limits", "observe"}
    shared |= {"settings", "studio", "thread_ids"}
    assert loose <= shared, f"modules to place in a room: {sorted(loose - shared)}"


def test_sources_and_nodes_are_split_into_rooms() -> None:
    """At the top of ``sources/`` and ``nodes/``, only what every room shares; the rest in rooms."""
    shared = {"sources": {"base", "errors", "registry", "resilient"}, "nodes": set()}
    for layer, allowed in shared.items():
        loose = {p.stem for p in (REPO / layer).glob("*.py")} - {"__init__"}
        assert loose <= allowed, f"{layer}/: modules to place in a room: {sorted(loose - allowed)}"


#: What asks a chat model: the run's model, the model's type, structured output.
MODEL_NAMES = {"chat_model_for", "ChatModel", "BaseChatModel", "with_structured_output"}


def names_in(node: ast.AST) -> list[str]:
    """The names a syntax node says: a name, an attribute, what an import brings in and from."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [getattr(node, "module", None) or "", *(a.name for a in node.names)]
    return []


def test_the_research_nodes_ask_no_model_themselves() -> None:
    """The research room reaches a chat model only through the reader (``report_reader_for``).

    import-linter forbids the room the reader's modules and the model plumbing; this checks
    the names it cannot see: ``chat_model_for`` (``nodes.plumbing.services``, which the room
    may import) and LangChain's chat models, however imported.
    """
    asked = [
        f"{path.relative_to(REPO)}:{node.lineno}: {name}"
        for path in sorted((REPO / "nodes" / "research").glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        for name in names_in(node)
        if name in MODEL_NAMES or name.startswith("langchain_core.language_models")
    ]
    assert not asked, "ask the reader (report_reader_for) instead:\n" + "\n".join(asked)


def test_every_processes_module_has_its_measured_time_and_ci_hands_them_out_longest_first() -> None:
    """CI gives the processes and soak tiers' modules to one pool of workers longest first
    (``tests/<tier>/module_seconds.json``, read by ``tests/conftest.py``); a module left
    out would be taken for the longest, and one that no longer exists is stale."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for tier in ("processes", "soak"):
        measured = json.loads((root / f"tests/{tier}/module_seconds.json").read_text())["seconds"]
        modules = {p.name for p in (root / f"tests/{tier}").glob("test_*.py")}
        assert set(measured) == modules, (tier, set(measured) ^ modules)
    ci = (root / ".ci/run").read_text()
    assert "--no-loadscope-reorder" in ci and "tier processes+soak" in ci
