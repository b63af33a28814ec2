"""Every docstring example under src/ runs, as ``pytest --doctest-modules src/tensorsight`` would.

Examples that need heavy set-up (two dumps on disk) are marked ``# doctest: +SKIP`` in
place; everything else must print what the docstring says. Each module's examples run in a
fresh temporary working folder, so an example that writes files leaves nothing behind.
"""

from __future__ import annotations

import doctest
import importlib

import pytest

from tests.conftest import ROOT

SRC = ROOT / "src"
PACKAGE = SRC / "tensorsight"


def _modules_with_examples() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if ">>> " not in path.read_text(encoding="utf-8"):
            continue
        parts = path.relative_to(SRC).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = _modules_with_examples()


def test_the_package_has_examples_to_run():
    assert len(MODULES) >= 30  # 35 modules held examples when this test was written
    assert "tensorsight.summary.writer" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = [t for t in finder.find(module, name) if t.examples]
    assert tests, f"{name} holds '>>> ' but doctest finds no example in it"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    failures: list[str] = []
    for test in tests:
        result = runner.run(test, out=failures.append, clear_globs=True)
        if result.failed:
            failures.append(f"^ {test.name}: {result.failed} of {result.attempted} failed\n")
    assert not failures, "".join(failures)
