"""The structure reads as the README says: server → graph → nodes → (sources, providers) → state."""

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
COMPOSITION_ROOTS = {"server.bootstrap", "server.studio", "server.cli_admin"}


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


def test_no_module_over_400_lines() -> None:
    long = {
        module_name(p): n
        for package in (*PACKAGES, "bench")
        for p in (REPO / package).rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 400
    }
    assert not long, long
