"""`accelerator/availability`: torch.cuda.is_available/device_count -> torch.accelerator.*.

A per-process share of the devices, ``torch.cuda.device_count() // local_world_size``, is
0 on the CPU, so a script that gives each process ``range(rank * n, (rank + 1) * n)`` has
no device to put its model on; there each process gets one device, the CPU::

    n = torch.cuda.device_count() // w
    n = torch.accelerator.device_count() // w if torch.accelerator.is_available() else 1
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rules._base import RenameCallRule
from tensorsight.migrate.rules.accelerator import tables

RULE_ID = "accelerator/availability"
DESCRIPTION = "torch.cuda.is_available/device_count -> torch.accelerator.*."

_COUNT = "torch.cuda.device_count"


class ReplaceAvailabilityRule(RenameCallRule):
    """torch.cuda.is_available/device_count -> torch.accelerator.*."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TABLE = tables.AVAILABILITY

    def leave_BinaryOperation(
        self, original: cst.BinaryOperation, updated: cst.BinaryOperation, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        left = original.left
        if not (
            isinstance(original.operator, cst.FloorDivide)
            and isinstance(left, cst.Call)
            and ctx.qname(left.func) == _COUNT
            and updated.left is not left  # the call itself was rewritten
        ):
            return None
        share = updated.with_changes(lpar=[], rpar=[])
        new = ctx.guarded(share, cst.Integer("1"))
        if updated.lpar:
            new = new.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        ctx.drift(
            self,
            original,
            "Drift: a share of the devices per process; on the CPU each process now gets one "
            "device, the CPU (the count there is 0, which left no device to any process).",
            api="torch.cuda.device_count() // n",
        )
        return new
