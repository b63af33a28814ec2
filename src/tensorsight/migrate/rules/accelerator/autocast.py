"""``accelerator/autocast``: AMP autocast on the prologue device, with a dtype warning.

Example::

    with torch.cuda.amp.autocast():              with torch.autocast(_device.type):
    with torch.autocast("cuda", dtype=bf16):     with torch.autocast(_device.type, dtype=bf16):

Semantic drift: without ``dtype=``, autocast uses float16 on CUDA but bfloat16 on the CPU
(and other defaults elsewhere); the report warns so you can pin the dtype.
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.rules._base import cuda_string
from tensorsight.migrate.transform import RuleContext

RULE_ID = "accelerator/autocast"
DESCRIPTION = "torch.cuda.amp.autocast / autocast('cuda') -> torch.autocast(_device.type)."

_DRIFT = (
    "Drift: without dtype=, autocast uses float16 on CUDA but bfloat16 on the CPU; "
    "pass dtype=torch.float16 or dtype=torch.bfloat16 to get the same numbers everywhere."
)


class ReplaceAutocastRule(MigrationRule):
    """Rewrites autocast context managers and decorators."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TOKENS = (
        Need.api("torch.cuda.amp.autocast"),
        Need(names=("torch", "autocast"), strings=("cuda",)),
    )

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = ctx.qname(original.func)
        new: cst.Call | None
        if api == "torch.cuda.amp.autocast":
            args = [cst.Arg(ctx.device_type()), *updated.args]
            if len(args) > 1:
                args[0] = args[0].with_changes(
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
                )
            new = updated.with_changes(func=ctx.torch_attr("autocast"), args=args)
        elif api in ("torch.autocast", "torch.amp.autocast"):
            new = _replace_device_arg(original, updated, ctx, "device_type")
            if new is None:
                return None
        else:
            return None
        if not any(a.keyword is not None and a.keyword.value == "dtype" for a in original.args):
            ctx.report(self, original.func, status="kept", message=_DRIFT, api=api)
        return ctx.fix(self, original, new, message="Autocast on the prologue device.", api=api)


def _replace_device_arg(
    original: cst.Call, updated: cst.Call, ctx: RuleContext, name: str
) -> cst.Call | None:
    """Replace a ``"cuda"`` first/``name=`` argument with ``_device.type``."""
    if len(original.args) != len(updated.args):
        return None
    for i, arg in enumerate(original.args):
        first = i == 0 and arg.keyword is None
        if (first or (arg.keyword is not None and arg.keyword.value == name)) and cuda_string(
            arg.value
        ) == "cuda":
            args = list(updated.args)
            args[i] = args[i].with_changes(value=ctx.device_type())
            return updated.with_changes(args=args)
    return None
