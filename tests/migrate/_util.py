"""Helpers for rule tests: run one rule (or a rule set) over a snippet, LibCST CodemodTest style."""

from __future__ import annotations

from textwrap import dedent

from tensorsight.migrate.rule import MigrationRule
from tensorsight.migrate.rulesets import load_ruleset
from tensorsight.migrate.selfcheck import check_introduced
from tensorsight.migrate.source import SourceResult, migrate_source

PROLOGUE = (
    "\n# tensorsight migrate: the accelerator PyTorch finds (CUDA, NPU, XPU, MPS, ...), "
    "else the CPU.\n"
    '_device = torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")\n'
)


def run(
    rules: type[MigrationRule] | str,
    before: str,
    *,
    unsafe: bool = False,
    target: str = "accelerator",
) -> SourceResult:
    """Apply one rule class, or a whole rule set by name, to ``before`` (dedented)."""
    instances = load_ruleset(rules).instantiate() if isinstance(rules, str) else [rules()]
    return migrate_source(
        dedent(before), instances, path="t.py", unsafe_fixes=unsafe, target=target
    )


def check(
    rules: type[MigrationRule] | str,
    before: str,
    after: str | None,
    *,
    unsafe: bool = False,
    statuses: list[tuple[str, str]] | None = None,
    target: str = "accelerator",
    allowed_imports: tuple[str, ...] = (),
) -> SourceResult:
    """Assert the rewrite of ``before`` is ``after`` (``None``: unchanged), self-check clean.

    ``statuses`` lists the expected ``(rule_id, status)`` of every site, in source order.
    """
    out = run(rules, before, unsafe=unsafe, target=target)
    expected = dedent(before) if after is None else dedent(after)
    assert out.new_code == expected, f"got:\n{out.new_code}"
    assert check_introduced(dedent(before), out.new_code, allowed_imports=allowed_imports) == ()
    if statuses is not None:
        assert [(s.rule_id, s.status) for s in out.sites] == statuses
    return out
