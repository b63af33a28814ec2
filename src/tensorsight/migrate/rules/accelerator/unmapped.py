"""``accelerator/unmapped``: any other ``torch.cuda`` API, so that nothing is missed.

Runs last: a ``torch.cuda.*`` call or attribute that no earlier rule handled is reported as
``manual`` with advice to guard it, never silently left behind.
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need

RULE_ID = "accelerator/unmapped"
DESCRIPTION = "Every other torch.cuda API: reported for review with a guard to add."

_ADVICE = (
    "No device-neutral equivalent is known: run it only on CUDA "
    '(`if _device.type == "cuda":`) or find the backend\'s own API with '
    "`torch.get_device_module(_device)`."
)


class ReportUnmappedCudaRule(MigrationRule):
    """Reports leftover ``torch.cuda`` uses."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TOKENS = (Need.api("torch.cuda"),)

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = ctx.qname(original.func)
        if api is not None and api.startswith("torch.cuda.") and not ctx.is_claimed(original):
            ctx.report(self, original, status="manual", message=_ADVICE, api=api)
        return None

    def leave_Attribute(
        self, original: cst.Attribute, updated: cst.Attribute, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = ctx.qname(original)
        if api is not None and api.startswith("torch.cuda.") and not ctx.is_claimed(original):
            ctx.report(self, original, status="manual", message=_ADVICE, api=api, weak=True)
        return None
