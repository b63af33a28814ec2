"""``accelerator/ddp-device-ids``: ``DDP(..., device_ids=..., output_device=...)`` off the CPU only.

``DistributedDataParallel`` raises when ``device_ids`` or ``output_device`` is given for a
module on the CPU ("device_ids ... must be None for CPU modules"), so CUDA code that
passes ``device_ids=[rank]`` cannot run on the CPU after migration. The fix keeps the
arguments where the prologue found an accelerator and passes ``None`` on the CPU, which is
what the CPU needs: it is right on every device.

Example::

    DDP(model, device_ids=[rank])
    DDP(model, device_ids=[rank] if _device.type != "cpu" else None)
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need

RULE_ID = "accelerator/ddp-device-ids"
DESCRIPTION = "DDP device_ids/output_device -> the same off the CPU, None on the CPU."

_DDP = (
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
)
#: Argument name -> its position in ``DistributedDataParallel(module, device_ids, output_device)``.
_SLOTS = {"device_ids": 1, "output_device": 2}


def off_cpu(ctx: RuleContext, value: cst.BaseExpression, cpu: cst.BaseExpression) -> cst.IfExp:
    """``value if _device.type != "cpu" else cpu`` (parenthesised)."""
    test = cst.Comparison(
        left=ctx.device_type(),
        comparisons=[cst.ComparisonTarget(cst.NotEqual(), cst.SimpleString('"cpu"'))],
    )
    return cst.IfExp(
        test=test, body=value, orelse=cpu, lpar=[cst.LeftParen()], rpar=[cst.RightParen()]
    )


class GuardDdpDeviceIdsRule(MigrationRule):
    """Passes DDP's ``device_ids``/``output_device`` only when the device is not the CPU."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("device_ids", "output_device", "DistributedDataParallel")
    TOKENS = tuple(Need.api(api) for api in _DDP)

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if ctx.qname(original.func) not in _DDP or len(original.args) != len(updated.args):
            return None
        args = list(updated.args)
        changed = False
        for i, arg in enumerate(original.args):
            if arg.star:
                break
            name = arg.keyword.value if arg.keyword is not None else None
            slot = name if name in _SLOTS else None
            if name is None:
                slot = next((k for k, pos in _SLOTS.items() if pos == i), None)
            if slot is None or _is_none(arg.value):
                continue
            new = off_cpu(ctx, updated.args[i].value, cst.Name("None"))
            fixed = ctx.fix(
                self,
                arg.value,
                new.with_changes(lpar=[], rpar=[]),  # an argument needs no parentheses
                message=f"DDP refuses `{slot}` for a module on the CPU; pass it only on an "
                "accelerator.",
                api=f"torch.nn.parallel.DistributedDataParallel({slot}=...)",
            )
            args[i] = args[i].with_changes(value=fixed)
            changed = True
        return updated.with_changes(args=args) if changed else None


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"
