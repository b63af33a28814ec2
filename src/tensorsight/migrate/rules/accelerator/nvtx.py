"""``accelerator/nvtx``: NVTX ranges -> ``torch.profiler.record_function``.

Example::

    with torch.cuda.nvtx.range("fwd"):          with torch.profiler.record_function("fwd"):
    torch.cuda.nvtx.range_push("fwd")           (manual: wrap the region in record_function)
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.rules.accelerator.tables import NVTX, NVTX_MANUAL

RULE_ID = "accelerator/nvtx"
DESCRIPTION = "torch.cuda.nvtx.range -> torch.profiler.record_function; push/pop reported."


class ReplaceNvtxRule(MigrationRule):
    """Rewrites NVTX range context managers; reports push/pop pairs."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("nvtx",)
    TOKENS = tuple(Need.api(api) for api in (*NVTX, *NVTX_MANUAL))

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = ctx.qname(original.func)
        if api in NVTX:
            new = updated.with_changes(func=ctx.torch_attr(NVTX[api]))
            return ctx.fix(
                self, original, new, message="Profiler ranges that work on every device."
            )
        if api in NVTX_MANUAL:
            ctx.report(self, original, status="manual", message=NVTX_MANUAL[api])
        return None
