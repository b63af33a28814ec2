"""Migrate CUDA-only PyTorch code to device-neutral code, with a report.

Reading order for newcomers: :mod:`.model` (the report's shapes), :mod:`.api`
(:func:`migrate`), :mod:`.runner` (files, parallelism, per-file results), :mod:`.source`
(one file: which statements to rewrite, splicing, imports, positions), :mod:`.transform`
(the one LibCST traversal and ``RuleContext``), :mod:`.rule`, then one rule set under
``rules/`` (``accelerator`` first); :mod:`.report`, :mod:`.selfcheck`, :mod:`.trace` and
:mod:`.tensorflow` are independent leaves. The user guide is ``docs/migrate.md``.

Importing this package is cheap: LibCST loads only when a migration runs (the rule
classes and ``RULESETS`` are resolved lazily).
"""

from __future__ import annotations

import importlib
from typing import Any

from tensorsight.migrate.api import migrate
from tensorsight.migrate.model import (
    Changed,
    Failed,
    FileResult,
    MigrationReport,
    Site,
    Skipped,
    Unchanged,
    VerifyResult,
)

__all__ = [
    "RULESETS",
    "Changed",
    "Failed",
    "FileResult",
    "MigrationReport",
    "MigrationRule",
    "RuleSet",
    "Site",
    "Skipped",
    "Unchanged",
    "VerifyResult",
    "migrate",
]

_LAZY = {
    "RULESETS": "tensorsight.migrate.rulesets",
    "RuleSet": "tensorsight.migrate.rulesets",
    "MigrationRule": "tensorsight.migrate.rule",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        msg = f"module 'tensorsight.migrate' has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(module), name)
