"""``accelerator/grad-scaler``: ``torch.cuda.amp.GradScaler`` -> ``torch.amp.GradScaler``.

Example::

    scaler = torch.cuda.amp.GradScaler()        scaler = torch.amp.GradScaler(_device.type)
    scaler = GradScaler("cuda", init_scale=8)   scaler = GradScaler(_device.type, init_scale=8)
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.rules.accelerator.autocast import _replace_device_arg

RULE_ID = "accelerator/grad-scaler"
DESCRIPTION = "torch.cuda.amp.GradScaler(...) -> torch.amp.GradScaler(_device.type, ...)."


class ReplaceGradScalerRule(MigrationRule):
    """Rewrites loss-scaler construction."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TOKENS = (
        Need.api("torch.cuda.amp.GradScaler"),
        Need(names=("torch", "amp", "GradScaler"), strings=("cuda",)),
    )

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = ctx.qname(original.func)
        if api == "torch.cuda.amp.GradScaler":
            args = [cst.Arg(ctx.device_type()), *updated.args]
            if len(args) > 1:
                args[0] = args[0].with_changes(
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                )
            new: cst.Call | None = updated.with_changes(
                func=ctx.torch_attr("amp.GradScaler"), args=args
            )
        elif api == "torch.amp.GradScaler":
            new = _replace_device_arg(original, updated, ctx, "device")
        else:
            return None
        if new is None:
            return None
        return ctx.fix(
            self,
            original,
            new,
            message="Scale losses on the prologue device.",
            api=api,
        )
