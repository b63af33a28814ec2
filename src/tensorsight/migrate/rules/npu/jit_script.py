"""``npu/jit-script``: warn that torch_npu turns ``torch.jit.script`` into a no-op."""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need

RULE_ID = "npu/jit-script"
DESCRIPTION = "Drift: torch_npu disables torch.jit.script (scripted code runs eagerly)."

_MESSAGE = (
    "Drift: torch_npu replaces torch.jit.script with a pass-through, so this code runs "
    "eagerly on the NPU; use torch.compile for graph capture."
)


class WarnJitScriptRule(MigrationRule):
    """Reports ``torch.jit.script`` as a call or a decorator."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("script",)
    TOKENS = (Need.api("torch.jit.script"),)

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if ctx.qname(original.func) == "torch.jit.script":
            ctx.report(self, original, status="kept", message=_MESSAGE)
        return None

    def leave_Decorator(
        self, original: cst.Decorator, updated: cst.Decorator, ctx: RuleContext
    ) -> cst.Decorator | None:
        if ctx.qname(original.decorator) == "torch.jit.script":
            ctx.report(self, original, status="kept", message=_MESSAGE, api="torch.jit.script")
        return None
