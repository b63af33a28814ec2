"""Target ``mps`` (Apple GPUs): the accelerator rules plus MPS limits (no float64, no
collectives)."""

from __future__ import annotations

from tensorsight.migrate.rule import MigrationRule
from tensorsight.migrate.rules.accelerator import RULES as ACCELERATOR_RULES
from tensorsight.migrate.rules.mps.distributed import ReportDistributedMpsRule
from tensorsight.migrate.rules.mps.float64 import WarnFloat64MpsRule
from tensorsight.migrate.rulesets import RuleSet

__all__ = ["RULES", "RULESET"]

RULES: tuple[type[MigrationRule], ...] = (
    *ACCELERATOR_RULES,
    WarnFloat64MpsRule,
    ReportDistributedMpsRule,
)

RULESET = RuleSet(
    name="mps",
    version="1",
    description="Apple GPU (mps): accelerator rules + float64 and distributed limits.",
    rules=RULES,
)
