"""Docs stay true: every relative link in the Markdown docs points at a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCS = sorted(
    [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "CHANGELOG.md",
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "benchmarks").glob("*.md"),
        *(ROOT / "src").rglob("README.md"),
    ]
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path):
    assert doc.is_file()
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (doc.parent / target.split("#")[0]).resolve()
        assert path.exists(), f"{doc.name}: broken link {target}"


def test_architecture_map_names_every_top_level_module():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    src = ROOT / "src" / "tensorsight"
    for entry in sorted(src.iterdir()):
        if entry.name.startswith("__") or entry.name == "py.typed":
            continue
        assert entry.name in text, f"docs/architecture.md does not mention {entry.name}"


def test_architecture_map_names_only_modules_that_exist():
    """Every path in the first column of docs/architecture.md's module table exists: a
    ``folder/file`` entry sets the folder for the bare names after it in the same cell."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("## Modules", 1)[1].split("\n## ", 1)[0]
    src = ROOT / "src" / "tensorsight"
    missing = []
    for line in table.splitlines():
        if not line.startswith("| `"):
            continue
        folder = package = ""
        for name in re.findall(r"`([^`]+)`", line.split(" | ")[0]):
            name = name.rstrip("/")
            if "<" in name or "{" in name:  # a pattern: rules/<ruleset>/
                continue
            if "/" in name:
                if package and not (src / name.split("/", 1)[0]).exists():
                    name = f"{package}/{name}"  # kinds/x.py after summary/...: summary/kinds
                package = package or name.split("/", 1)[0]
                folder = name.rsplit("/", 1)[0] if "." in name.rsplit("/", 1)[1] else name
                path = name
            else:
                path = f"{folder}/{name}" if folder else name
            top = path.split("/", 1)[0]
            base = ROOT if top in {"web", "examples", "tests", "benchmarks"} else src
            if not (base / path).exists():
                missing.append(path)
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"
