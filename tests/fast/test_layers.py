"""The layers docs/flows.md names: server → graph → nodes → (sources, providers) → state."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("state", "providers", "sources", "nodes", "graph", "server")
#: What each layer may import of ours (anything lower).
ALLOWED = {
    "state": set(),
    "providers": {"state"},
    "sources": {"state", "providers"},
    "nodes": {"state", "providers", "sources"},
    "graph": {"state", "providers", "sources", "nodes"},
    "server": {"graph"},
}
#: The composition root builds services and graphs: the one server module below graph/.
COMPOSITION_ROOTS = {"server.bootstrap", "server.studio", "server.cli.admin"}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Modules of ours imported by ``path`` (type-checking-only imports excluded)."""
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for s in node.body for n in ast.walk(s)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m.split(".")[0] in PACKAGES}


def modules() -> dict[str, set[str]]:
    graph = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            graph[module_name(path)] = imports(path)
    return graph


def test_imports_point_downward() -> None:
    wrong = []
    for module, deps in modules().items():
        layer = module.split(".")[0]
        allowed = ALLOWED[layer] | {layer}
        if module in COMPOSITION_ROOTS:
            allowed = set(PACKAGES)
        wrong += [f"{module} → {d}" for d in deps if d.split(".")[0] not in allowed]
    assert not wrong, "imports that point up or skip the graph layer:\n" + "\n".join(wrong)


def test_no_import_cycles() -> None:
    graph = modules()
    known = set(graph)
    try:
        TopologicalSorter(
            {m: {d for d in deps if d in known} for m, deps in graph.items()}
        ).prepare()
    except CycleError as exc:
        raise AssertionError(f"import cycle: {' → '.join(exc.args[1])}") from None


#: The server's rooms, and which others each may use: the run machinery knows neither HTTP nor
#: the command line; the doors may start runs; the command line may start either.
ROOMS = {
    "server.runs": set(),
    "server.http": {"server.runs"},
    "server.cli": {"server.runs", "server.http"},
}


def test_the_run_machinery_knows_no_door() -> None:
    wrong = []
    for module, deps in modules().items():
        room = next((r for r in ROOMS if module == r or module.startswith(r + ".")), None)
        if room is None:
            continue
        for dep in deps:
            other = next((r for r in ROOMS if dep == r or dep.startswith(r + ".")), None)
            if other is not None and other != room and other not in ROOMS[room]:
                wrong.append(f"{module} → {dep}")
    assert not wrong, "a server room imports one it may not:\n" + "\n".join(wrong)


def test_the_server_is_split_into_rooms() -> None:
    """No run machinery, door or command left loose at the top of ``server/``."""
    loose = {p.stem for p in (REPO / "server").glob("*.py")} - {"__init__"}
    shared = {"app_state", "audit", "auth", "bootstrap", "caller", "images", "limits", "observe"}
    shared |= {"settings", "studio", "thread_ids"}
    assert loose <= shared, f"modules to place in a room: {sorted(loose - shared)}"


#: The nodes whose steps judge text: grading, the verdict, the answer, its check.
JUDGING_NODES = ("nodes.filter_stages", "nodes.evaluate", "nodes.integrate", "nodes.check_answer")
#: What judges text besides the reader's interface: its implementations and their rules, and
#: the model plumbing the LLM reader owns.
JUDGES = ("nodes.reader.", "nodes.llm", "nodes.decisions", "nodes.attribution", "nodes.conflicts")


def test_the_judging_nodes_reach_text_only_through_the_reader() -> None:
    """ARCHITECTURE: "The nodes orchestrate; the reader judges" (``nodes.reader.reader_for``)."""
    graph = modules()
    wrong = [f"{m} → {d}" for m in JUDGING_NODES for d in graph[m] if d.startswith(JUDGES)]
    assert not wrong, "a node judging text itself, not through the reader:\n" + "\n".join(wrong)
