"""``accelerator/is-cuda``: ``x.is_cuda`` -> ``x.device.type != "cpu"`` (unsafe).

"Is it on CUDA?" in CUDA-only code means "is it on the accelerator?". The fix is unsafe
unless ``x`` is known to be a tensor or module: another object's ``is_cuda`` may mean
something else.
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need

RULE_ID = "accelerator/is-cuda"
DESCRIPTION = 'x.is_cuda -> x.device.type != "cpu" (unsafe when x\'s type is unknown).'


class ReplaceIsCudaRule(MigrationRule):
    """Rewrites the ``is_cuda`` property."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("is_cuda",)
    TOKENS = (Need(names=("is_cuda",)),)

    def leave_Attribute(
        self, original: cst.Attribute, updated: cst.Attribute, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        if original.attr.value != "is_cuda" or ctx.qname(original) is not None:
            return None
        device_type = cst.Attribute(
            value=cst.Attribute(value=updated.value, attr=cst.Name("device")), attr=cst.Name("type")
        )
        new = cst.Comparison(
            left=device_type,
            comparisons=[cst.ComparisonTarget(cst.NotEqual(), cst.SimpleString('"cpu"'))],
        )
        known = ctx.is_torch_value(original.value)
        return ctx.fix(
            self,
            original,
            new,
            updated=updated,
            api="torch.Tensor.is_cuda",
            message="Test for an accelerator device rather than CUDA.",
            safety="safe" if known else "unsafe",
            why_unsafe="the receiver may not be a tensor",
        )
