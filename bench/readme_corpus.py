"""The README corpus: third-party packages' READMEs, kept as files in ``bench/data/readmes/``.

The benchmarks over "documents no one here wrote" (``bench.answers``, ``bench.paraphrase``,
``bench.pair_judge``) read these snapshots, never whatever release happens to be installed: a
new release's README must not change the numbers under them. Each snapshot is the long
description of one release on PyPI, byte for byte, with its licence files beside it; the
folder's ``README.md`` lists the releases.

    python -m bench.readme_corpus NAME [NAME ...]   # snapshot the installed releases

Taking a new snapshot changes a benchmark's corpus: re-run the benchmarks that read it and
record the numbers with the change.
"""

from __future__ import annotations

import argparse
import datetime
import shutil
from importlib import metadata
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "data" / "readmes"
INDEX_HEAD = """\
# READMEs of third-party packages, pinned

The corpus of `bench.answers`, `bench.paraphrase` (`corpus: readme`) and `bench.pair_judge`:
each `NAME.md` is the long description (the README) of one release of a package on PyPI,
copied byte for byte from the release's `*.dist-info/METADATA`, and `licenses/NAME/` holds the
licence files that release ships. Nobody on the seekgraph project wrote these texts.
Refresh one with `python -m bench.readme_corpus NAME` (it snapshots the installed release).

| package | release | licence | collected |
|---|---|---|---|
"""


def readme(distribution: str) -> str:
    """The pinned README of ``distribution`` (see ``bench/data/readmes/README.md``)."""
    path = CORPUS / f"{distribution}.md"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: snapshot it with `python -m bench.readme_corpus {distribution}`"
        )
    return path.read_text(encoding="utf-8")


def installed_readme(distribution: str) -> str:
    """The installed release's long description (its README)."""
    meta = metadata.metadata(distribution)
    body = meta.get_payload()  # type: ignore[attr-defined]
    return str(body or meta.get("Description") or "")


def snapshot(distribution: str, today: str) -> str:
    """Write the installed release's README and licences; its line for the index."""
    dist = metadata.distribution(distribution)
    (CORPUS / f"{distribution}.md").write_text(installed_readme(distribution), encoding="utf-8")
    licenses = CORPUS / "licenses" / distribution
    shutil.rmtree(licenses, ignore_errors=True)
    licenses.mkdir(parents=True)
    for file in dist.files or []:
        name = Path(str(file)).name
        if any(word in name.upper() for word in ("LICEN", "COPYING", "NOTICE", "AUTHORS")):
            shutil.copyfile(Path(str(file.locate())), licenses / name)
    meta = dist.metadata
    licence = meta.get("License-Expression") or meta.get("License") or "see licenses/"
    return f"| {distribution} | {dist.version} | {licence} | {today} |"


def main() -> None:
    parser = argparse.ArgumentParser(description="Snapshot installed packages' READMEs.")
    parser.add_argument("names", nargs="+", help="distributions to snapshot")
    args = parser.parse_args()
    CORPUS.mkdir(parents=True, exist_ok=True)
    index = CORPUS / "README.md"
    rows = {}
    if index.is_file():
        for line in index.read_text().splitlines():
            if line.startswith("| ") and not line.startswith(("| package", "|---")):
                rows[line.split("|")[1].strip()] = line
    today = datetime.date.today().isoformat()
    for name in args.names:
        rows[name] = snapshot(name, today)
        print(rows[name])
    index.write_text(INDEX_HEAD + "".join(f"{rows[n]}\n" for n in sorted(rows)))


if __name__ == "__main__":
    main()
