"""Target ``xpu`` (Intel GPUs, built into PyTorch): the accelerator rules plus XPU specifics."""

from __future__ import annotations

from tensorsight.migrate.rule import MigrationRule
from tensorsight.migrate.rules.accelerator import RULES as ACCELERATOR_RULES
from tensorsight.migrate.rules.xpu.float64 import WarnFloat64XpuRule
from tensorsight.migrate.rules.xpu.visible_devices import RenameVisibleDevicesXpuRule
from tensorsight.migrate.rulesets import RuleSet

__all__ = ["RULES", "RULESET"]

RULES: tuple[type[MigrationRule], ...] = (
    *ACCELERATOR_RULES,
    RenameVisibleDevicesXpuRule,
    WarnFloat64XpuRule,
)

RULESET = RuleSet(
    name="xpu",
    version="1",
    description="Intel GPU (xpu): accelerator rules + ZE_AFFINITY_MASK and float64 warnings.",
    rules=RULES,
)
