"""``accelerator/triton``: Triton kernels are listed for review (not rewritten).

A ``@triton.jit`` kernel runs where a Triton backend exists (CUDA, ROCm, Intel XPU; Ascend
NPU through triton-ascend) but not on the CPU: keep a PyTorch fallback for it.
"""

from __future__ import annotations

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need

RULE_ID = "accelerator/triton"
DESCRIPTION = "@triton.jit kernels: listed, with the backends that can run them."


class ReportTritonKernelsRule(MigrationRule):
    """Reports Triton kernels."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("triton",)
    TOKENS = (Need.api("triton.jit"), Need.api("triton.autotune"))

    def leave_Decorator(
        self, original: cst.Decorator, updated: cst.Decorator, ctx: RuleContext
    ) -> cst.Decorator | None:
        deco = original.decorator
        func = deco.func if isinstance(deco, cst.Call) else deco
        api = ctx.qname(func)
        if api in ("triton.jit", "triton.autotune"):
            ctx.report(
                self,
                original,
                status="manual",
                api=api,
                message="Triton kernel: runs on CUDA, ROCm and XPU (NPU via triton-ascend) but "
                'not on the CPU; call a PyTorch fallback when `_device.type == "cpu"`.',
            )
        return None
