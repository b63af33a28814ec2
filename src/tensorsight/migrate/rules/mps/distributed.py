"""``mps/distributed``: MPS has no collective backend."""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need

RULE_ID = "mps/distributed"
DESCRIPTION = "torch.distributed process groups: MPS has no collective backend."


class ReportDistributedMpsRule(MigrationRule):
    """Reports process-group creation as unsupported on MPS."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("init_process_group",)
    TOKENS = (Need.api("torch.distributed.init_process_group"),)

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if ctx.qname(original.func) == "torch.distributed.init_process_group":
            ctx.report(
                self,
                original,
                status="unsupported",
                message="MPS has no collective backend: run one process, or use the gloo "
                "backend with CPU tensors for the collectives.",
            )
        return None
