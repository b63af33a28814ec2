"""``accelerator/cuda-method``: ``x.cuda()`` -> ``x.to(_device)``.

Safe when the receiver is known to be a tensor or module (built by a torch call or by a
``nn.Module`` subclass of the same file, or annotated as one); unsafe otherwise, since
another object's ``.cuda()`` may not have a ``.to()``.

Example::

    model = Net().cuda()                        model = Net().to(_device)
    x = x.cuda(non_blocking=True)               x = x.to(_device, non_blocking=True)   # unsafe
    y = y.cuda(1)                               y = y.to(torch.device(_device.type, 1))
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.transform import RuleContext

RULE_ID = "accelerator/cuda-method"
DESCRIPTION = "x.cuda(...) -> x.to(_device, ...); unsafe when x's type is unknown."


class ReplaceCudaMethodRule(MigrationRule):
    """Rewrites the tensor/module ``.cuda()`` method."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TOKENS = (Need(names=("cuda",)),)

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        func = original.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "cuda":
            return None
        if ctx.qname(func) is not None:  # torch.cuda(...) or an alias of a module: not a method
            return None
        if not isinstance(updated.func, cst.Attribute):
            return None
        index: cst.BaseExpression | None = None
        rest: list[cst.Arg] = []
        for arg in updated.args:
            if arg.keyword is None or arg.keyword.value == "device":
                index = arg.value
            else:
                rest.append(arg)
        device = ctx.device() if index is None else ctx.indexed_device(index)
        args = [cst.Arg(device), *rest]
        if rest:
            args[0] = args[0].with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        new = updated.with_changes(func=updated.func.with_changes(attr=cst.Name("to")), args=args)
        known = ctx.is_torch_value(func.value)
        return ctx.fix(
            self,
            original,
            new,
            updated=updated,
            api="torch.Tensor.cuda" if known else ".cuda",
            message="Move to the prologue device instead of CUDA.",
            safety="safe" if known else "unsafe",
            why_unsafe="the receiver may not be a tensor or module",
        )
