"""``accelerator/backend-knobs``: cuDNN and TF32 switches.

Example::

    torch.backends.cuda.matmul.allow_tf32 = True    torch.set_float32_matmul_precision("high")
    torch.backends.cudnn.benchmark = True           (kept: no effect off CUDA, reported)
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need
from tensorsight.migrate.rules.accelerator.tables import KNOBS

RULE_ID = "accelerator/backend-knobs"
DESCRIPTION = "allow_tf32 -> torch.set_float32_matmul_precision; cuDNN knobs kept and reported."

_TF32 = "torch.backends.cuda.matmul.allow_tf32"


class ReplaceBackendKnobsRule(MigrationRule):
    """Rewrites the CUDA matmul TF32 switch and reports cuDNN knobs."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("cudnn", "allow_tf32")
    TOKENS = tuple(Need.api(api) for api in (*KNOBS, _TF32))

    def leave_Assign(
        self, original: cst.Assign, updated: cst.Assign, ctx: RuleContext
    ) -> cst.BaseSmallStatement | None:
        if len(original.targets) != 1 or not isinstance(original.targets[0].target, cst.Attribute):
            return None  # `old = torch.backends...` reads the knob; only attributes are set
        api = ctx.qname(original.targets[0].target)
        if api in KNOBS:
            _, message = KNOBS[api]
            ctx.report(self, original, status="kept", message=message, api=api)
            return None
        if api != _TF32:
            return None
        value = original.value
        precision: cst.BaseExpression
        if isinstance(value, cst.Name) and value.value in ("True", "False"):
            precision = cst.SimpleString('"high"' if value.value == "True" else '"highest"')
        else:
            precision = cst.IfExp(
                test=updated.value,
                body=cst.SimpleString('"high"'),
                orelse=cst.SimpleString('"highest"'),
            )
        call = cst.Call(
            func=ctx.torch_attr("set_float32_matmul_precision"), args=[cst.Arg(precision)]
        )
        new = cst.Expr(call)
        fixed = ctx.fix(
            self,
            original,
            new,
            message="The device-neutral TF32 switch for float32 matmuls.",
            api=api,
        )
        is_false = isinstance(value, cst.Name) and value.value == "False"
        if fixed is new and not is_false:  # "highest" is every backend's default
            ctx.drift(self, original, _TF32_DRIFT, api=api)
        return fixed


_TF32_DRIFT = (
    'Drift: set_float32_matmul_precision is global, not CUDA-only: "high" also lets the CPU '
    "(oneDNN) and other backends compute float32 matmuls in reduced precision (TF32 or "
    "bfloat16 passes), so CPU results change too; cuDNN convolutions still follow "
    'torch.backends.cudnn.allow_tf32. Use "highest" where float32 results must stay exact.'
)
