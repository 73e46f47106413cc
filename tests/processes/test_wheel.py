"""The wheel: built from the checkout, installed into a fresh environment, run from there.

The dependencies are not installed again: the fresh environment reads the locked ones of this
environment through a ``.pth`` line (a path, so none of this environment's own ``.pth`` files —
the editable install of the checkout among them — runs there). ``seekgraph`` itself can only
come from the wheel, and every command runs outside the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: What the wheel is built from: the project file, the package and the folders it links.
SOURCES = ("pyproject.toml", "README.md", "seekgraph")
LAYERS = ("state", "providers", "sources", "nodes", "graph", "server")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed: its ``bin`` folder."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in SOURCES + LAYERS:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, symlinks=True, ignore=ignore)
        else:
            shutil.copy2(path, source / name)
    dist = tmp / "dist"
    dist.mkdir()
    # the PEP 517 hook a build frontend calls, with this environment's (locked) setuptools
    built = subprocess.run(
        [sys.executable, "-c", "import sys; from setuptools import build_meta as b; "
         "print(b.build_wheel(sys.argv[1]))", str(dist)],
        cwd=source, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    wheel = dist / built.stdout.split()[-1]

    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(
        subprocess.run(
            [str(bin_dir / "python"), "-c", purelib], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    before = set(os.listdir(site))
    subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    added = set(os.listdir(site)) - before
    assert added == {"seekgraph", "seekgraph-0.1.0.dist-info"}, sorted(added)
    installed_files = [p for p in (site / "seekgraph").rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in installed_files)
    print(f"\nwheel {wheel.stat().st_size} B, installed {size} B, top-level names {sorted(added)}")
    (site / "_seekgraph_test_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return bin_dir


def run_outside(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A command of the fresh environment, in ``cwd``, with nothing of the checkout on its path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env = {k: v for k, v in env.items() if not k.startswith(("SEEKGRAPH_", "OTEL_"))}
    env |= {"SEEKGRAPH_DATA_DIR": str(cwd / "data"), "PATH": f"{bin_dir}:{env['PATH']}"}
    return subprocess.run(
        [str(bin_dir / args[0]), *args[1:]],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_the_wheel_installs_one_name_and_answers_over_the_demo(
    installed: Path, tmp_path: Path
) -> None:
    where = run_outside(
        installed, tmp_path, "python", "-c",
        "import seekgraph.server.cli.main as m, seekgraph.sources.ingestion.workspace as w; "
        "print(m.__file__); print(w.demo_workspace())",
    )  # fmt: skip
    assert where.returncode == 0, where.stderr[-3000:]
    module, demo = where.stdout.split()
    assert Path(module).is_relative_to(installed.parent), module
    assert Path(demo).is_relative_to(installed.parent), demo

    done = run_outside(
        installed, tmp_path, "seekgraph", "ask", "How do I connect to the VPN from a new laptop?",
        "--user", "bob", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout)
    assert answer["mode"] == "extractive" and answer["status"] == "answered"
    assert any(c["doc_id"] == "kb/vpn-access" for c in answer["citations"]), answer


#: Loads each graph of a langgraph.json the way ``langgraph dev`` does (a module path and the
#: name of a factory it calls with the run's config), and prints its nodes.
LOAD_GRAPHS = """
import asyncio, importlib, json, sys

async def load(graphs):
    out = {}
    for name, spec in graphs.items():
        module, attr = spec.split(":")
        graph = await getattr(importlib.import_module(module), attr)({"configurable": {}})
        nodes = sorted(graph.get_graph(xray=True).nodes)
        out[name] = {"file": sys.modules[module].__file__, "nodes": nodes}
    return out

print(json.dumps(asyncio.run(load(json.load(open(sys.argv[1]))["graphs"]))))
"""


def test_the_installed_package_serves_the_graphs_of_langgraph_json(
    installed: Path, tmp_path: Path
) -> None:
    shutil.copy(REPO / "langgraph.json", tmp_path / "langgraph.json")
    done = run_outside(installed, tmp_path, "python", "-c", LOAD_GRAPHS, "langgraph.json")
    assert done.returncode == 0, done.stderr[-3000:]
    graphs = json.loads(done.stdout)
    assert set(graphs) == {"search", "quick", "reviewed", "research"}
    for name, graph in graphs.items():
        assert Path(graph["file"]).is_relative_to(installed.parent), (name, graph["file"])
        assert set(graph["nodes"]) - {"__start__", "__end__"}, (name, graph["nodes"])
    assert "search" in graphs["search"]["nodes"], graphs["search"]
