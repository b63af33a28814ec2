"""``accelerator/fused-optimizers``: ``torch.optim.<Opt>(..., fused=...)`` gets a drift row.

Nothing is rewritten: the flag is not CUDA-specific, but what it does depends on the device.

Example::

    opt = torch.optim.AdamW(params, lr=1e-3, fused=True)   # kept, with a drift row
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need

RULE_ID = "accelerator/fused-optimizers"
DESCRIPTION = "Drift: fused=/foreach= optimizers differ per device (kernels, rounding, support)."

_MESSAGE = (
    "Drift: a fused optimizer step exists only for some device types (CUDA, CPU, XPU, MPS in "
    "recent PyTorch; others raise at the first step), and fused, foreach and for-loop steps "
    "round differently, so the weights differ in the last bits from CUDA's. Pass fused=False "
    "on a device without a fused kernel."
)


class ReportFusedOptimizersRule(MigrationRule):
    """Reports ``fused=`` in torch optimizer constructors."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("fused",)
    TOKENS = (Need(names=("fused",)),)

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = ctx.qname(original.func)
        if api is None or not api.startswith("torch.optim."):
            return None
        for arg in original.args:
            if arg.keyword is None or arg.keyword.value != "fused":
                continue
            if isinstance(arg.value, cst.Name) and arg.value.value in ("False", "None"):
                return None
            ctx.report(self, arg, status="kept", message=_MESSAGE, api=f"{api}(fused=)")
        return None
