"""``npu/import-torch-npu``: ``import torch_npu`` where torch code was migrated.

``torch_npu`` registers the ``npu`` device with PyTorch (recent versions also load it
automatically through the device-backend autoload mechanism; the explicit import makes it
work with older ones too).
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule

RULE_ID = "npu/import-torch-npu"
DESCRIPTION = "Add `import torch_npu` to migrated files that use torch."


class AddTorchNpuImportRule(MigrationRule):
    """Adds ``import torch_npu`` once per migrated file."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TOKENS = ()  # acts only where another rule found something

    def leave_Module(self, original: cst.Module, ctx: RuleContext) -> None:
        if "torch_npu" in ctx.facts.names or not ctx.findings:
            return
        if not any(b.qualified.startswith("torch") for b in ctx.facts.bindings.values()):
            return
        ctx.add_import("torch_npu")
        ctx.report(
            self,
            original,
            status="rewritten",
            safety="safe",
            api="torch_npu",
            message="Added `import torch_npu`, which registers the npu device with PyTorch.",
        )
