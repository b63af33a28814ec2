"""Self-check of migrated code: it compiles, and adds no undefined names or unused imports.

"Compiles" means :func:`compile`, not only :func:`ast.parse`: the parser accepts code that
the compiler rejects (a repeated keyword argument, ``nonlocal`` without a binding), and
such a file would fail at import.

The check runs pyflakes on the original and the migrated text and reports only what the
migration introduced, so problems the project already had are not blamed on the rules.
"""

from __future__ import annotations

import ast
from collections import Counter

from tensorsight._lazy import lazy_import

__all__ = ["check_introduced", "compile_problem"]

_KINDS = {"UndefinedName": "undefined name", "UnusedImport": "unused import"}


def compile_problem(code: str, filename: str = "<migrated>") -> str | None:
    """Why ``code`` does not compile, as one sentence, or ``None`` when it does.

    Example:
        >>> compile_problem("f(a=1, a=2)\\n")
        'does not compile: keyword argument repeated: a (line 1)'
    """
    try:
        compile(code, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:  # IndentationError and TabError are SyntaxErrors too
        return f"does not compile: {exc.msg} (line {exc.lineno})"
    except ValueError as exc:  # a NUL byte in the source
        return f"does not compile: {exc}"
    return None


def _problems(code: str, filename: str) -> Counter[tuple[str, str]]:
    checker_mod = lazy_import("pyflakes.checker", extra="migrate", needed_by="migrate self-check")
    tree = ast.parse(code, filename=filename)
    checker = checker_mod.Checker(tree, filename=filename)
    found: Counter[tuple[str, str]] = Counter()
    for message in checker.messages:
        kind = _KINDS.get(type(message).__name__)
        if kind is not None:
            found[(kind, str(message.message_args[0]))] += 1
    return found


def check_introduced(
    old_code: str,
    new_code: str,
    *,
    filename: str = "<migrated>",
    allowed_imports: tuple[str, ...] = (),
    touched: frozenset[str] | None = None,
) -> tuple[str, ...]:
    """Problems in ``new_code`` that ``old_code`` did not have.

    Args:
        old_code: The original source.
        new_code: The migrated source.
        filename: For messages.
        allowed_imports: Modules imported for their side effects (``torch_npu``), which are
            not reported as unused.
        touched: The names the migration removed or introduced, when known: a problem about
            any other name cannot be new, so the original is checked only when needed.

    Returns:
        Sentences such as ``"introduces undefined name '_device'"``; empty when clean.

    Example:
        >>> check_introduced("import os\\n", "import os\\nx = y\\n")
        ("introduces undefined name 'y'",)
    """
    problem = compile_problem(new_code, filename)
    if problem is not None:
        return (f"migrated code {problem}",)
    after = _problems(new_code, filename)
    if touched is not None:
        after = Counter({k: n for k, n in after.items() if k[1].split(".")[0] in touched})
    if not after:
        return ()  # the common case: no need to check the original
    try:
        before = _problems(old_code, filename)
    except SyntaxError:
        before = Counter()
    out = []
    for (kind, name), count in sorted(after.items()):
        if kind == "unused import" and name.split(".")[0] in allowed_imports:
            continue
        if count > before.get((kind, name), 0):
            out.append(f"introduces {kind} {name!r}")
    return tuple(out)
