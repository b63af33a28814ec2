"""Library code never prints: only command-line modules write to stdout or stderr.

Everything else reports through :mod:`warnings` or :mod:`logging` (rule 5 of
CONTRIBUTING.md), so a program that embeds tensorsight chooses what reaches its terminal.
"""

from __future__ import annotations

import ast

from tests.conftest import ROOT

PACKAGE = ROOT / "src" / "tensorsight"
# The child side of `tensorsight dump`: code the command runs inside the recorded process,
# whose error lines are that command's output.
COMMAND_HALVES = {"capture/_hook.py", "capture/_bootstrap/sitecustomize.py"}


def _writes(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        prints = isinstance(func, ast.Name) and func.id == "print"
        writes = (
            isinstance(func, ast.Attribute)
            and func.attr == "write"
            and isinstance(func.value, ast.Attribute)
            and func.value.attr in ("stdout", "stderr")
        )
        if prints or writes:
            lines.append(node.lineno)
    return lines


def test_the_scanner_sees_print_and_stream_writes():
    code = "print(1)\nimport sys\nsys.stderr.write('x')\nsys.stdout.write('y')\nf.write('z')\n"
    assert _writes(ast.parse(code)) == [1, 3, 4]


def test_only_command_line_modules_print():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if path.name == "cli.py" or rel in COMMAND_HALVES:
            continue
        offenders += [f"{rel}:{n}" for n in _writes(ast.parse(path.read_text(encoding="utf-8")))]
    assert offenders == []
    assert all((PACKAGE / rel).is_file() for rel in COMMAND_HALVES)
