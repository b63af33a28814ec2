"""``accelerator/unmapped``: any other ``torch.cuda`` API, so that nothing is missed.

Runs last: a ``torch.cuda.*`` call or attribute that no earlier rule handled is reported as
``manual`` with advice to guard it, never silently left behind. So are the CUDA values no
other rule could place: a string literal ``"cuda"``, ``"cuda:N"``, ``f"cuda:{i}"`` or
``"nccl"`` left as it was (``os.environ.get("DEVICE", "cuda")``, a parameter's default
``device="cuda"``, ``("cuda:0",) + args``), and ``ProfilerActivity.CUDA``.
"""

from __future__ import annotations

import re

import libcst as cst

from tensorsight.migrate.context import RuleContext
from tensorsight.migrate.rule import MigrationRule, Need

RULE_ID = "accelerator/unmapped"
DESCRIPTION = "Every other torch.cuda API: reported for review with a guard to add."

_ADVICE = (
    "No device-neutral equivalent is known: run it only on CUDA "
    '(`if _device.type == "cuda":`) or find the backend\'s own API with '
    "`torch.get_device_module(_device)`."
)


_CUDA_VALUE = re.compile(r"cuda(:\d+)?|nccl")
_OTHER_TYPES = {"cpu", "xpu", "npu", "hpu", "mps", "mtia", "xla", "meta"}
_PROFILER = ("torch.profiler.ProfilerActivity.CUDA", "torch.autograd.ProfilerActivity.CUDA")
_STRING_ADVICE = (
    "A CUDA value that no rule could place is left as it was: where it names the device to "
    'run on, use `_device.type` (`f"{_device.type}:N"` for an index, '
    "`torch.distributed.get_default_backend_for_device(_device)` for a backend); where it "
    "means CUDA only, keep it."
)
_PROFILER_ADVICE = (
    "Profiles CUDA kernels only: on another accelerator profile its own activity "
    "(`torch.profiler.ProfilerActivity.XPU`, `PrivateUse1`...) or pass "
    "`torch.profiler.supported_activities()`."
)


class ReportUnmappedCudaRule(MigrationRule):
    """Reports leftover ``torch.cuda`` uses and CUDA values."""

    RULE_ID = RULE_ID
    DESCRIPTION = DESCRIPTION
    TRIGGERS = ("cuda", "nccl", "CUDA")
    TOKENS = (
        Need.api("torch.cuda"),
        Need(strings=("cuda",)),
        Need(strings=("nccl",)),
        Need(names=("ProfilerActivity", "CUDA")),
    )

    def leave_SimpleString(
        self, original: cst.SimpleString, updated: cst.SimpleString, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        value = original.evaluated_value
        if isinstance(value, str) and _CUDA_VALUE.fullmatch(value):
            ctx.report(
                self, original, status="manual", message=_STRING_ADVICE, api=f'"{value}"', weak=True
            )
        return None

    def leave_Dict(
        self, original: cst.Dict, updated: cst.Dict, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        keys = [e.key for e in original.elements if isinstance(e, cst.DictElement)]
        names = {k.evaluated_value for k in keys if isinstance(k, cst.SimpleString)}
        if "cuda" in names and names & _OTHER_TYPES:  # {"cuda": "nccl", "xpu": "ccl"}: per type
            for key in keys:
                ctx.claim(key)
        return None

    def leave_FormattedString(
        self, original: cst.FormattedString, updated: cst.FormattedString, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        first = original.parts[0] if original.parts else None
        if (
            isinstance(first, cst.FormattedStringText)
            and first.value.startswith("cuda:")
            and len(original.parts) > 1
        ):
            api = 'f"cuda:{...}"'
            ctx.report(self, original, status="manual", message=_STRING_ADVICE, api=api, weak=True)
        return None

    def leave_Call(
        self, original: cst.Call, updated: cst.Call, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = ctx.qname(original.func)
        if api is not None and api.startswith("torch.cuda.") and not ctx.is_claimed(original):
            ctx.report(self, original, status="manual", message=_ADVICE, api=api)
        return None

    def leave_Attribute(
        self, original: cst.Attribute, updated: cst.Attribute, ctx: RuleContext
    ) -> cst.BaseExpression | None:
        api = ctx.qname(original)
        if api is not None and api.startswith("torch.cuda.") and not ctx.is_claimed(original):
            ctx.report(self, original, status="manual", message=_ADVICE, api=api, weak=True)
        elif api in _PROFILER and not ctx.is_claimed(original):
            ctx.report(self, original, status="manual", message=_PROFILER_ADVICE, api=api)
        return None
