"""Target ``npu`` (Huawei Ascend through torch_npu): the accelerator rules plus NPU specifics."""

from __future__ import annotations

from tensorsight.migrate.rule import MigrationRule
from tensorsight.migrate.rules.accelerator import RULES as ACCELERATOR_RULES
from tensorsight.migrate.rules.npu.float64 import WarnFloat64NpuRule
from tensorsight.migrate.rules.npu.hccl_env import RenameNcclEnvRule
from tensorsight.migrate.rules.npu.import_torch_npu import AddTorchNpuImportRule
from tensorsight.migrate.rules.npu.jit_script import WarnJitScriptRule
from tensorsight.migrate.rules.npu.visible_devices import RenameVisibleDevicesRule
from tensorsight.migrate.rulesets import RuleSet

__all__ = ["RULES", "RULESET"]

RULES: tuple[type[MigrationRule], ...] = (
    *ACCELERATOR_RULES,
    RenameVisibleDevicesRule,
    RenameNcclEnvRule,
    WarnJitScriptRule,
    WarnFloat64NpuRule,
    AddTorchNpuImportRule,
)

RULESET = RuleSet(
    name="npu",
    version="1",
    description="Ascend NPU (torch_npu): accelerator rules + torch_npu import, HCCL, env vars.",
    rules=RULES,
    side_effect_imports=("torch_npu",),
)
