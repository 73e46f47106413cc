"""Every benchmark writes its result the same way: JSON for scripts, Markdown for people.

Both files name the command that produced them, the machine and the time taken.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any


def command_line(module: str, args: argparse.Namespace) -> str:
    """The command that reproduces a run (flags as typed, defaults included)."""
    parts = [f"python -m {module}"]
    for key, value in vars(args).items():
        if value is None or value is False or value == 0:
            continue
        flag = f"--{key.replace('_', '-')}"
        if isinstance(value, list | tuple):
            value = " ".join(str(v) for v in value)
        parts.append(flag if value is True else f"{flag} {value}")
    return " ".join(parts)


def markdown(out: dict[str, Any]) -> str:
    """A readable page: the command, a table of systems × metrics, then everything else."""
    lines = [f"# {Path(str(out.get('data', out['command']))).name}", "", f"`{out['command']}`", ""]
    systems = out.get("systems")
    if isinstance(systems, dict) and systems:
        metrics = list(dict.fromkeys(m for s in systems.values() for m in s))
        lines += ["| system | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 1) + "|"]
        for name, values in systems.items():
            cells = ["" if values.get(m) is None else str(values[m]) for m in metrics]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    for key, value in out.items():
        if key in ("command", "systems"):
            continue
        text = value if isinstance(value, str | int | float) else json.dumps(value)
        lines.append(f"- **{key}**: {text}")
    return "\n".join(lines) + "\n"


def write(path: Path, out: dict[str, Any], started: float) -> None:
    """Add the machine and timing, write ``path`` (JSON) and its ``.md`` twin, print the JSON."""
    out = {
        **out,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "took_seconds": round(time.time() - started, 1),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(out, indent=2, ensure_ascii=False)
    path.write_text(text + "\n")
    path.with_suffix(".md").write_text(markdown(out))
    print(text)
